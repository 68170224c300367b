"""Every public callable of the package is fully annotated, and its hints resolve.

The public API walked here: the methods defined by the package in the classes
of ``fairpca.__all__`` (``__init__``, public methods, classmethods and
properties), and the functions, classes and bound methods listed in the
``__all__`` of the public modules below. Names that a module imports only
under ``if TYPE_CHECKING:`` (pandas, matplotlib, ...) are supplied to
``typing.get_type_hints`` by running that block of the module here.
"""

import ast
import importlib
import inspect
import sys
import typing
from functools import cache

import pytest

PUBLIC_MODULES = (
    "fairpca",
    "fairpca.metrics",
    "fairpca.datasets",
    "fairpca.experiments",
    "fairpca.compare",
    "fairpca.table",
    "fairpca.plotting",
    "fairpca.tradeoff",
    "fairpca.moments",
)

# Bound to the instance or class, hence not annotated.
IMPLICIT_FIRST = ("self", "cls")


def _from_package(func):
    return (getattr(func, "__module__", None) or "").partition(".")[0] == "fairpca"


def _class_members(cls):
    """``(name, function)`` of the callables the package defines in the body of ``cls``."""
    for name, member in vars(cls).items():
        if name.startswith("_") and name not in ("__init__", "__call__"):
            continue
        if isinstance(member, classmethod | staticmethod):
            func = member.__func__
        elif isinstance(member, property):
            func = member.fget
        elif inspect.isfunction(member):
            func = member
        elif inspect.isfunction(getattr(member, "fn", None)):  # sklearn's available_if
            func = member.fn
        else:  # data, or sklearn's generated set_*_request
            continue
        if _from_package(func):
            yield f"{cls.__name__}.{name}", func


def _public_callables():
    found, seen = [], set()

    def add(name, func):
        if id(func) not in seen:
            seen.add(id(func))
            found.append(pytest.param(func, id=name))

    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                if _from_package(obj):
                    for member_name, func in _class_members(obj):
                        add(f"{module_name}.{member_name}", func)
            elif inspect.ismethod(obj):  # e.g. fairpca.experiments.run
                add(f"{module_name}.{name}", obj.__func__)
            elif inspect.isfunction(obj):
                add(f"{module_name}.{name}", obj)
    return found


PUBLIC_CALLABLES = _public_callables()


@cache
def _type_checking_names(module_name):
    """The names bound by the ``if TYPE_CHECKING:`` blocks of a module, imported here."""
    module = sys.modules[module_name]
    tree = ast.parse(inspect.getsource(module))
    namespace = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            body = ast.Module(body=node.body, type_ignores=[])
            exec(compile(body, module.__file__, "exec"), namespace)
    namespace.pop("__builtins__", None)
    return namespace


def test_the_public_api_is_found():
    names = {param.id for param in PUBLIC_CALLABLES}
    assert {
        "fairpca.FairPCABase.fit",
        "fairpca.FairPCABase.partial_fit",
        "fairpca.GroupMoments.from_arrays",
        "fairpca.MinMaxLossFairPCA.__init__",
        "fairpca.all_estimators",
        "fairpca.select",
        "fairpca.metrics.ReconstructionScorer.__call__",
        "fairpca.experiments.Reproductions.run",
        "fairpca.plotting.plot_tradeoff",
    } <= names
    assert len(names) > 100


@pytest.mark.parametrize("func", PUBLIC_CALLABLES)
def test_public_callable_is_fully_annotated(func):
    signature = inspect.signature(func)
    parameters = list(signature.parameters.values())
    if parameters and parameters[0].name in IMPLICIT_FIRST:
        parameters = parameters[1:]
    missing = [
        p.name
        for p in parameters
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.annotation is p.empty
    ]
    assert not missing, f"parameters without annotation: {missing}"
    assert signature.return_annotation is not signature.empty, "no return annotation"


@pytest.mark.parametrize("func", PUBLIC_CALLABLES)
def test_public_callable_hints_resolve(func):
    localns = _type_checking_names(inspect.unwrap(func).__module__)
    hints = typing.get_type_hints(func, localns=localns)
    assert "return" in hints

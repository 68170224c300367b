"""Package-wide settings, and the one rule for a fit called without groups.

A fair estimator fitted without ``sensitive_features`` cannot be fair: it fits
group-blind PCA (or, for :class:`~fairpca.LinearErasure`, erases nothing). By
default that is allowed with a :class:`GroupBlindFitWarning`, so that tools
which call ``fit(X)`` (scikit-learn's checks, a pipeline that forwards no
metadata) still work. It is refused with a ``ValueError`` when

* ``fairpca.set_config(require_groups=True)`` is in force (globally, or inside
  ``with fairpca.config_context(require_groups=True):``), or
* the estimator's ``require_groups`` parameter is ``True``, or
* scikit-learn's metadata routing is enabled and the estimator requested
  ``sensitive_features`` for ``fit`` (``set_fit_request(sensitive_features=True)``):
  a request the router could not satisfy is an error, not a fallback.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from fairpca._warnings import warn

__all__ = [
    "REQUIRE_GROUPS_DOC",
    "GroupBlindFitWarning",
    "check_require_groups",
    "config_context",
    "document_require_groups",
    "get_config",
    "missing_groups",
    "set_config",
]

#: The one description of the ``require_groups`` parameter of every estimator,
#: inserted in their docstrings by :func:`document_require_groups`.
REQUIRE_GROUPS_DOC = """\
require_groups : bool, default=False
    ``True``: ``fit`` (and ``partial_fit``) without ``sensitive_features``
    raises ``ValueError`` and leaves the estimator unchanged. ``False``: the
    package setting decides (:func:`fairpca.set_config`); by default such a
    fit is group-blind, with a :class:`~fairpca.GroupBlindFitWarning` (see
    :ref:`fitting-without-groups`). Kept by ``clone``, so it survives
    meta-estimators that forward no ``sensitive_features``."""

_DOC_MARKER = "%(require_groups)s"

_DEFAULTS = {"require_groups": False}
_local = threading.local()


class GroupBlindFitWarning(UserWarning):
    """A fair estimator was fitted without ``sensitive_features``: the fit is group-blind."""


def _settings():
    if not hasattr(_local, "settings"):
        _local.settings = dict(_DEFAULTS)
    return _local.settings


def get_config() -> dict[str, bool]:
    """The current fairpca settings.

    Returns
    -------
    config : dict
        ``{"require_groups": bool}``; see :func:`set_config`.
    """
    return dict(_settings())


def set_config(require_groups: bool | None = None) -> None:
    """Set fairpca's settings for the current thread.

    Parameters
    ----------
    require_groups : bool, default=None
        ``True``: a fit of any fairpca estimator without ``sensitive_features``
        raises ``ValueError`` instead of fitting group-blind PCA with a
        :class:`GroupBlindFitWarning`. ``None`` leaves the setting unchanged.
    """
    if require_groups is not None:
        if not isinstance(require_groups, bool):
            raise TypeError(f"require_groups must be True or False, got {require_groups!r}.")
        _settings()["require_groups"] = require_groups


@contextmanager
def config_context(*, require_groups: bool | None = None) -> Iterator[None]:
    """Context manager: :func:`set_config` inside the block, restored after it.

    Examples
    --------
    >>> import fairpca
    >>> with fairpca.config_context(require_groups=True):
    ...     fairpca.get_config()["require_groups"]
    True
    """
    old = get_config()
    set_config(require_groups=require_groups)
    try:
        yield
    finally:
        set_config(**old)


def document_require_groups(cls):
    """Class decorator: :data:`REQUIRE_GROUPS_DOC` replaces the ``%(require_groups)s`` line.

    The marker stands alone on its line, indented as the other parameters.
    """
    doc = cls.__doc__
    if doc and _DOC_MARKER in doc:
        lines = []
        for line in doc.splitlines():
            if line.strip() == _DOC_MARKER:
                indent = line[: len(line) - len(line.lstrip())]
                lines.extend(
                    indent + text if text else text for text in REQUIRE_GROUPS_DOC.splitlines()
                )
            else:
                lines.append(line)
        cls.__doc__ = "\n".join(lines) + ("\n" if doc.endswith("\n") else "")
    return cls


def check_require_groups(estimator):
    """Refuse a ``require_groups`` parameter that is not a bool (before any data is read)."""
    value = getattr(estimator, "require_groups", False)
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"require_groups must be True or False, got {value!r}.")


def _routing_requested(estimator, method="fit"):
    """Whether metadata routing is on and ``estimator`` requested groups for ``method``."""
    import sklearn

    if not sklearn.get_config().get("enable_metadata_routing", False):
        return False
    try:
        requests = getattr(estimator._get_metadata_request(), method).requests
    except AttributeError:
        return False
    request = requests.get("sensitive_features")
    return request is True or isinstance(request, str)


def missing_groups(estimator, fallback, method="fit"):
    """Apply the package's rule to a fit called without ``sensitive_features``.

    Parameters
    ----------
    estimator : estimator
        The fairpca estimator being fitted.
    fallback : str
        What it fits instead, for the warning (e.g. ``"group-blind PCA"``).
        The warning is attributed to the caller's line outside fairpca.
    method : str, default="fit"
        The method called (``"fit"``, ``"partial_fit"``), for the messages.

    Raises
    ------
    ValueError
        If groups are required (see the module docstring); the estimator is
        not changed.

    Warns
    -----
    GroupBlindFitWarning
        Otherwise.
    """
    name = type(estimator).__name__
    reasons = []
    if get_config()["require_groups"]:
        reasons.append("fairpca.set_config(require_groups=True) is in force")
    if bool(getattr(estimator, "require_groups", False)):
        reasons.append(f"{name}(require_groups=True)")
    if _routing_requested(estimator, method):
        reasons.append(f"metadata routing is enabled and {method} requested sensitive_features")
    if reasons:
        raise ValueError(
            f"{name}.{method} was called without sensitive_features, and groups are required ("
            + "; ".join(reasons)
            + "). Pass sensitive_features=... (in a Pipeline without routing: "
            "<step name>__sensitive_features=...)."
        )
    warn(
        f"{name}.{method} was called without sensitive_features; fitting {fallback}, which is "
        "not fair. Pass sensitive_features=... to fit the fair method, or set "
        "fairpca.set_config(require_groups=True) to make this an error.",
        GroupBlindFitWarning,
    )

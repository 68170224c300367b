"""The estimator classes of the package and what each can do, importable below its face.

:func:`all_estimators` and :func:`estimator_capabilities` are re-exported by
``fairpca``; the workflow modules (``compare``, ``experiments``) import them and
the classes from here, so that none of them imports the package ``fairpca``
itself (which imports ``tradeoff``, which imports ``compare``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect

from fairpca.convex import ConvexFairPCA
from fairpca.erasure import LinearErasure
from fairpca.fair_pls import FairPLS
from fairpca.kernel_pca import FairKernelPCA
from fairpca.mean_matching import MeanMatchingFairPCA
from fairpca.minmax_loss import MinMaxLossFairPCA
from fairpca.mmd import MMDFairPCA
from fairpca.pareto import ParetoFairPCA
from fairpca.quadratic_erasure import QuadraticErasure
from fairpca.robust import RobustFairPCA
from fairpca.sparse_pca import FairSparsePCA
from fairpca.streaming import StreamingFairPCA

__all__ = ["ESTIMATORS", "Capabilities", "all_estimators", "estimator_capabilities"]

#: Every estimator class of the package by name, in the order of ``fairpca.__all__``.
ESTIMATORS = {
    cls.__name__: cls
    for cls in (
        ConvexFairPCA,
        FairKernelPCA,
        FairPLS,
        FairSparsePCA,
        LinearErasure,
        MMDFairPCA,
        MeanMatchingFairPCA,
        MinMaxLossFairPCA,
        ParetoFairPCA,
        QuadraticErasure,
        RobustFairPCA,
        StreamingFairPCA,
    )
}


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What one estimator class can do (a row of :func:`estimator_capabilities`).

    Attributes
    ----------
    name : str
        The class name.
    fair : bool
        Fits a fair method when given ``sensitive_features`` (every estimator
        of the package; without them each fits its group-blind answer or
        refuses, see ``require_groups``).
    linear_projection : bool
        A linear projection onto ``n_components_`` directions: ``components_``,
        ``transform`` ``(X - mean_) V^T`` and a rank-``d`` ``inverse_transform``.
        Not :class:`~fairpca.LinearErasure` nor :class:`~fairpca.QuadraticErasure`
        (they keep every feature) nor :class:`~fairpca.FairKernelPCA` (not
        linear in ``X``).
    partial_fit : bool
        Has ``partial_fit`` (chunks streamed through the group moments, or the
        noisy power method).
    dask : bool
        ``fit`` accepts Dask arrays and DataFrames.
    sparse : bool
        ``fit`` and ``transform`` accept scipy.sparse ``X`` (its scikit-learn
        tag ``input_tags.sparse``).
    sample_weight : bool
        ``fit`` with ``sensitive_features`` takes ``sample_weight`` (frequency
        weights of the rows' moments; not MMDFairPCA, whose fair fit reads
        the rows themselves).
    transform_needs_groups : bool
        After a fit with ``sensitive_features``, ``transform`` needs them too
        (``transform(X, sensitive_features=s)``: one map per group, as
        :class:`~fairpca.QuadraticErasure`); ``transform(X)`` alone raises.
        Workflows that transform rows without their groups (``fairpca
        compare``) leave these out.
    array_api : bool
        ``fit``, ``partial_fit`` and ``transform`` accept array-API arrays
        (torch, CuPy, array-api-strict) under scikit-learn's
        ``array_api_dispatch=True`` and compute in their namespace, on their
        device (its scikit-learn tag ``array_api_support``).
    supervised : bool
        ``fit`` needs the target ``y`` (its scikit-learn tag
        ``target_tags.required``): :class:`~fairpca.FairPLS`. Workflows list it
        only when a target is given (``fairpca compare --target``).
    """

    name: str
    fair: bool
    linear_projection: bool
    partial_fit: bool
    dask: bool
    sparse: bool
    sample_weight: bool
    transform_needs_groups: bool
    array_api: bool
    supervised: bool


@functools.cache
def _capabilities(cls):
    return Capabilities(
        name=cls.__name__,
        fair=True,
        linear_projection=cls._linear_projection,
        partial_fit=cls._supports_partial_fit,
        dask=cls._supports_dask,
        sparse=cls._supports_sparse,
        sample_weight=cls._supports_sample_weight,
        transform_needs_groups=cls._transform_needs_groups,
        array_api=cls._supports_array_api,
        supervised=getattr(cls, "_supervised", False),
    )


def estimator_capabilities(
    estimator: str | type | object | None = None,
) -> Capabilities | dict[str, Capabilities]:
    """What each estimator of the package can do.

    Parameters
    ----------
    estimator : str, class or estimator, default=None
        One estimator (its name, class or an instance); ``None`` for all.

    Returns
    -------
    capabilities : Capabilities or dict of str to Capabilities
        A frozen record (fields ``name``, ``fair``, ``linear_projection``,
        ``partial_fit``, ``dask``, ``sparse``, ``sample_weight``,
        ``transform_needs_groups``, ``array_api``, ``supervised``) for one
        estimator; for all, a dict from class name to record in the order of
        :func:`all_estimators`.

    Examples
    --------
    >>> import fairpca
    >>> fairpca.estimator_capabilities("LinearErasure").linear_projection
    False
    >>> [name for name, c in fairpca.estimator_capabilities().items() if not c.partial_fit]
    ['FairKernelPCA', 'MMDFairPCA']
    """
    if estimator is None:
        return {name: _capabilities(cls) for name, cls in ESTIMATORS.items()}
    name = estimator if isinstance(estimator, str) else getattr(estimator, "__name__", None)
    if name is None:
        name = type(estimator).__name__
    if name not in ESTIMATORS:
        raise ValueError(f"unknown estimator {name!r}; choose from {', '.join(ESTIMATORS)}.")
    return _capabilities(ESTIMATORS[name])


def all_estimators(**capabilities: bool) -> list[type]:
    """The public estimator classes of the package, optionally those with given capabilities.

    Parameters
    ----------
    **capabilities : bool
        Fields of :class:`Capabilities` (``linear_projection``, ``partial_fit``,
        ``dask``, ``sparse``, ``sample_weight``, ``transform_needs_groups``,
        ``fair``, ``supervised``) and the value each
        listed class must have, e.g. ``all_estimators(linear_projection=True)``
        for the fair projections with ``components_``.

    Returns
    -------
    classes : list of type
        The twelve estimator classes (those with the capabilities asked for), in
        the order of ``fairpca.__all__``.

    Examples
    --------
    >>> import fairpca
    >>> len(fairpca.all_estimators())
    12
    >>> [cls.__name__ for cls in fairpca.all_estimators(linear_projection=False)]
    ['FairKernelPCA', 'LinearErasure', 'QuadraticErasure']
    >>> [cls.__name__ for cls in fairpca.all_estimators(transform_needs_groups=True)]
    ['QuadraticErasure']
    """
    fields = {f.name for f in dataclasses.fields(Capabilities)} - {"name"}
    unknown = sorted(set(capabilities) - fields)
    if unknown:
        raise TypeError(f"unknown capabilities {unknown}; choose from {sorted(fields)}.")
    return [
        cls
        for cls in ESTIMATORS.values()
        if not inspect.isabstract(cls)
        and all(getattr(_capabilities(cls), k) == v for k, v in capabilities.items())
    ]

"""The estimator classes of the package, importable below its face.

:func:`all_estimators` is re-exported as ``fairpca.all_estimators``; the
workflow modules (``compare``, ``experiments``) import it and the classes from
here, so that none of them imports the package ``fairpca`` itself (which
imports ``tradeoff``, which imports ``compare``).
"""

from __future__ import annotations

import inspect

from fairpca._base import FairPCABase
from fairpca.convex import ConvexFairPCA
from fairpca.erasure import LinearErasure
from fairpca.kernel_pca import FairKernelPCA
from fairpca.mean_matching import MeanMatchingFairPCA
from fairpca.minmax_loss import MinMaxLossFairPCA
from fairpca.mmd import MMDFairPCA
from fairpca.pareto import ParetoFairPCA
from fairpca.robust import RobustFairPCA
from fairpca.streaming import StreamingFairPCA

__all__ = ["ESTIMATORS", "all_estimators"]

#: Every estimator class of the package by name, in the order of ``fairpca.__all__``.
ESTIMATORS = {
    cls.__name__: cls
    for cls in (
        ConvexFairPCA,
        FairKernelPCA,
        LinearErasure,
        MMDFairPCA,
        MeanMatchingFairPCA,
        MinMaxLossFairPCA,
        ParetoFairPCA,
        RobustFairPCA,
        StreamingFairPCA,
    )
}


def all_estimators() -> list[type[FairPCABase]]:
    """The concrete fair-PCA estimator classes of the package.

    Returns
    -------
    classes : list of type
        Every exported subclass of :class:`FairPCABase` that can be
        instantiated, in the order of ``fairpca.__all__``.
    """
    return [
        cls
        for cls in ESTIMATORS.values()
        if issubclass(cls, FairPCABase) and not inspect.isabstract(cls)
    ]

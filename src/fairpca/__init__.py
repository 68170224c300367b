"""fairpca: fair principal component analysis with a scikit-learn API.

Importing this package loads only numpy, scipy and scikit-learn; optional
dependencies (cvxpy, dask, pandas, matplotlib, click, fairlearn) are imported
by the functions that need them.
"""

from __future__ import annotations

from fairpca._base import FairPCABase
from fairpca.convex import ConvexFairPCA
from fairpca.erasure import LinearErasure
from fairpca.kernel_pca import FairKernelPCA
from fairpca.mean_matching import MeanMatchingFairPCA
from fairpca.minmax_loss import MinMaxLossFairPCA
from fairpca.mmd import MMDFairPCA
from fairpca.moments import GroupMoments
from fairpca.pareto import ParetoFairPCA
from fairpca.robust import RobustFairPCA
from fairpca.streaming import StreamingFairPCA
from fairpca.tradeoff import select, tradeoff_curve

__version__ = "0.1.0.dev0"


def all_estimators() -> list[type[FairPCABase]]:
    """The concrete fair-PCA estimator classes of the package.

    Returns
    -------
    classes : list of type
        Every exported subclass of :class:`FairPCABase` that can be
        instantiated, in the order of ``fairpca.__all__``.
    """
    import inspect

    return [
        obj
        for name in __all__
        if inspect.isclass(obj := globals().get(name))
        and issubclass(obj, FairPCABase)
        and not inspect.isabstract(obj)
    ]


__all__ = [
    "ConvexFairPCA",
    "FairKernelPCA",
    "FairPCABase",
    "GroupMoments",
    "LinearErasure",
    "MMDFairPCA",
    "MeanMatchingFairPCA",
    "MinMaxLossFairPCA",
    "ParetoFairPCA",
    "RobustFairPCA",
    "StreamingFairPCA",
    "__version__",
    "all_estimators",
    "select",
    "tradeoff_curve",
]

"""fairpca: fair principal component analysis with a scikit-learn API.

Importing this package loads only numpy, scipy and scikit-learn; optional
dependencies (cvxpy, dask, pandas, matplotlib, click, fairlearn) are imported
by the functions that need them.
"""

from __future__ import annotations

from fairpca._base import FairPCABase
from fairpca._config import GroupBlindFitWarning, config_context, get_config, set_config
from fairpca._registry import all_estimators, estimator_capabilities
from fairpca.convex import ConvexFairPCA
from fairpca.erasure import LinearErasure
from fairpca.fair_pls import FairPLS
from fairpca.kernel_pca import FairKernelPCA
from fairpca.mean_matching import MeanMatchingFairPCA
from fairpca.minmax_loss import MinMaxLossFairPCA
from fairpca.mmd import MMDFairPCA
from fairpca.moments import GroupMoments
from fairpca.pareto import ParetoFairPCA
from fairpca.quadratic_erasure import QuadraticErasure
from fairpca.robust import RobustFairPCA
from fairpca.sparse_pca import FairSparsePCA
from fairpca.streaming import StreamingFairPCA
from fairpca.tradeoff import select, tradeoff_curve

__version__ = "0.1.0.dev0"


__all__ = [
    "ConvexFairPCA",
    "FairKernelPCA",
    "FairPLS",
    "FairPCABase",
    "FairSparsePCA",
    "GroupBlindFitWarning",
    "GroupMoments",
    "LinearErasure",
    "MMDFairPCA",
    "MeanMatchingFairPCA",
    "MinMaxLossFairPCA",
    "ParetoFairPCA",
    "QuadraticErasure",
    "RobustFairPCA",
    "StreamingFairPCA",
    "__version__",
    "all_estimators",
    "config_context",
    "estimator_capabilities",
    "get_config",
    "select",
    "set_config",
    "tradeoff_curve",
]

"""fairpca: fair principal component analysis with a scikit-learn API.

Importing this package loads only numpy, scipy and scikit-learn; optional
dependencies (cvxpy, dask, pandas, matplotlib, click, fairlearn) are imported
by the functions that need them.
"""

from fairpca._base import FairPCABase
from fairpca.convex import ConvexFairPCA
from fairpca.minmax_loss import MinMaxLossFairPCA
from fairpca.mmd import MMDFairPCA
from fairpca.moments import GroupMoments
from fairpca.pareto import ParetoFairPCA
from fairpca.robust import RobustFairPCA

__version__ = "0.1.0.dev0"

__all__ = [
    "ConvexFairPCA",
    "FairPCABase",
    "GroupMoments",
    "MMDFairPCA",
    "MinMaxLossFairPCA",
    "ParetoFairPCA",
    "RobustFairPCA",
    "__version__",
]

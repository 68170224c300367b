"""Metrics for auditing a (fair) PCA projection.

Every representation metric takes ``projection``, which may be

* a fitted fair-PCA estimator of this package (``components_`` of shape
  ``(r, p)`` with orthonormal rows, ``mean_`` of shape ``(p,)``, optional
  ``component_scales_`` of shape ``(r,)`` in ``(0, 1]`` and the
  hyper-parameter ``n_components``);
* a fitted :class:`sklearn.decomposition.PCA` (scales of one);
* an array of shape ``(n_components, n_features)`` with orthonormal rows, in
  which case the data passed to the metric are centred on their own pooled
  mean.

With ``U = components_`` and ``s = component_scales_`` the representation is
``Z = ((X - mean) @ U.T) * sqrt(s)`` and the reconstruction is
``X_hat = (Z * sqrt(s)) @ U + mean``, i.e. ``X_hat - mean = (X - mean) P``
with ``P = U.T @ diag(s) @ U``. When every scale is one, ``P`` is the
orthogonal projector onto the span of the components.

Per-group results are returned as dictionaries ``{group label: value}`` in
the sorted order of the labels. :class:`ReconstructionScorer` turns ARE and
ABDiff into a scikit-learn scorer for model selection.

The private modules, by concept: ``_projection`` (resolving ``projection`` and
shared helpers), ``_reconstruction`` (reconstruction-based metrics), ``_mmd``,
``_classifier`` (group separability, downstream fairness, the held-out
downstream classifier), ``_registry`` (every reported metric: its function,
definition, direction, scale and needs), ``_report`` and ``_scorer``.

References
----------
.. [Samadi2018] S. Samadi, U. Tantipongpipat, J. Morgenstern, M. Singh and
   S. Vempala. "The Price of Fair PCA: One Extra Dimension." NeurIPS 2018.
.. [Olfat2019] M. Olfat and A. Aswani. "Convex Formulations for Fair
   Principal Component Analysis." AAAI 2019.
.. [Kamani] M. M. Kamani, F. Haddadpour, R. Forsati and M. Mahdavi.
   "Efficient Fair Principal Component Analysis." arXiv:1911.04931.
.. [Lee2022] J. Lee, G. Kim, M. Olfat, M. Hasegawa-Johnson and C. D. Yoo.
   "Fast and Efficient MMD-based Fair PCA via Optimization over Stiefel
   Manifold." AAAI 2022.
.. [Vu2022] H. Vu, T. Tran, M.-C. Yue and V. A. Nguyen. "Distributionally
   Robust Fair Principal Components via Geodesic Descents." ICLR 2022.
.. [Rahimi2007] A. Rahimi and B. Recht. "Random Features for Large-Scale
   Kernel Machines." NeurIPS 2007.
.. [Avron2016] H. Avron, V. Sindhwani, J. Yang and M. W. Mahoney.
   "Quasi-Monte Carlo Feature Maps for Shift-Invariant Kernels." JMLR 17, 2016.
"""

from fairpca.metrics._classifier import downstream_fairness, group_separability
from fairpca.metrics._mmd import mmd2, mmd_bandwidth
from fairpca.metrics._reconstruction import (
    communality,
    disparity_error,
    explained_variance_ratio,
    group_reconstruction_error,
    marginal_loss,
    pairwise_disparity_error,
    reconstruction_error,
    reconstruction_error_gap,
)
from fairpca.metrics._registry import describe_metric, metric_family
from fairpca.metrics._report import METRIC_DEFINITIONS, report
from fairpca.metrics._scorer import ReconstructionScorer

__all__ = [
    "METRIC_DEFINITIONS",
    "ReconstructionScorer",
    "communality",
    "describe_metric",
    "disparity_error",
    "downstream_fairness",
    "explained_variance_ratio",
    "group_reconstruction_error",
    "group_separability",
    "marginal_loss",
    "metric_family",
    "mmd2",
    "mmd_bandwidth",
    "pairwise_disparity_error",
    "reconstruction_error",
    "reconstruction_error_gap",
    "report",
]

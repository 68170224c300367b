"""Optimisation on the Stiefel manifold: geometry, Riemannian L-BFGS and trust regions.

``geometry`` (tangent projection, retractions, random points, subspace distance,
for one point and for a batch), ``lbfgs`` (Riemannian L-BFGS), ``trust_region``
(Riemannian trust regions with Steihaug-Toint CG and a dense preconditioner)
and ``line_search`` (Armijo back-tracking). References: Absil, Mahony &
Sepulchre, *Optimization Algorithms on Matrix Manifolds*, 2008; Huang,
Gallivan & Absil, SIAM J. Optim. 25(3), 2015; Absil, Baker & Gallivan, Found.
Comput. Math. 7, 2007.
"""

from fairpca.riemannian._common import StiefelResult
from fairpca.riemannian.geometry import (
    ORTHONORMALITY_ATOL,
    random_point,
    retract_polar,
    retract_qr,
    subspace_distance,
    tangent_projection,
)
from fairpca.riemannian.lbfgs import minimize_lbfgs
from fairpca.riemannian.trust_region import minimize_trust_region

__all__ = [
    "ORTHONORMALITY_ATOL",
    "StiefelResult",
    "minimize_lbfgs",
    "minimize_trust_region",
    "random_point",
    "retract_polar",
    "retract_qr",
    "subspace_distance",
    "tangent_projection",
]

"""Record every estimator's fitted projection on fixed problems (the refactoring anchor).

Run once, on the code before a refactoring, to write ``projections.npz`` beside
this file; ``test_recorded_projections.py`` then checks that the current code
gives the same projection matrices to 1e-10. Re-record only for an intended
change of results, and say so in the commit message.

    python tests/regression/record_projections.py
"""

from pathlib import Path

import numpy as np

from fairpca import ConvexFairPCA, MinMaxLossFairPCA, MMDFairPCA, ParetoFairPCA, RobustFairPCA
from fairpca.datasets import make_gaussian_groups, make_mmd_synthetic1

OUT = Path(__file__).with_name("projections.npz")


def problems():
    """Fixed, small problems: name -> (X, s)."""
    X2, s2 = make_gaussian_groups(n_samples=300, n_features=6, random_state=0)
    X3, s3 = make_gaussian_groups(n_samples=360, n_features=8, n_groups=3, random_state=1)
    X1, s1 = make_mmd_synthetic1(n_per_group=60, random_state=2)
    return {"two_groups": (X2, s2), "three_groups": (X3, s3), "mmd_synthetic1": (X1, s1)}


def estimators():
    """Every method at fixed settings small enough for a quick test: name -> estimator."""
    return {
        # Samadi et al.'s rounding, the default when recorded (the default is now rank d).
        "MinMaxLossFairPCA": MinMaxLossFairPCA(n_components=2, rounding="lp"),
        # SCS was the default when recorded (ADMM, the default since, is checked against
        # these entries at its own tolerance in test_recorded_projections.py).
        "ConvexFairPCA": ConvexFairPCA(n_components=2, solver="SCS"),
        # Pairwise constraints, the only form when recorded (the default is now one-vs-rest,
        # the same problem for two groups).
        "MMDFairPCA": MMDFairPCA(
            n_components=2, constraint="pairwise", random_state=0, max_iter=20
        ),
        "RobustFairPCA": RobustFairPCA(n_components=2, n_iter=100, n_restarts=2, random_state=0),
        "ParetoFairPCA": ParetoFairPCA(n_components=2, max_iter=200),
    }


def projection(est):
    """The fitted map as a (p, p) matrix ``C^T diag(scales) C`` (sign and order free)."""
    C = est.components_
    scales = getattr(est, "component_scales_", np.ones(C.shape[0]))
    return (C.T * scales) @ C


def key(problem, method):
    return f"{problem}__{method}"


def record():
    import warnings

    arrays = {}
    for pname, (X, s) in problems().items():
        for mname, est in estimators().items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, sensitive_features=s)
            arrays[key(pname, mname)] = projection(est)
            arrays[key(pname, mname) + "__mean"] = est.mean_
    np.savez_compressed(OUT, **arrays)
    return arrays


if __name__ == "__main__":
    for name, value in record().items():
        print(name, value.shape)

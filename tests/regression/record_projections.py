"""Record every estimator's fitted projection and answer on fixed problems (the regression anchor).

Writes two files beside this one:

- ``projections.npz``: each fit's projection matrix ``C^T diag(scales) C`` and mean. These
  are one machine's floating-point results: ``test_recorded_projections.py`` compares them
  to 1e-10 only as a check of *identical code paths*, and only on the platform recorded in
- ``recording.json``: that platform (machine, BLAS library, its kernels and thread count,
  the versions of Python and the numerical libraries), the commit recorded, and each fit's
  *answer* at the level its solver guarantees (certified optimal-value intervals for the
  convex problems, values at fixed starts for the non-convex ones). The answer-level checks
  run on every machine.

Re-record only for an intended change of results or to move the identical-path check to
another platform, and say which in the commit message:

    python tests/regression/record_projections.py
"""

import json
import platform
import subprocess
import warnings
from pathlib import Path

import numpy as np

from fairpca import ConvexFairPCA, MinMaxLossFairPCA, MMDFairPCA, ParetoFairPCA, RobustFairPCA
from fairpca.datasets import make_gaussian_groups, make_mmd_synthetic1

OUT = Path(__file__).with_name("projections.npz")
RECORDING = Path(__file__).with_name("recording.json")


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
        # Disparity errors summed over rows, the only form when recorded (the default is
        # now per row).
        "ParetoFairPCA": ParetoFairPCA(n_components=2, max_iter=200, group_loss="summed"),
    }


def projection(est):
    """The fitted map as a (p, p) matrix ``C^T diag(scales) C`` (sign and order free)."""
    C = est.components_
    scales = getattr(est, "component_scales_", np.ones(C.shape[0]))
    return (C.T * scales) @ C


def key(problem, method):
    return f"{problem}__{method}"


def fingerprint():
    """What floating-point results depend on besides the code: platform, BLAS, versions."""
    import importlib
    from importlib.metadata import PackageNotFoundError, version

    from threadpoolctl import threadpool_info

    # Load every library that brings its own BLAS, so that the list does not depend on
    # which fits ran before.
    for module in ("scipy.linalg", "scs", "clarabel", "cvxpy"):
        try:
            importlib.import_module(module)
        except ImportError:
            pass

    versions = {}
    for package in ("numpy", "scipy", "scikit-learn", "cvxpy", "scs", "clarabel"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    blas = sorted(
        (
            f"{info.get('internal_api')} {info.get('version')} "
            f"{info.get('architecture')} threads={info.get('num_threads')}"
        )
        for info in threadpool_info()
        if info.get("user_api") == "blas"
    )
    return {
        "machine": platform.machine(),
        "system": platform.system(),
        "python": platform.python_version(),
        "versions": versions,
        "blas": blas,
    }


def answers(X, s, method):
    """The fit's answer at the level its solver guarantees (see test_recorded_projections.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "MinMaxLossFairPCA":
            # The relaxation's optimum, certified: between the dual value g(w) and the
            # primal value of the fractional solution.
            est = MinMaxLossFairPCA(n_components=2, rounding="lp", tol=1e-10, max_iter=1000)
            est.fit(X, sensitive_features=s)
            assert est.converged_
            return {
                "optimum": [float(est.relaxed_objective_ - est.gap_), float(est.relaxed_objective_)]
            }
        if method == "ConvexFairPCA":
            # The SDP's optimum, certified by the ADMM solver's duality gap.
            est = ConvexFairPCA(n_components=2, tol=1e-9, max_iter=100_000)
            est.fit(X, sensitive_features=s)
            assert est.converged_
            return {"optimum": [float(est.objective_), float(est.objective_ + est.duality_gap_)]}
        est = estimators()[method].fit(X, sensitive_features=s)
        if method == "RobustFairPCA":
            return {"objective": float(est.objective_)}
        if method == "ParetoFairPCA":
            return {
                "converged": bool(est.converged_),
                "objectives": [float(v) for v in est.history_["objectives"][-1]],
            }
        return {"converged": bool(est.converged_)}


def _commit():
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def record():
    arrays, recorded = {}, {}
    for pname, (X, s) in problems().items():
        for mname, est in estimators().items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, sensitive_features=s)
            arrays[key(pname, mname)] = projection(est)
            arrays[key(pname, mname) + "__mean"] = est.mean_
            recorded[key(pname, mname)] = answers(X, s, mname)
    np.savez_compressed(OUT, **arrays)
    document = {"commit": _commit(), "platform": fingerprint(), "answers": recorded}
    RECORDING.write_text(json.dumps(document, indent=2, default=float) + "\n")
    return arrays


if __name__ == "__main__":
    for name, value in record().items():
        print(name, value.shape)
    print("platform and answers:", RECORDING)

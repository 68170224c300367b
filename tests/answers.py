"""Compare two fits of one problem at the level their solver guarantees (issue 39).

Two fits whose inputs agree up to rounding (sparse and dense X, integer weights and
repeated rows, another BLAS) follow paths that differ by rounding; an iterative solver
amplifies that up to where its stopping rule leaves the answer. So the fits are compared
on what each method guarantees, never at one machine's rounding:

- direct methods (eigendecompositions, closed forms): the projection, to ``direct_tol``;
- ``MinMaxLossFairPCA``: the relaxation's optimum -- both certified intervals
  ``[relaxed_objective_ - gap_, relaxed_objective_]`` contain it, so they must meet;
- ``ConvexFairPCA``: the SDP's optimum -- ADMM's certified intervals
  ``[objective_, objective_ + duality_gap_]`` meet; SCS/Clarabel objectives within
  ``10 tol (1 + |objective|)`` (their stopping rule bounds the primal-dual gap by about
  ``tol (1 + |objective|)``; the factor allows for the feasibility residuals);
- ``MMDFairPCA``: both converged (REPMS's rule) and the subspaces within ``10 d_min``
  (``d_min = 1e-6``, the step ``||V_k+1 - V_k||_F`` at which REPMS stops);
- ``RobustFairPCA``, ``ParetoFairPCA`` (non-convex, no certificate): the values reached
  from the same fixed starts, to ``NONCONVEX_RTOL`` relative.
"""

import numpy as np

#: REPMS's stopping step d_min (fairpca.mmd._STEP_MIN) times ten.
MMD_SUBSPACE_TOL = 10 * 1e-6

#: Values of non-convex methods from fixed starts (no certificate).
NONCONVEX_RTOL = 1e-6


def projection(est):
    """The fitted map as a (p, p) matrix ``C^T diag(scales) C`` (sign and order free)."""
    C = est.components_
    scales = getattr(est, "component_scales_", None)
    scales = np.ones(C.shape[0]) if scales is None else scales
    return (C.T * scales) @ C


def intervals_meet(a, b):
    """Whether two certified intervals of one optimal value overlap (up to rounding)."""
    slack = 1e-12 * max(1.0, abs(a[0]), abs(b[0]))
    return a[0] <= b[1] + slack and b[0] <= a[1] + slack


def assert_same_answer(a, b, direct_tol=1e-10):
    """Assert that fits ``a`` and ``b`` of one problem give the same answer (see above)."""
    name = type(a).__name__
    assert type(b).__name__ == name
    if name == "MinMaxLossFairPCA":
        assert a.converged_ and b.converged_
        if a.relaxed_objective_ is None:  # nested: each prefix certified on its own
            np.testing.assert_allclose(a.prefix_objectives_, b.prefix_objectives_, rtol=a.tol)
            return
        assert intervals_meet(
            (a.relaxed_objective_ - a.gap_, a.relaxed_objective_),
            (b.relaxed_objective_ - b.gap_, b.relaxed_objective_),
        ), (a.relaxed_objective_, a.gap_, b.relaxed_objective_, b.gap_)
    elif name == "ConvexFairPCA":
        assert a.converged_ and b.converged_
        if a.duality_gap_ is not None and b.duality_gap_ is not None:
            assert intervals_meet(
                (a.objective_, a.objective_ + a.duality_gap_),
                (b.objective_, b.objective_ + b.duality_gap_),
            ), (a.objective_, a.duality_gap_, b.objective_, b.duality_gap_)
        else:
            allowance = 10 * max(a.tol, b.tol) * (1 + abs(a.objective_))
            assert abs(a.objective_ - b.objective_) <= allowance
    elif name == "MMDFairPCA":
        assert a.converged_ and b.converged_
        assert np.abs(projection(a) - projection(b)).max() <= MMD_SUBSPACE_TOL
    elif name == "RobustFairPCA":
        assert np.isclose(a.objective_, b.objective_, rtol=NONCONVEX_RTOL, atol=0), (
            a.objective_,
            b.objective_,
        )
    elif name == "ParetoFairPCA":
        assert a.converged_ == b.converged_
        np.testing.assert_allclose(
            a.history_["objectives"][-1], b.history_["objectives"][-1], rtol=NONCONVEX_RTOL
        )
    else:
        scale = max(np.abs(projection(a)).max(), 1e-300)
        assert np.abs(projection(a) - projection(b)).max() / scale < direct_tol

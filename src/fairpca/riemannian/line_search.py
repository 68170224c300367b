"""Armijo back-tracking: the one step-halving loop of the descent methods.

The step ``t`` is halved from a first trial until a sufficient-decrease test
holds (Armijo, Pacific J. Math. 16, 1966; along a retraction: Absil, Mahony &
Sepulchre, *Optimization Algorithms on Matrix Manifolds*, 2008, section 4.2).
Used by :func:`fairpca.riemannian.minimize_lbfgs` and by the Pareto descent of
:mod:`fairpca.pareto`.
"""

__all__ = ["backtrack"]


def backtrack(evaluate, sufficient, first=1.0, max_halvings=40):
    """Halve ``t`` from ``first`` until ``sufficient(t, evaluate(t))`` holds.

    Parameters
    ----------
    evaluate : callable
        ``t -> trial``: the trial point (and whatever the test needs) at step ``t``.
    sufficient : callable
        ``(t, trial) -> bool``: the sufficient-decrease test. A non-finite value
        should fail it, so that such trials are backed off.
    first : float, default=1.0
        First step tried.
    max_halvings : int, default=40
        Most halvings (``max_halvings + 1`` trials in all).

    Returns
    -------
    step : (float, object) or None
        The accepted ``t`` and its trial, or None when every trial failed.
    """
    t = first
    for _ in range(max_halvings + 1):
        trial = evaluate(t)
        if sufficient(t, trial):
            return t, trial
        t *= 0.5
    return None

"""The methods a comparison fits, and their refits at other target dimensions.

:func:`make_methods` lists PCA and every estimator of the registry at its
defaults; :func:`fit_all` fits them on a split (:func:`fairpca._fitting.fit_methods`);
:func:`group_errors_by_d` refits them at other d for the per-group error
against d. Below :mod:`fairpca.compare` (which re-exports :func:`make_methods`),
:mod:`fairpca.tradeoff` and :mod:`fairpca._reports`, so that none of them
imports another to reach these. Module globals (:data:`REFIT_SECONDS`,
``all_estimators``) are read at call time, so that a test may replace one.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from fairpca._fitting import fit_methods
from fairpca._registry import all_estimators
from fairpca.metrics import group_reconstruction_error
from fairpca.metrics._projection import is_linear_projection

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator

__all__ = [
    "MAX_D_VALUES",
    "REFIT_LABEL",
    "REFIT_SECONDS",
    "fit_all",
    "group_errors_by_d",
    "make_methods",
]


def make_methods(
    n_components: int,
    random_state: int,
    *,
    projections_only: bool = False,
    names: Collection[str] | None = None,
    supervised: bool = False,
) -> dict[str, BaseEstimator]:
    """Every method to compare at its default hyper-parameters, keyed by display name.

    Group-blind :class:`sklearn.decomposition.PCA` comes first as the
    reference, then the linear projections of :func:`fairpca.all_estimators`
    (with :class:`~fairpca.StreamingFairPCA`, the only one that fits data too
    wide for dense ``p x p`` moments; the others then refuse, naming it), then
    the fair transformers that are not (:class:`~fairpca.FairKernelPCA`,
    :class:`~fairpca.LinearErasure`; left out with ``projections_only``: they
    have no rank-``d`` reconstruction, and LinearErasure keeps every feature
    and has no ``n_components``). Estimators whose ``transform`` needs the
    groups (``transform_needs_groups``: :class:`~fairpca.QuadraticErasure`)
    are never listed: a comparison transforms the test rows without them.
    The estimators that need a target (``supervised``: :class:`~fairpca.FairPLS`)
    are listed only with ``supervised=True`` (the split has one); naming one
    without is a ``ValueError`` saying so. ``names`` keeps only the listed
    methods (PCA, the reference, always stays); an unknown name is a
    ``ValueError`` listing the valid ones.
    """
    from sklearn.decomposition import PCA

    # A comparison transforms the test rows without their groups: leave out the
    # estimators that need them (the declaration the registry reads as
    # ``transform_needs_groups``; read on the class, so that a test may list
    # unregistered classes through ``all_estimators``).
    classes = [c for c in all_estimators(linear_projection=True) if not c._transform_needs_groups]
    others = [c for c in all_estimators(linear_projection=False) if not c._transform_needs_groups]
    if not projections_only:
        classes += others
    # Read on the class too (the registry's ``supervised``), for the same reason.
    needs_target = [c.__name__ for c in classes if getattr(c, "_supervised", False)]
    if not supervised:
        classes = [c for c in classes if c.__name__ not in needs_target]
    methods = {"PCA": PCA(n_components=n_components, random_state=random_state)}
    for cls in classes:
        params = cls().get_params()
        kwargs = {"n_components": n_components} if "n_components" in params else {}
        if "random_state" in params:
            kwargs["random_state"] = random_state
        methods[cls.__name__] = cls(**kwargs)
    if names is None:
        return methods
    untargeted = [name for name in names if name in needs_target and not supervised]
    if untargeted:
        raise ValueError(
            f"{', '.join(untargeted)} need(s) a target to fit: give one (--target COLUMN)."
        )
    valid = [*methods, *(cls.__name__ for cls in others if projections_only)]
    unknown = [name for name in names if name not in valid]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose from {', '.join(valid)}.")
    return {name: est for name, est in methods.items() if name == "PCA" or name in names}


def fit_all(split, n_components, random_state, time_budget, progress, *, refit=False, names=None):
    """Fit every method on the training part, reporting progress per method.

    Returns ``{name: FitOutcome}`` in the order of :func:`make_methods`. With
    ``refit`` (the refits at other dimensions) the methods that are not linear
    projections are left out.
    """
    methods = make_methods(
        n_components,
        random_state,
        projections_only=refit,
        names=names,
        supervised=getattr(split, "y_train", None) is not None,
    )
    suffix = f" (d = {n_components})" if refit else ""
    return fit_methods(methods, split, time_budget=time_budget, progress=progress, suffix=suffix)


#: Most target dimensions refitted for the per-group error against d.
MAX_D_VALUES = 5
#: Methods whose fit took longer (wall-clock seconds) are not refitted at other d.
REFIT_SECONDS = 30.0
#: The prefix of the refits' progress lines: what they are for.
REFIT_LABEL = "[refits for the plot against d]"


def group_errors_by_d(comparison, *, max_d_values=MAX_D_VALUES, progress=None):
    """Per-group test error of every method at up to ``max_d_values`` dimensions.

    The methods of ``comparison`` are refitted on its training part at each d
    from 1 (or higher) up to ``max(n_components + 1, max_d_values)``, kept
    below the number of features, where every method is exact; at
    ``comparison.n_components`` its fitted estimators are reused. A method
    whose defaults are infeasible at some d (e.g. ConvexFairPCA's ``delta``),
    that is unavailable or that exceeds the comparison's time budget has no
    point at that d. Only the methods fitted at ``n_components`` within
    :data:`REFIT_SECONDS` are refitted (never one stopped or failed there): the
    plot would otherwise multiply a slow method's cost by ``max_d_values``; a
    method stopped or failed at one refit d is not tried at the following
    ones. No registered estimator declares its components nested (the
    top-``d`` of a fit at a larger d), so every d is a fit of its own. Progress
    lines start with :data:`REFIT_LABEL`. Methods that are not linear
    projections (FairKernelPCA, LinearErasure) have no reconstruction error
    and are left out.

    Returns
    -------
    pandas.DataFrame
        Columns ``method``, ``d``, ``group``, ``error`` (mean squared
        reconstruction error of the group's test rows) and ``converged`` (the
        fit's ``converged_``; True for closed-form methods).
        ``attrs["not_refitted"]`` maps the methods not refitted to the
        seconds of their fit; ``attrs["given_up"]`` the methods stopped or
        failed at a refit d to how (e.g. ``"stopped at d = 1"``).
    """
    import pandas as pd

    split, d0 = comparison.split, comparison.n_components
    time_budget = comparison.time_budget
    fitted = {n: o for n, o in comparison.outcomes.items() if o.status == "fitted"}
    refitted = [n for n, o in fitted.items() if o.seconds <= REFIT_SECONDS]
    skipped = {n: o.seconds for n, o in fitted.items() if n not in refitted and n != "PCA"}
    top = max(1, min(split.X_train.shape[1] - 1, max(d0 + 1, max_d_values)))
    dims = sorted({*range(max(1, top - max_d_values + 1), top + 1), d0})
    labelled = None if progress is None else (lambda line: progress(f"{REFIT_LABEL} {line}"))
    given_up = {}
    rows = []
    for d in dims:
        if d == d0:
            models = {
                name: est
                for name, est in comparison.estimators.items()
                if is_linear_projection(est)
            }
        else:
            # A method that stopped or failed at one d is not tried again at the next.
            names = [n for n in refitted if n not in given_up]
            outcomes = fit_all(
                split, d, comparison.random_state, time_budget, labelled, refit=True, names=names
            )
            for name, outcome in outcomes.items():
                if outcome.status != "fitted" and name != "PCA":
                    given_up[name] = f"{outcome.status} at d = {d}"
            models = {n: o.estimator for n, o in outcomes.items() if o.status == "fitted"}
        for name, est in models.items():
            converged = bool(getattr(est, "converged_", True))
            for group, error in group_reconstruction_error(split.X_test, split.s_test, est).items():
                rows.append(
                    {"method": name, "d": d, "group": group, "error": error, "converged": converged}
                )
    by_d = pd.DataFrame(rows, columns=["method", "d", "group", "error", "converged"])
    by_d.attrs["not_refitted"] = skipped
    by_d.attrs["given_up"] = given_up
    return by_d

"""
The fairness–variance trade-off: tradeoff_curve and select
==========================================================

Every fair method has a knob that trades kept variance for fairness: mean
matching's ``mean_penalty``, MMD's ``tau``, RFPCA's ``lam``, Pareto's
``disparity_ratio``, ConvexFairPCA's ``delta``. :func:`fairpca.tradeoff_curve`
fits each method over a grid of its knob on a training part and evaluates
every setting on held-out rows: the share of variance kept and the fairness
metrics you ask for, each with a bootstrap interval. It marks the settings
that no other setting beats on every measure (the frontier).
:func:`fairpca.select` then picks the setting that keeps the most variance
within fairness limits.

The same is available on the command line::

    fairpca tradeoff --data file.csv --sensitive COLUMN --target COLUMN \\
        --metric mmd2 --metric demographic_parity_difference --output report/

which writes the curve (``tradeoff.csv``), the plot and a self-contained
``report.html``.
"""

from sklearn.decomposition import PCA

from fairpca import (
    MeanMatchingFairPCA,
    MMDFairPCA,
    ParetoFairPCA,
    RobustFairPCA,
    select,
    tradeoff_curve,
)
from fairpca.datasets import make_gaussian_groups
from fairpca.plotting import plot_tradeoff_curve
from fairpca.tradeoff import DEFAULT_GRIDS

X, s, y = make_gaussian_groups(
    n_samples=600, random_state=0, return_target=True
)

# %%
# The curve
# ---------
# We sweep four methods over their default grids
# (:data:`fairpca.tradeoff.DEFAULT_GRIDS`) and keep the example fast with 30
# bootstrap resamples (the default is 200). Estimators passed in ``estimators``
# are used as given, so PCA needs its ``n_components`` and the randomised
# methods their ``random_state``; ``estimators=None`` sweeps every method,
# ConvexFairPCA and MinMaxLossFairPCA included. The ``converged`` column
# records whether each fit met its stopping rule.
#
# The metrics here describe the representation alone. The downstream ones
# (``"demographic_parity_difference"``, ``"equal_opportunity_difference"``,
# ``"equalized_odds_difference"``) also need the binary target ``y``: a
# classifier is then trained on each setting's training representation.

print({name: DEFAULT_GRIDS[name] for name in ("MMDFairPCA", "ParetoFairPCA")})

estimators = {
    "PCA": PCA(n_components=2),
    "MeanMatchingFairPCA": MeanMatchingFairPCA(n_components=2),
    "MMDFairPCA": MMDFairPCA(n_components=2, random_state=0),
    "ParetoFairPCA": ParetoFairPCA(n_components=2),
    "RobustFairPCA": RobustFairPCA(n_components=2, random_state=0),
}
curve = tradeoff_curve(
    X,
    s,
    y,
    estimators=estimators,
    metrics=["mmd2", "reconstruction_error_gap"],
    n_bootstrap=30,
)
columns = ["method", "setting", "explained_variance_ratio", "mmd2", "mmd2_high"]
print(curve[columns + ["converged", "on_frontier"]].round(3).to_string())

# %%
# The frontier plot
# -----------------
# One panel per metric: kept variance against the metric, with the bootstrap
# intervals; the settings on the frontier are joined.

fig = plot_tradeoff_curve(curve)

# %%
# Selecting a setting
# -------------------
# :func:`~fairpca.select` returns an unfitted clone of the best-variance setting
# whose *upper* interval end meets every limit (``bound="estimate"`` uses the
# held-out estimate instead). It raises a ``ValueError`` naming the best value
# reached when no setting qualifies.

best = select(curve, {"mmd2": 0.1})
print(best)
best.fit(X, sensitive_features=s)

try:
    select(curve, {"mmd2": 0.001})
except ValueError as exc:
    print(exc)

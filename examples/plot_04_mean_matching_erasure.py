"""
Matched means and covariances: MeanMatchingFairPCA, ConvexFairPCA, LinearErasure
================================================================================

A representation from which no linear model can tell the groups apart *on
average* is one in which every group has the same mean. Three estimators give
that guarantee on the training data:

* :class:`~fairpca.MeanMatchingFairPCA` (Kleindessner et al., 2023): PCA
  restricted to the directions orthogonal to the group-mean differences, in
  closed form; ``covariance_rank`` also matches the covariances;
* :class:`~fairpca.ConvexFairPCA` (Olfat & Aswani, 2019): a semidefinite
  program with the mean constraint and a penalty on covariance differences
  (needs cvxpy, the ``sdp`` extra);
* :class:`~fairpca.LinearErasure` (LEACE, Belrose et al., 2023): not a
  projection but the smallest edit of the data that makes the group means
  equal, keeping all ``p`` features.

:func:`fairpca.metrics.group_separability` measures the result: the largest
difference between the groups' distributions of a linear score fitted to
predict the group, out of fold (0: not separable, 1: perfectly separable).
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from fairpca import ConvexFairPCA, LinearErasure, MeanMatchingFairPCA
from fairpca.datasets import make_gaussian_groups
from fairpca.metrics import explained_variance_ratio, group_separability
from fairpca.plotting import plot_projections

X, s = make_gaussian_groups(
    n_samples=600, n_features=6, mean_shift=2.0, random_state=0
)
X = StandardScaler().fit_transform(X)

fitted = {
    "PCA": PCA(n_components=2).fit(X),
    "MeanMatching": MeanMatchingFairPCA(n_components=2).fit(
        X, sensitive_features=s
    ),
    "MeanMatching\ncovariance_rank=3": MeanMatchingFairPCA(
        n_components=2, covariance_rank=3
    ).fit(X, sensitive_features=s),
    "ConvexFairPCA": ConvexFairPCA(n_components=2, delta=0.0).fit(
        X, sensitive_features=s
    ),
    "LinearErasure": LinearErasure().fit(X, sensitive_features=s),
}

# %%
# Projected group means and linear separability
# ---------------------------------------------
# PCA's representation separates the groups well. After any of the three fair
# estimators the group means coincide and the separability drops to a fraction
# of PCA's; what remains comes from the groups' different spreads, which equal
# means do not remove. Variance kept is not defined for ``LinearErasure``, which
# keeps all six features.

rows = []
for name, est in fitted.items():
    Z = est.transform(X)
    mean_gap = np.linalg.norm(Z[s == 0].mean(axis=0) - Z[s == 1].mean(axis=0))
    kept = (
        np.nan if name == "LinearErasure" else explained_variance_ratio(X, est)
    )
    separability = group_separability(X, s, est, random_state=0)
    rows.append((name.replace("\n", " "), mean_gap, kept, separability))
table = pd.DataFrame(
    rows, columns=["method", "mean gap", "variance kept", "separability"]
)
print(table.round(4).to_string(index=False))

fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
ax.barh(table["method"], table["separability"], color="tab:purple")
ax.invert_yaxis()
ax.set(xlim=(0, 1), xlabel="group separability (0 = none, 1 = perfect)")
ax.set_title("How well a linear score tells the groups apart")

# %%
# The representations
# -------------------
# The first two output coordinates of each estimator (for ``LinearErasure``, the
# first two edited features).

fig_scatter = plot_projections(fitted, X, s)

# %%
# Several attributes: intersectional groups
# -----------------------------------------
# A two-dimensional ``sensitive_features`` (one column per attribute) defines
# the groups as the intersections of the attributes' values. By default
# (``attributes="intersectional"``) every intersection gets the same mean;
# ``attributes="separate"`` matches only the means of each attribute's own
# groups, which removes fewer directions.

rng = np.random.default_rng(0)
attributes = pd.DataFrame(
    {"group": s, "site": rng.choice(["A", "B"], size=len(s))}
)
for mode in ("intersectional", "separate"):
    est = MeanMatchingFairPCA(n_components=2, attributes=mode).fit(
        X, sensitive_features=attributes
    )
    removed = est.n_constraints_
    print(f"{mode:14s} groups={len(est.groups_)} constraints removed={removed}")

# %%
# A continuous attribute
# ----------------------
# Name the continuous columns with ``continuous_attributes``: for them the
# constraint is zero covariance between the representation and the attribute,
# so no linear function of the representation correlates with it.

age = (
    40 + 10 * X[:, 0] + rng.normal(scale=5, size=len(s))
)  # correlated with feature 0
attributes["age"] = age
for cont in (None, ["age"]):
    table_cols = (
        attributes[["group"]] if cont is None else attributes[["group", "age"]]
    )
    est = MeanMatchingFairPCA(n_components=2, continuous_attributes=cont).fit(
        X, sensitive_features=table_cols
    )
    correlation = max(
        abs(np.corrcoef(z, age)[0, 1]) for z in est.transform(X).T
    )
    print(
        f"continuous_attributes={cont}: max |corr(Z, age)| = {correlation:.3f}"
    )

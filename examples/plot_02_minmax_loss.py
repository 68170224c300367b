"""
Equal losses: MinMaxLossFairPCA, its roundings and nested components
====================================================================

:class:`~fairpca.MinMaxLossFairPCA` minimises the largest *marginal loss* over
the groups: how much worse each group is reconstructed than by its own best
``d``-dimensional subspace (Samadi et al., 2018). It solves a convex relaxation
whose solution is a fractional projection, then *rounds* it to a projection of
low rank without raising the objective, and reports a certified duality gap.

This example shows

* the three roundings (``rounding="extreme-point"``, ``"lp"`` and ``"top-d"``)
  with four groups, where the rank of the result can exceed ``d``;
* with two groups, ``nested=True``: components built one at a time, so that
  every prefix is itself a fair projection.
"""

import matplotlib.pyplot as plt
import numpy as np

from fairpca import MinMaxLossFairPCA
from fairpca.datasets import make_gaussian_groups

# %%
# Four groups: what each rounding returns
# ---------------------------------------
# With ``k`` groups, the default extreme-point rounding (Tantipongpipat et al.,
# 2019) returns a map of rank at most ``d + floor(sqrt(2k + 1/4) - 3/2)``, here
# ``d + 1``; the paper's LP rounding (``"lp"``) at most ``d + k - 1``. Both keep
# the relaxation's objective. ``"top-d"`` keeps the top ``d`` eigenvectors: rank
# exactly ``d``, with no guarantee on the objective. The extra components get a
# weight below one, sometimes a tiny one (``component_scales_``).

X, s = make_gaussian_groups(
    n_samples=800, n_features=10, n_groups=4, random_state=1
)
roundings = ("extreme-point", "lp", "top-d")
dims = (1, 2, 3)
rank = {r: [] for r in roundings}
objective = {r: [] for r in roundings}
for d in dims:
    for r in roundings:
        est = MinMaxLossFairPCA(n_components=d, rounding=r).fit(
            X, sensitive_features=s
        )
        rank[r].append(est.n_components_)
        objective[r].append(est.objective_)
        scales = ", ".join(f"{v:.2g}" for v in est.component_scales_)
        print(f"d={d} {r:13s} rank={est.n_components_}", end=" ")
        print(f"scales=[{scales}] loss={est.objective_:.3f}")

fig, (ax_rank, ax_obj) = plt.subplots(
    1, 2, figsize=(10, 3.8), layout="constrained"
)
width = 0.25
for i, r in enumerate(roundings):
    positions = np.array(dims) + (i - 1) * width
    ax_rank.bar(positions, rank[r], width, label=r)
    ax_obj.bar(positions, objective[r], width, label=r)
ax_rank.set(
    xlabel="n_components d", ylabel="rank of the returned map", xticks=dims
)
ax_rank.set_title("Rank (components_ rows)")
ax_obj.set(
    xlabel="n_components d", ylabel="largest group marginal loss", xticks=dims
)
ax_obj.set_title("Objective (lower is fairer)")
ax_obj.legend(title="rounding", loc="lower right")

# %%
# Every fit reports a certificate: ``gap_`` bounds the distance of the relaxed
# solution to the optimum, and ``converged_`` says whether it reached ``tol``.

est = MinMaxLossFairPCA(n_components=2).fit(X, sensitive_features=s)
print(
    "group losses:",
    est.group_losses_.round(3),
    "gap:",
    est.gap_,
    est.converged_,
)

# %%
# ``objective="variance"`` maximises the smallest variance captured by any
# group instead (the max-min variance of Tantipongpipat et al.);
# ``group_losses_`` then holds minus the captured variances.

est = MinMaxLossFairPCA(n_components=2, objective="variance").fit(
    X, sensitive_features=s
)
print("captured variance per group:", (-est.group_losses_).round(3))

# %%
# Two groups: nested components
# -----------------------------
# With two groups the extreme-point rounding returns an orthogonal projection
# of rank exactly ``d``. But, unlike PCA, the fair 2-dimensional subspace need
# not contain the fair 1-dimensional one. With ``nested=True`` the ``r``-th
# component is the best fair addition to the first ``r - 1``: every prefix is
# fair given the earlier components (``prefix_gaps_`` certifies each step), and
# fitting fewer components gives the first rows of a larger fit. The price is
# that a prefix of two or more components can be worse than the best joint
# subspace of that rank.

X2, s2 = make_gaussian_groups(n_samples=600, n_features=8, random_state=0)
nested = MinMaxLossFairPCA(n_components=4, nested=True).fit(
    X2, sensitive_features=s2
)
joint = [
    MinMaxLossFairPCA(n_components=r).fit(X2, sensitive_features=s2).objective_
    for r in range(1, 5)
]
print("nested prefixes:", nested.prefix_objectives_.round(3))
print("joint optima:   ", np.round(joint, 3))
print("prefix gaps:    ", nested.prefix_gaps_)

fig2, ax = plt.subplots(figsize=(5.5, 3.8), layout="constrained")
ranks = np.arange(1, 5)
ax.plot(ranks, joint, "-o", label="joint optimum of each rank")
ax.plot(ranks, nested.prefix_objectives_, "--s", label="prefix of nested=True")
ax.set(
    xlabel="number of components r",
    ylabel="largest group marginal loss",
    xticks=ranks,
)
ax.set_title("What nesting costs")
ax.legend()

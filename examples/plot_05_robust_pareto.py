"""
Robust and Pareto fair PCA: RobustFairPCA and ParetoFairPCA
===========================================================

Two methods that trade the total reconstruction error against the gap between
groups:

* :class:`~fairpca.RobustFairPCA` (Vu et al., 2022) minimises the total error
  plus ``lam`` times the largest gap between group errors, both under the
  *worst* distributions within a small distance of the training data. Guarding
  against those distributions is meant to keep the gap small on new data, not
  only on the training rows.
* :class:`~fairpca.ParetoFairPCA` (Kamani et al.) treats the total loss and the
  pairwise disparities as separate objectives and descends until no direction
  lowers them all (a Pareto-critical subspace).

Both are iterative; here the iteration budgets are small to keep the example
fast.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import PCA

from fairpca import MinMaxLossFairPCA, ParetoFairPCA, RobustFairPCA
from fairpca.datasets import make_gaussian_groups, make_robust_toy
from fairpca.metrics import (
    pairwise_disparity_error,
    reconstruction_error,
    reconstruction_error_gap,
)

# %%
# RobustFairPCA: the gap on held-out rows
# ---------------------------------------
# Vu et al.'s two-dimensional toy data: two groups (200 and 100 training rows)
# and one component. We fit on one draw and evaluate the average reconstruction
# error (ARE) and the absolute gap between the two groups' errors (ABDiff) on a
# larger, independent draw.

X_train, s_train = make_robust_toy(random_state=0)
X_test, s_test = make_robust_toy(n_per_group=(2000, 1000), random_state=1)

fits = {"PCA": PCA(n_components=1).fit(X_train)}
for lam in (0.0, 0.1, 0.2, 0.5, 1.0):
    fits[f"lam={lam}"] = RobustFairPCA(
        n_components=1, lam=lam, n_iter=300, n_restarts=5, random_state=0
    ).fit(X_train, sensitive_features=s_train)
fits["MinMaxLoss"] = MinMaxLossFairPCA(n_components=1).fit(
    X_train, sensitive_features=s_train
)

names = list(fits)
are = [reconstruction_error(X_test, est) for est in fits.values()]
gap = [reconstruction_error_gap(X_test, s_test, est) for est in fits.values()]
for name, a, g in zip(names, are, gap, strict=True):
    print(f"{name:16s} held-out ARE = {a:.3f}  ABDiff = {g:.3f}")

# %%
# ``lam = 0`` (with the default radii) is close to PCA; as ``lam`` grows the
# held-out gap falls by an order of magnitude for about 45 % more error. The
# min-max-loss solution is shown for reference.

labels = [f"RobustFairPCA {n}" if n.startswith("lam") else n for n in names]
colours = ["grey" if n == "PCA" else "tab:green" for n in names]
colours[names.index("MinMaxLoss")] = "tab:blue"
fig, (ax_are, ax_gap) = plt.subplots(
    1, 2, figsize=(9, 3.6), sharey=True, layout="constrained"
)
ax_are.barh(labels, are, color=colours)
ax_gap.barh(labels, gap, color=colours)
ax_are.invert_yaxis()
ax_are.set(xlabel="held-out ARE (lower is better)")
ax_gap.set(xlabel="held-out ABDiff (lower is fairer)")
fig.suptitle("make_robust_toy, one component")

# %%
# ``fairpca.experiments.robust_fair_pca_cv`` chooses ``alpha`` (the radius
# scale) and ``lam`` by cross-validation, as the paper does.

# %%
# ParetoFairPCA: the descent
# --------------------------
# The search first moves from PCA towards lower pairwise disparity until each
# disparity is at most ``disparity_ratio`` times PCA's largest, or until the
# next step would leave a group *worse off* (the *start*), then runs the Pareto
# descent, which lowers the loss and the disparities together.
# ``start_history_`` and ``history_`` record both stages. By default the
# disparities are between the groups' per-row losses (``group_loss="per_row"``);
# a group is worse off when its per-row loss exceeds 1.5 times its PCA loss, or
# 1.5 times a floor of 0.1 times the groups' mean PCA loss if that is larger.
# Here PCA serves group 0 almost perfectly, so the floor is its reference.

X, s = make_gaussian_groups(n_samples=500, n_features=8, random_state=0)
pareto = ParetoFairPCA(n_components=2, max_iter=300).fit(
    X, sensitive_features=s
)
pca = PCA(n_components=2).fit(X)
print("converged:", pareto.converged_, "steps:", pareto.n_iter_)
print("start search stopped:", pareto.start_status_)
print("per-row loss of each group, PCA:", np.round(pareto.pca_group_losses_, 3))
print("per-row loss of each group, fit:", np.round(pareto.group_losses_, 3))
for name, est in (("PCA", pca), ("Pareto", pareto)):
    disparity = next(iter(pairwise_disparity_error(X, s, est).values()))
    error = reconstruction_error(X, est)
    print(f"{name:6s} total error = {error:.3f}  disparity = {disparity:.1f}")

# The recorded objectives are normalised (see the class's Notes): the loss is
# the share of variance lost, the disparity is divided by PCA's, and the
# default penalty is ``psi(z) = z**2 / 2``. Both also carry the constant
# ``alpha * d`` of the regulariser, which we subtract.

offset = pareto.alpha_ * pareto.n_components_
start = pareto.start_history_
descent = pareto.history_["objectives"] - offset
loss_col = pareto.objective_names_.index("loss")
disparity_col = pareto.objective_names_.index("psi(Delta[0, 1])")

fig2, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
ax.plot(
    start["loss"],
    np.sqrt(2 * (start["objectives"][:, 0] - offset)),
    ".-",
    label="search for the start",
)
ax.plot(
    descent[:, loss_col],
    np.sqrt(2 * np.clip(descent[:, disparity_col], 0, None)),
    "s-",
    markersize=4,
    label="Pareto descent",
)
ax.axhline(
    pareto.disparity_ratio, color="grey", linestyle=":", label="disparity_ratio"
)
ax.set(xlabel="share of variance lost", ylabel="|disparity| relative to PCA's")
ax.set_title("ParetoFairPCA: from PCA (top left) to the result")
ax.legend()

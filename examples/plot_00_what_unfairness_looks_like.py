"""
What unfairness in PCA looks like
=================================

PCA picks the directions of largest variance of the pooled data. When one group
is larger than another and its variance points elsewhere, those directions are
mostly the larger group's, and the smaller group is reconstructed worse.

:func:`fairpca.datasets.make_gaussian_groups` builds exactly that case: two
groups (70 % and 30 % of the rows) in ten dimensions, with the same spread but
each along its own two dominant directions. Each group alone could be
reconstructed equally well by its own best subspace.
"""

import matplotlib.pyplot as plt
from sklearn.decomposition import PCA

from fairpca import MinMaxLossFairPCA
from fairpca.datasets import make_gaussian_groups
from fairpca.metrics import group_reconstruction_error, marginal_loss, report
from fairpca.plotting import plot_group_errors

X, s = make_gaussian_groups(n_samples=1000, n_features=10, random_state=0)
print(X.shape, "rows per group:", [int((s == g).sum()) for g in (0, 1)])

# %%
# Each group's reconstruction error against the dimension
# -------------------------------------------------------
# The average squared distance between a row and its reconstruction, per
# group, for PCA and for :class:`~fairpca.MinMaxLossFairPCA`. With two or three
# components PCA serves the majority (group 0) several times better than the
# minority; the fair projection closes most of the gap.

dims = range(1, 7)
errors = {
    (name, g): [] for name in ("PCA", "MinMaxLossFairPCA") for g in (0, 1)
}
for d in dims:
    fitted = {
        "PCA": PCA(n_components=d).fit(X),
        "MinMaxLossFairPCA": MinMaxLossFairPCA(n_components=d).fit(
            X, sensitive_features=s
        ),
    }
    for name, est in fitted.items():
        for g, value in group_reconstruction_error(X, s, est).items():
            errors[name, g].append(value)

fig, ax = plt.subplots(figsize=(6.5, 4.2), layout="constrained")
colours = {0: "tab:blue", 1: "tab:orange"}
for (name, g), values in errors.items():
    style = "-o" if name == "PCA" else "--s"
    ax.plot(dims, values, style, color=colours[g], label=f"{name}, group {g}")
ax.set(xlabel="number of components d", ylabel="average reconstruction error")
ax.set_title("make_gaussian_groups: each group's error")
ax.legend()

# %%
# The fair criterion: marginal loss
# ---------------------------------
# A group's *marginal loss* is its error minus the error of its own best
# ``d``-dimensional subspace: what sharing the projection costs it. PCA's
# costs fall almost entirely on the minority; the fair projection makes the
# two equal. Here with ``d = 2``:

pca = PCA(n_components=2).fit(X)
fair = MinMaxLossFairPCA(n_components=2).fit(X, sensitive_features=s)
for name, est in (("PCA", pca), ("fair", fair)):
    error = group_reconstruction_error(X, s, est)
    loss = marginal_loss(X, s, est)
    print(
        f"{name:5s} error: {[round(v, 2) for v in error.values()]}",
        f"marginal loss: {[round(v, 2) for v in loss.values()]}",
    )

# %%
# :func:`fairpca.metrics.report` computes every metric for several projections
# at once, and :func:`fairpca.plotting.plot_group_errors` draws its per-group
# columns.

table = report(X, s, {"PCA": pca, "MinMaxLossFairPCA": fair}, random_state=0)
fig_errors = plot_group_errors(table)

"""
Data wider than a p x p matrix: StreamingFairPCA
================================================

With tens of thousands of features, one ``p x p`` covariance matrix no longer
fits in memory, and every covariance-based method refuses the data.
:class:`~fairpca.StreamingFairPCA` (Lee et al., 2023) never forms one: it finds
the "unfair subspace" -- the group mean difference and the top ``unfair_rank``
directions in which the group covariances differ -- by block power iterations
over the rows, then the principal components outside that subspace, holding
only ``p x (n_components + unfair_rank)`` numbers besides one block of rows.

The rows here come from :func:`fairpca.datasets.iter_wide_groups`: smooth
signals (flattened "images") whose mean and pattern variances depend on the
group, generated block by block (its exact moments are given by
:func:`fairpca.datasets.wide_groups_moments`).
"""

import matplotlib.pyplot as plt
import numpy as np

from fairpca import StreamingFairPCA
from fairpca.datasets import iter_wide_groups, make_wide_groups

n_features, d, m = 1000, 3, 4
X, s = make_wide_groups(3000, n_features, random_state=0)
print(f"{X.shape[0]} rows, {n_features} features")

# %%
# ``fit``: power iterations, one pass over the blocks per step
# ------------------------------------------------------------
# ``fit`` reads a NumPy array ``block_size`` rows at a time (a Dask array by
# its chunks); ``solver="exact"`` is the dense reference, for small ``p`` only.

power = StreamingFairPCA(d, unfair_rank=m, random_state=0)
power.fit(X, sensitive_features=s)
exact = StreamingFairPCA(d, unfair_rank=m, solver="exact")
exact.fit(X, sensitive_features=s)
cosines = np.linalg.svd(power.components_ @ exact.components_.T)[1]
print(f"power iterations: {power.n_iter_}, {power.n_passes_} passes")
sine = np.sqrt(max(0.0, 1 - cosines.min() ** 2))
print(f"largest angle to the exact answer: sine {sine:.1e}")

Z = power.transform(X)
print(
    "projected group means:",
    Z[s == 0].mean(0).round(6),
    Z[s == 1].mean(0).round(6),
)

# %%
# The components and the unfair directions
# ----------------------------------------
# The generator's groups differ in their mean and in the variance of four
# smooth patterns: the covariance directions found are those patterns, and
# the fair components are the remaining high-variance ones.

fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), sharex=True)
for j, row in enumerate(power.covariance_directions_.T):
    axes[0].plot(row, label=f"direction {j + 1}")
axes[0].set(title="unfair covariance directions", xlabel="feature (pixel)")
for j, row in enumerate(power.components_):
    axes[1].plot(row, label=f"component {j + 1}")
axes[1].set(title="fair components", xlabel="feature (pixel)")
for ax in axes:
    ax.legend(fontsize="small", loc="upper right")
fig.tight_layout()

# %%
# ``partial_fit``: one pass over a stream
# ---------------------------------------
# When the rows can be read only once, ``partial_fit`` makes one noisy power
# step per ``block_size`` rows (however the stream is cut): its accuracy is
# limited by the block size. Here it is compared with the exact fit on the
# 3000 rows above, which has sampling error of its own: the curve levels off
# where the two estimates are equally good.

stream = StreamingFairPCA(d, unfair_rank=m, block_size=2000, random_state=0)
sines = []
for X_block, s_block in iter_wide_groups(24_000, n_features, block_size=1000):
    stream.partial_fit(X_block, sensitive_features=s_block)
    if hasattr(stream, "components_"):
        cosines = np.linalg.svd(stream.components_ @ exact.components_.T)[1]
        sines.append(np.sqrt(max(0.0, 1 - cosines.min() ** 2)))

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(np.arange(1, len(sines) + 1), sines, marker="o")
ax.set(
    xlabel="blocks of 1000 rows seen",
    ylabel="sine of the largest angle",
    title="partial_fit against the exact fit",
)
fig.tight_layout()

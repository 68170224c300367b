"""
Data larger than memory: Dask input and partial_fit
===================================================

The covariance-based methods need only each group's row count, mean and
scatter matrix (:class:`~fairpca.GroupMoments`), which are sums over rows.
So the rows never have to be in memory together:

* pass a ``dask.array`` (or a Dask DataFrame) as ``X`` and the labels as a
  Dask array partitioned like it, or a NumPy array: ``fit`` computes the
  moments in one pass over the blocks and solves the small ``p x p`` problem
  locally;
* or feed chunks to ``partial_fit``, which merges each chunk's moments exactly
  and solves again.

Both give the in-memory answer up to rounding. This example uses a million
rows to stay quick; the same code runs unchanged on data that only fits on
disk or across a cluster (needs the ``dask`` extra).
"""

import time

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

from fairpca import MeanMatchingFairPCA, MinMaxLossFairPCA

n_rows, n_features, chunk = 1_000_000, 12, 100_000
X = da.random.default_rng(0).standard_normal(
    (n_rows, n_features), chunks=(chunk, n_features)
)
# Two groups, whose means differ along the first two features.
s = da.random.default_rng(1).integers(0, 2, size=n_rows, chunks=chunk)
X = X + 0.5 * s[:, None] * da.from_array(
    np.r_[1.0, -1.0, np.zeros(n_features - 2)]
)
X = X * da.from_array(np.linspace(3.0, 0.5, n_features))  # distinct variances
print(X)

# %%
# One pass with Dask
# ------------------
# ``fit`` runs on the current Dask scheduler (threads by default, or a
# ``distributed.Client`` if one is active).

start = time.perf_counter()
on_dask = MinMaxLossFairPCA(n_components=3).fit(X, sensitive_features=s)
seconds = time.perf_counter() - start
print(f"Dask fit: {seconds:.1f} s, group sizes {on_dask.group_counts_}")
print("group losses:", on_dask.group_losses_.round(4))

# %%
# The same fit in memory
# ----------------------
# Loading the rows (here they do fit) and fitting again gives the same
# subspace: the distance between the two projections is at rounding level.

X_memory, s_memory = X.compute(), s.compute()
in_memory = MinMaxLossFairPCA(n_components=3).fit(
    X_memory, sensitive_features=s_memory
)


def projector(est):
    """The orthogonal projection onto an estimator's components."""
    return est.components_.T @ est.components_


print(
    "difference of projections:",
    np.linalg.norm(projector(on_dask) - projector(in_memory)),
)

# %%
# Chunk by chunk with ``partial_fit``
# -----------------------------------
# Each call merges one chunk's moments and solves again, so after the last
# chunk the estimator equals ``fit`` on all rows. Groups may appear in any
# chunk. Every call costs a solve: use few, large chunks. We follow how far the
# mean-matching subspace after each chunk is from the one fitted on all rows:
# it is the answer for the rows seen so far, close to the final one from the
# first chunk on here, and equal to it after the last.

streamed = MeanMatchingFairPCA(n_components=3)
final = MeanMatchingFairPCA(n_components=3).fit(
    X_memory, sensitive_features=s_memory
)
distance = []
for start_row in range(0, n_rows, chunk):
    rows = slice(start_row, start_row + chunk)
    streamed.partial_fit(X_memory[rows], sensitive_features=s_memory[rows])
    distance.append(np.linalg.norm(projector(streamed) - projector(final)))
print("distance after each chunk:", [f"{x:.1e}" for x in distance])

fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
seen = np.arange(1, len(distance) + 1) * chunk
ax.semilogy(seen, np.maximum(distance, 1e-16), "o-")
ax.set(xlabel="rows seen", ylabel="‖P_partial − P_full‖ (Frobenius)")
ax.set_title("partial_fit after each chunk against fit on all rows")

"""Fitting from group moments only: Dask input, distributed clusters and partial_fit.

The reference is always an independent computation: the in-memory fit of the
same estimator (the issue's acceptance criterion), or scikit-learn's PCA for the
group-blind fall-backs.
"""

import sys

import numpy as np
import pytest
from sklearn.decomposition import PCA

from answers import assert_same_answer
from fairpca import (
    ConvexFairPCA,
    FairPCABase,
    MeanMatchingFairPCA,
    MinMaxLossFairPCA,
    MMDFairPCA,
    ParetoFairPCA,
    RobustFairPCA,
)

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")

RTOL = 1e-10

ESTIMATORS = [
    pytest.param(lambda: MinMaxLossFairPCA(n_components=3), id="MinMaxLoss"),
    pytest.param(
        lambda: RobustFairPCA(n_components=3, n_iter=150, n_restarts=2, random_state=0),
        id="Robust",
    ),
    pytest.param(lambda: ParetoFairPCA(n_components=3), id="Pareto"),
    pytest.param(lambda: ConvexFairPCA(n_components=3, solver="CLARABEL"), id="Convex"),
    pytest.param(lambda: MeanMatchingFairPCA(n_components=3), id="MeanMatching"),
]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n, p = 2400, 7
    s = rng.choice(np.array(["a", "b", "c"]), size=n, p=[0.5, 0.3, 0.2])
    X = rng.normal(size=(n, p)) @ rng.normal(size=(p, p))
    X += (s == "b")[:, None] * 2.0 * rng.normal(size=p) + 5.0
    X[s == "c"] *= 1.5
    return X, s


def _projection(est):
    """The fitted map's matrix ``P = C^T diag(scales) C``: the reconstruction is
    ``(X - mean_) P + mean_`` whatever basis of a degenerate eigenspace was chosen."""
    return (est.components_.T * est.component_scales_) @ est.components_


def _assert_same_fit(est, ref):
    """``est`` equals the in-memory ``ref``: the moments to rounding, so a direct solver's
    projection to ``RTOL`` relative, an iterative solver's answer at the level its stopping
    rule guarantees (``answers.assert_same_answer``), not at one machine's rounding."""
    np.testing.assert_allclose(est.mean_, ref.mean_, rtol=RTOL, atol=RTOL * np.abs(ref.mean_).max())
    np.testing.assert_array_equal(est.groups_, ref.groups_)
    np.testing.assert_array_equal(est.group_counts_, ref.group_counts_)
    assert_same_answer(est, ref, direct_tol=RTOL)
    if isinstance(ref, MeanMatchingFairPCA):
        np.testing.assert_allclose(_projection(est), _projection(ref), rtol=0, atol=RTOL)
        np.testing.assert_allclose(
            est.explained_variance_ratio_.sum(), ref.explained_variance_ratio_.sum(), rtol=RTOL
        )
        # Unique basis (sorted, sign-fixed): the rows themselves must agree.
        np.testing.assert_allclose(est.components_, ref.components_, rtol=0, atol=RTOL)
        np.testing.assert_allclose(est.explained_variance_, ref.explained_variance_, rtol=RTOL)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_dask_array_fit_equals_in_memory_fit(make, data, monkeypatch):
    X, s = data
    ref = make().fit(X, sensitive_features=s)
    # The rows must never be converted to an in-memory matrix on the Dask route.
    monkeypatch.setattr(
        FairPCABase, "_validate_X", lambda *a, **k: pytest.fail("rows were materialised")
    )
    Xd = da.from_array(X, chunks=(500, 4))  # column chunks too: rechunked to whole rows
    for labels in (s, da.from_array(s, chunks=700)):
        est = make().fit(Xd, sensitive_features=labels)
        _assert_same_fit(est, ref)
        assert est.n_features_in_ == X.shape[1]
        np.testing.assert_allclose(est.moments_.scatters, ref.moments_.scatters, rtol=1e-9)


def test_dask_dataframe_fit_equals_in_memory_fit(data):
    pd = pytest.importorskip("pandas")
    X, s = data
    columns = [f"x{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=columns).assign(group=s)
    ddf = dd.from_pandas(frame, npartitions=5)
    est = ParetoFairPCA(n_components=2).fit(ddf[columns], sensitive_features=ddf["group"])
    ref = ParetoFairPCA(n_components=2).fit(frame[columns], sensitive_features=s)
    _assert_same_fit(est, ref)
    assert list(est.feature_names_in_) == columns
    assert list(est.get_feature_names_out()) == ["paretofairpca0", "paretofairpca1"]
    # Transform with the fitted map agrees with the in-memory one.
    np.testing.assert_allclose(
        est.transform(frame[columns]), ref.transform(frame[columns]), atol=1e-8
    )


def test_distributed_local_cluster_fit_equals_in_memory_fit(data):
    distributed = pytest.importorskip("distributed")
    X, s = data
    ref = RobustFairPCA(n_components=2, n_iter=100, n_restarts=1, random_state=1)
    ref.fit(X, sensitive_features=s)
    with (
        distributed.LocalCluster(
            processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        with distributed.get_task_stream(client) as stream:
            est = RobustFairPCA(n_components=2, n_iter=100, n_restarts=1, random_state=1)
            est.fit(da.from_array(X, chunks=(300, 7)), sensitive_features=da.from_array(s, 300))
        # The moment pass really ran on the cluster's workers.
        assert len(stream.data) >= 8
    _assert_same_fit(est, ref)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_partial_fit_over_chunks_equals_fit(make, data):
    X, s = data
    ref = make().fit(X, sensitive_features=s)
    est = make()
    for start in range(0, X.shape[0], 800):
        est.partial_fit(X[start : start + 800], sensitive_features=s[start : start + 800])
    _assert_same_fit(est, ref)


def test_partial_fit_groups_first_seen_in_later_chunks(data):
    X, s = data
    order = np.argsort(s, kind="stable")  # all "a" rows first, then "b", then "c"
    X, s = X[order], s[order]
    n_a = int((s == "a").sum())
    est = ParetoFairPCA(n_components=2)
    with pytest.warns(UserWarning, match="group-blind PCA"):
        est.partial_fit(X[:n_a], sensitive_features=s[:n_a])
    # Only one group so far: the estimator is PCA of those rows.
    pca = PCA(n_components=2).fit(X[:n_a])
    np.testing.assert_allclose(_projection(est), pca.components_.T @ pca.components_, atol=1e-10)
    assert est.groups_ is None
    est.partial_fit(X[n_a:], sensitive_features=s[n_a:])
    ref = ParetoFairPCA(n_components=2).fit(X, sensitive_features=s)
    _assert_same_fit(est, ref)
    # Dask blocks that each hold one group only: the groups still all count.
    blocks = ParetoFairPCA(n_components=2).fit(
        da.from_array(X, chunks=(400, 7)), sensitive_features=da.from_array(s, chunks=400)
    )
    _assert_same_fit(blocks, ref)


def test_group_blind_dask_fit_is_pca(data):
    X, _ = data
    with pytest.warns(UserWarning, match="without sensitive_features"):
        est = MinMaxLossFairPCA(n_components=2).fit(da.from_array(X, chunks=(1000, 7)))
    pca = PCA(n_components=2).fit(X)
    np.testing.assert_allclose(est.mean_, pca.mean_, rtol=1e-12)
    np.testing.assert_allclose(np.abs(est.components_ @ pca.components_.T), np.eye(2), atol=1e-9)
    np.testing.assert_allclose(est.explained_variance_, pca.explained_variance_, rtol=1e-9)


def test_partial_fit_only_for_moment_methods():
    for cls in (MinMaxLossFairPCA, ConvexFairPCA, RobustFairPCA, ParetoFairPCA):
        assert hasattr(cls(), "partial_fit")
    assert not hasattr(MMDFairPCA(), "partial_fit")


# ------------------------------------------------------------------ bad input
def test_chunks_whose_columns_disagree(data):
    X, s = data
    est = ParetoFairPCA(n_components=2).partial_fit(X[:1000], sensitive_features=s[:1000])
    with pytest.raises(ValueError, match="X has 6 features, but ParetoFairPCA is expecting 7"):
        est.partial_fit(X[1000:, :6], sensitive_features=s[1000:])


def test_partial_fit_label_types_and_presence_must_agree(data):
    X, s = data
    est = ParetoFairPCA(n_components=2).partial_fit(X[:1000], sensitive_features=s[:1000])
    with pytest.raises(TypeError, match="sensitive_features of this chunk"):
        est.partial_fit(X[1000:1100], sensitive_features=np.arange(100) % 2)
    # The rejected chunk left the accumulated moments untouched.
    assert est.moments_.n_samples == 1000
    with pytest.raises(ValueError, match="in every partial_fit call or in none"):
        est.partial_fit(X[1000:1100])


def test_group_absent_from_every_chunk(data):
    X, _ = data
    labels = da.from_array(np.full(X.shape[0], "a"), chunks=500)
    with pytest.raises(ValueError, match="at least 2 distinct groups, found 1"):
        ParetoFairPCA(n_components=2).fit(da.from_array(X, chunks=500), sensitive_features=labels)


def test_dask_bad_input(data):
    X, s = data
    Xd = da.from_array(X, chunks=(500, 7))
    with pytest.raises(
        ValueError, match=r"sensitive_features has shape \(2399,\) but X has 2400 rows"
    ):
        ParetoFairPCA().fit(Xd, sensitive_features=da.from_array(s[:-1], chunks=500))
    bad = X.copy()
    bad[1700, 2] = np.nan
    with pytest.raises(ValueError, match="row block 3: .*NaN"):
        ParetoFairPCA().fit(da.from_array(bad, chunks=(500, 7)), sensitive_features=s)
    with pytest.raises(ValueError, match="n_components"):
        ParetoFairPCA(n_components=8).fit(Xd, sensitive_features=s)
    # MMDFairPCA reads a bounded subsample of rows; every row is refused.
    with pytest.raises(ValueError, match="max_samples=None"):
        MMDFairPCA(max_samples=None).fit(Xd, sensitive_features=s)
    ddf = dd.from_array(X, chunksize=500)
    with pytest.raises(ValueError, match="partitioned like X"):
        ParetoFairPCA().fit(ddf, sensitive_features=s)


def test_missing_dask_names_the_extra(data, monkeypatch):
    X, s = data
    Xd = da.from_array(X, chunks=(500, 7))
    monkeypatch.setitem(sys.modules, "dask", None)  # makes `import dask` fail
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(ImportError, match=r"pip install 'fairpca\[dask\]'"):
        ParetoFairPCA().fit(Xd, sensitive_features=s)


# ------------------------------------------------------- the in-memory row pass
@pytest.mark.parametrize(
    "labels",
    [
        np.array([3, -2, 3, 7, -2, 5], dtype=np.int8),  # negative, with gaps
        np.array([True, False, False, True]),
        np.array([0, 1, 1, 0, 2], dtype=np.uint16),
        np.array([10**12, 5, 10**12, 5]),  # range wider than the rows: sorted instead
        np.array([2**63 + 1, 3, 3], dtype=np.uint64),
        np.array(["b", "a", "c", "a"]),
    ],
)
def test_label_encoding_equals_numpy_unique(labels):
    from fairpca._validation import _encode_labels

    groups, codes = _encode_labels(labels)
    expected_groups, expected_codes = np.unique(labels, return_inverse=True)
    np.testing.assert_array_equal(groups, expected_groups)
    assert groups.dtype == expected_groups.dtype
    np.testing.assert_array_equal(codes, expected_codes)
    assert codes.dtype == np.intp


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_rows_rejected_without_a_separate_scan(data, value):
    X, s = data
    bad = X.copy()
    bad[2000, 3] = value
    with pytest.raises(ValueError, match="NaN" if np.isnan(value) else "infinity"):
        ParetoFairPCA(n_components=2).fit(bad, sensitive_features=s)
    with pytest.raises(ValueError, match="NaN" if np.isnan(value) else "infinity"):
        MMDFairPCA(n_components=2).fit(bad, sensitive_features=s)
    est = ParetoFairPCA(n_components=2).partial_fit(X[:1000], sensitive_features=s[:1000])
    with pytest.raises(ValueError, match="NaN" if np.isnan(value) else "infinity"):
        est.partial_fit(bad[1000:], sensitive_features=s[1000:])
    assert est.moments_.n_samples == 1000  # the rejected chunk changed nothing


def test_in_memory_fit_moments_equal_per_group_numpy(data):
    X, s = data
    est = RobustFairPCA(n_components=2, n_iter=20, n_restarts=1, random_state=0)
    est.fit(X, sensitive_features=s)
    for a, g in enumerate(est.groups_):
        rows = X[s == g]
        centred = rows - rows.mean(axis=0)
        np.testing.assert_allclose(est.moments_.scatters[a], centred.T @ centred, rtol=1e-11)
        assert est.group_counts_[a] == rows.shape[0]


# ------------------------------------------------------------ benchmarks/run.py
def test_benchmark_routes_see_the_same_rows(monkeypatch):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "run.py"
    spec = importlib.util.spec_from_file_location("benchmark_run", path)
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    monkeypatch.setattr(run, "BLOCK_BYTES", 8 * 7 * 300)  # blocks of 300 rows at p = 7
    n, p = 1000, 7
    assert run._block_sizes(n, p) == [300, 300, 300, 100]
    X, s = run._memory_data(n, p, seed=3)
    Xd, sd = run._dask_data(n, p, seed=3)
    np.testing.assert_array_equal(X, Xd.compute())
    np.testing.assert_array_equal(s, sd.compute())
    # Two groups of the intended 30 / 70 split with different means.
    assert set(np.unique(s)) == {0, 1} and 0.2 < s.mean() < 0.4
    assert np.abs(X[s == 0].mean(axis=0) - X[s == 1].mean(axis=0)).max() > 0.5


def _second_partition(frame, change, partition_info=None):
    """The frame, with ``change`` applied to partition 1 only (a partition that disagrees)."""
    return change(frame) if partition_info["number"] == 1 else frame


def test_dask_dataframe_partition_with_other_columns_is_refused_not_misread(data):
    """A partition whose columns disagree with the declared ones never yields numbers."""
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    X, s = data
    columns = [f"c{j}" for j in range(X.shape[1])]
    frame = dd.from_pandas(pd.DataFrame(X, columns=columns), npartitions=2)
    labels = dd.from_pandas(pd.Series(s), npartitions=2)
    for change in (lambda f: f[f.columns[::-1]], lambda f: f.rename(columns={"c0": "x"})):
        odd = frame.map_partitions(_second_partition, change, meta=frame._meta)
        est = MinMaxLossFairPCA(n_components=2)
        with pytest.raises(ValueError, match="columns"):
            est.fit(odd, sensitive_features=labels)
        assert not hasattr(est, "components_")

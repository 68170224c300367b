import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairpca.moments as moments_module
from fairpca import GroupMoments


def _direct(X, s):
    """Reference numbers straight from numpy, one group at a time."""
    out = {}
    for g in np.unique(s):
        rows = X[s == g]
        mean = rows.mean(axis=0)
        out[g] = (rows.shape[0], mean, (rows - mean).T @ (rows - mean))
    return out


def _assert_matches(moments, X, s, rtol=1e-10):
    ref = _direct(X, s)
    assert list(moments.groups) == list(ref)
    for a, g in enumerate(moments.groups):
        n, mean, scatter = ref[g]
        assert moments.counts[a] == n
        np.testing.assert_allclose(
            moments.means[a], mean, rtol=rtol, atol=1e-12 * np.abs(mean).max()
        )
        np.testing.assert_allclose(
            moments.scatters[a], scatter, rtol=rtol, atol=rtol * np.abs(scatter).max()
        )


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 6)) @ rng.normal(size=(6, 6)) + 3.0
    s = rng.choice(["a", "b", "c"], size=500, p=[0.5, 0.3, 0.2])
    return X, s


def test_from_arrays_matches_numpy(data):
    X, s = data
    m = GroupMoments.from_arrays(X, s)
    _assert_matches(m, X, s)
    assert m.n_samples == 500 and m.n_features == 6 and m.n_groups == 3
    np.testing.assert_allclose(m.proportions, [np.mean(s == g) for g in "abc"])
    np.testing.assert_allclose(m.pooled_mean, X.mean(axis=0), rtol=1e-12)


def test_covariance_and_second_moments(data):
    X, s = data
    m = GroupMoments.from_arrays(X, s)
    _close(m.covariance(), np.cov(X.T, bias=True))
    c = X.mean(axis=0)
    for a, g in enumerate(m.groups):
        rows = X[s == g]
        n_a = rows.shape[0]
        _close(m.second_moment("pooled")[a], (rows - c).T @ (rows - c) / n_a)
        _close(m.second_moment("group")[a], np.cov(rows.T, bias=True))
        _close(m.second_moment(None)[a], rows.T @ rows / n_a)
        v = np.arange(6.0)
        _close(m.second_moment(v)[a], (rows - v).T @ (rows - v) / n_a)


def _close(actual, desired, rtol=1e-10):
    """Equal up to rounding: entries near zero are compared on the matrix's scale."""
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=1e-13 * np.abs(desired).max())


def test_chunks_equal_one_pass(data):
    X, s = data
    bounds = [0, 7, 150, 151, 400, 500]
    chunks = [(X[i:j], s[i:j]) for i, j in zip(bounds[:-1], bounds[1:], strict=True)]
    _assert_matches(GroupMoments.from_chunks(chunks), X, s)


def test_group_only_in_later_chunk():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    s = np.array([0] * 20 + [1] * 20 + [2] * 20)
    m = GroupMoments.from_chunks([(X[:20], s[:20]), (X[20:40], s[20:40]), (X[40:], s[40:])])
    _assert_matches(m, X, s)


def test_large_offset_is_stable():
    # Raw sums of squares lose every digit here; the pairwise update must not.
    rng = np.random.default_rng(2)
    X = rng.normal(size=(20_000, 3)) + 1e6
    s = rng.integers(0, 2, size=20_000)
    chunks = [(X[i : i + 997], s[i : i + 997]) for i in range(0, 20_000, 997)]
    m = GroupMoments.from_chunks(chunks)
    _assert_matches(m, X, s)
    rows = X[s == 0]
    naive = rows.T @ rows - rows.shape[0] * np.outer(rows.mean(0), rows.mean(0))
    ref = _direct(X, s)[0][2]
    assert np.abs(naive - ref).max() > 1e-3 * np.abs(ref).max()  # the naive formula fails


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 79), min_size=1, max_size=5, unique=True))
def test_merge_is_independent_of_split_points(cuts):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 4)) * 10 + 50
    s = rng.integers(0, 3, size=80)
    bounds = [0, *sorted(cuts), 80]
    chunks = [(X[i:j], s[i:j]) for i, j in zip(bounds[:-1], bounds[1:], strict=True)]
    _assert_matches(GroupMoments.from_chunks(chunks), X, s)


def test_merge_of_single_group_parts():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 2))
    left = GroupMoments.from_arrays(X[:10], ["x"] * 10)
    right = GroupMoments.from_arrays(X[10:], ["y"] * 20)
    merged = left.merge(right)
    _assert_matches(merged, X, np.array(["x"] * 10 + ["y"] * 20))


def test_from_dask_matches_in_memory(data):
    da = pytest.importorskip("dask.array")
    X, s = data
    Xd = da.from_array(X, chunks=(97, 3))
    m_np_labels = GroupMoments.from_dask(Xd, s)
    m_dask_labels = GroupMoments.from_dask(Xd, da.from_array(s, chunks=50))
    for m in (m_np_labels, m_dask_labels):
        _assert_matches(m, X, s)


def test_bad_input(data):
    X, s = data
    with pytest.raises(ValueError, match="sensitive_features has 499 labels"):
        GroupMoments.from_arrays(X, s[:-1])
    with pytest.raises(ValueError, match="NaN"):
        GroupMoments.from_arrays(np.where(X > 5, np.nan, X), s)
    with pytest.raises(TypeError, match="X must"):
        GroupMoments.from_arrays(np.array([["a", "b"], ["c", "d"]]), [0, 1])
    with pytest.raises(ValueError, match="chunks is empty"):
        GroupMoments.from_chunks([])
    with pytest.raises(ValueError, match="chunk 1 has 5 columns"):
        GroupMoments.from_chunks([(X[:10], s[:10]), (X[10:20, :5], s[10:20])])
    with pytest.raises(TypeError, match="pairs"):
        GroupMoments.from_chunks([X[:10]])
    with pytest.raises(TypeError, match="label types"):
        GroupMoments.from_arrays(X[:4], np.array([1, "a", 1, "a"], dtype=object))
    m = GroupMoments.from_arrays(X, s)
    with pytest.raises(ValueError, match="center"):
        m.second_moment("middle")
    with pytest.raises(ValueError, match="center must have shape"):
        m.second_moment(np.zeros(2))
    with pytest.raises(TypeError, match="different types"):
        m.merge(GroupMoments.from_arrays(X[:10], np.arange(10) % 2))


def test_from_dask_bad_input(data):
    da = pytest.importorskip("dask.array")
    X, s = data
    with pytest.raises(ValueError, match="sensitive_features has shape \\(499,\\)"):
        GroupMoments.from_dask(da.from_array(X, chunks=100), s[:-1])
    with pytest.raises(ValueError, match="X must be 2-D"):
        GroupMoments.from_dask(da.from_array(X[:, 0], chunks=100), s)
    with pytest.raises(ValueError, match="NaN"):
        GroupMoments.from_dask(da.from_array(np.where(X > 5, np.nan, X), chunks=100), s)


def test_overflowing_second_moments_are_a_clear_error():
    X = np.array([[1e200, 0.0], [-1e200, 1.0], [1e200, 2.0], [-1e200, 3.0]])
    with pytest.raises(ValueError, match="overflow"):
        GroupMoments.from_arrays(X, [0, 0, 1, 1])


# ----------------------------------------------- the one-pass formula and its fall-back
@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 64 rows, so that small data cross many block boundaries."""
    monkeypatch.setattr(moments_module, "_BLOCK_BYTES", 8)
    monkeypatch.setattr(moments_module, "_MIN_BLOCK_ROWS", 64)


def _counting_passes(monkeypatch):
    calls = []
    original = moments_module._block_sums
    thread = threading.get_ident()

    def counted(*args, **kwargs):
        # Only this test's passes: a Dask computation of an earlier test that raised
        # (test_from_dask_bad_input) can leave block tasks running in the scheduler's
        # threads, and on a busy machine they call _block_sums while this test runs.
        if threading.get_ident() == thread:
            calls.append(list(args[2]))  # the groups summed in this pass
        return original(*args, **kwargs)

    monkeypatch.setattr(moments_module, "_block_sums", counted)
    return calls


@pytest.mark.parametrize("order", ["C", "F"])
def test_one_pass_matches_numpy_on_centred_and_offset_data(small_blocks, monkeypatch, order):
    rng = np.random.default_rng(5)
    s = rng.choice(4, size=1000, p=[0.1, 0.2, 0.3, 0.4])
    calls = _counting_passes(monkeypatch)
    for offset in (0.0, 1e6):  # around zero, and an offset the first rows reveal
        X = np.asarray(rng.normal(size=(1000, 5)) * [1, 2, 3, 0.5, 10] + offset, order=order)
        calls.clear()
        _assert_matches(GroupMoments.from_arrays(X, s), X, s, rtol=1e-11)
        # One pass over the rows, summing every group.
        assert calls == [[0, 1, 2, 3]]


def test_far_apart_groups_are_summed_again_around_their_means(small_blocks, monkeypatch):
    # Group means 1e5 spreads apart: S = G - n delta delta^T would lose ~10 digits.
    rng = np.random.default_rng(6)
    s = rng.choice(3, size=900)
    X = rng.normal(size=(900, 4)) + 1e5 * rng.normal(size=(3, 4))[s]
    calls = _counting_passes(monkeypatch)
    _assert_matches(GroupMoments.from_arrays(X, s), X, s, rtol=1e-10)
    assert len(calls) == 2 and sorted(calls[1]) == [0, 1, 2]


def test_constant_group_and_single_rows(small_blocks):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 3))
    s = np.repeat([0, 1, 2], [1, 150, 149])
    X[s == 2] = [4.0, -1.0, 2.5]  # zero scatter: nothing to cancel against
    m = GroupMoments.from_arrays(X, s)
    _assert_matches(m, X, s)
    assert np.abs(m.scatters[2]).max() <= 1e-20
    np.testing.assert_array_equal(m.scatters[0], np.zeros((3, 3)))
    np.testing.assert_array_equal(m.means[0], X[0])


def test_non_finite_values_are_found_by_the_pass(small_blocks):
    X = np.random.default_rng(8).normal(size=(400, 3))
    s = np.arange(400) % 2
    for value, word in ((np.nan, "NaN"), (np.inf, "infinity")):
        bad = X.copy()
        bad[350, 1] = value  # beyond the first rows that choose the shift
        with pytest.raises(ValueError, match=word):
            GroupMoments.from_arrays(bad, s)


def test_covariate_cross_moments_match_numpy_and_merge_and_dask():
    rng = np.random.default_rng(11)
    n = 3000
    X = rng.normal(size=(n, 5)) * 3 + 1e4  # a large offset, as in the other moment tests
    s = rng.integers(0, 3, size=n)
    Z = np.column_stack([X[:, 0] * 0.5 + rng.normal(size=n), rng.uniform(20, 70, size=n)])
    joint = np.cov(np.column_stack([X, Z]), rowvar=False, bias=True)
    whole = GroupMoments.from_arrays(X, s, Z)
    assert whole.n_covariates == 2
    cov_xz, cov_zz = whole.cross_covariance()
    np.testing.assert_allclose(cov_xz, joint[:5, 5:], rtol=1e-9, atol=1e-9 * np.abs(joint).max())
    np.testing.assert_allclose(cov_zz, joint[5:, 5:], rtol=1e-9)
    np.testing.assert_allclose(whole.covariance(), joint[:5, :5], rtol=1e-9)
    for a in range(3):
        rows = s == a
        np.testing.assert_allclose(whole.covariate_means[a], Z[rows].mean(0), rtol=1e-12)
    parts = GroupMoments.from_arrays(X[:1000], s[:1000], Z[:1000]).merge(
        GroupMoments.from_arrays(X[1000:], s[1000:], Z[1000:])
    )
    for got, want in zip(parts.cross_covariance(), whole.cross_covariance(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="2 and 0 continuous attributes"):
        whole.merge(GroupMoments.from_arrays(X, s))
    da = pytest.importorskip("dask.array")
    lazy = GroupMoments.from_dask(
        da.from_array(X, chunks=(700, 5)), s, da.from_array(Z, chunks=(500, 2))
    )
    for got, want in zip(lazy.cross_covariance(), whole.cross_covariance(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_weighted_moments_equal_repeated_rows():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(500, 4)) * 2 + 50  # an offset: the shifted pass must stay exact
    s = rng.integers(0, 3, size=500)
    Z = rng.normal(size=(500, 1))
    w = rng.integers(0, 4, size=500)
    weighted = GroupMoments.from_arrays(X, s, Z, sample_weight=w)
    repeated = GroupMoments.from_arrays(np.repeat(X, w, 0), np.repeat(s, w), np.repeat(Z, w, 0))
    np.testing.assert_allclose(weighted.counts, repeated.counts)
    np.testing.assert_allclose(weighted.means, repeated.means, rtol=1e-12)
    np.testing.assert_allclose(weighted.scatters, repeated.scatters, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(weighted.cross_scatters, repeated.cross_scatters, atol=1e-9)
    assert weighted.n_samples == w.sum()
    # Weighted and unweighted parts merge (float and integer counts).
    merged = weighted.merge(GroupMoments.from_arrays(X[:50], s[:50], Z[:50]))
    both = GroupMoments.from_arrays(
        np.vstack([np.repeat(X, w, 0), X[:50]]),
        np.concatenate([np.repeat(s, w), s[:50]]),
        np.vstack([np.repeat(Z, w, 0), Z[:50]]),
    )
    np.testing.assert_allclose(merged.scatters, both.scatters, rtol=1e-10, atol=1e-9)
    for bad, match in ((-w, "non-negative"), (w[:10], "one weight per row"), (0 * w, "zero")):
        with pytest.raises(ValueError, match=match):
            GroupMoments.from_arrays(X, s, sample_weight=bad)


# ------------------------------------- the pooled route: one Gram per block, minus the others'
def _reference(X, s, Z=None, w=None):
    """Counts, means and scatters of each group in extended precision (np.longdouble)."""
    rows = X if Z is None else np.column_stack([X, Z])
    rows = rows.astype(np.longdouble)
    w = np.ones(len(s), dtype=np.longdouble) if w is None else np.asarray(w, np.longdouble)
    out = {}
    for g in np.unique(s):
        x, v = rows[s == g], w[s == g]
        mean = (v[:, None] * x).sum(axis=0) / v.sum()
        d = x - mean
        out[g] = (v.sum(), mean, np.einsum("i,ij,ik->jk", v, d, d))
    return out


def _assert_equals_reference(m, X, s, Z=None, w=None, rtol=1e-12):
    """Moments equal the extended-precision ones: means to rtol of their size, scatters to
    rtol of their largest entry (entries near zero are rounding on that scale)."""
    ref = _reference(X, s, Z, w)
    assert list(m.groups) == list(ref)
    means, scatters = m._joint()
    for a, g in enumerate(m.groups):
        count, mean, scatter = (np.asarray(v, dtype=np.float64) for v in ref[g])
        np.testing.assert_allclose(m.counts[a], count, rtol=1e-14)
        spread = np.sqrt(np.diagonal(scatter).max() / count)
        np.testing.assert_allclose(means[a], mean, rtol=rtol, atol=rtol * spread)
        np.testing.assert_allclose(scatters[a], scatter, rtol=0, atol=rtol * np.abs(scatter).max())


@pytest.fixture(params=["per-group", "pooled"])
def route(request, monkeypatch, small_blocks):
    """Force one route in blocks of 64 rows: each group copied, or the pooled Gram.

    Blocks of a single group take the pooled route on both (nothing is subtracted there).
    """
    monkeypatch.setattr(
        moments_module, "_POOLED_BELOW", 0.0 if request.param == "per-group" else np.inf
    )
    return request.param


def _unequal_groups(rng, n, n_groups):
    """Labels of ``n_groups`` groups of unequal sizes, the last one of 3 rows, interleaved."""
    p = rng.dirichlet(np.ones(n_groups - 1)) if n_groups > 1 else np.ones(1)
    s = rng.choice(n_groups - 1, size=n - 3, p=p) if n_groups > 1 else np.zeros(n - 3, int)
    return rng.permutation(np.concatenate([s, np.full(3, n_groups - 1)]))


@pytest.mark.parametrize("n_groups", [1, 2, 3, 10])
@pytest.mark.parametrize("kind", ["plain", "weights", "covariates", "both"])
def test_moments_equal_an_extended_precision_computation(route, n_groups, kind):
    rng = np.random.default_rng(20 + n_groups)
    n = 1500
    s = _unequal_groups(rng, n, n_groups) if n_groups > 1 else np.zeros(n, int)
    X = rng.normal(size=(n, 5)) @ rng.normal(size=(5, 5)) + [0, 3, -2, 50, 0]
    Z = rng.normal(size=(n, 2)) + X[:, :2] if kind in ("covariates", "both") else None
    w = rng.uniform(0, 3, size=n) if kind in ("weights", "both") else None
    m = GroupMoments.from_arrays(X, s, Z, sample_weight=w)
    _assert_equals_reference(m, X, s, Z, w)


@pytest.mark.parametrize("far", [0.0, 1e4])
def test_large_offset_keeps_its_accuracy(route, far):
    # Offset 1e8 with unit spread; with far > 0 one group sits 1e4 further out. X - 1e8 is
    # exact (Sterbenz's lemma), so the moments of the centred data are the reference.
    rng = np.random.default_rng(30)
    n = 2000
    s = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])
    X = rng.normal(size=(n, 4)) + np.where(s == 2, far, 0.0)[:, None] + 1e8
    centred = X - 1e8  # exact: the same points, moved
    m, c = GroupMoments.from_arrays(X, s), GroupMoments.from_arrays(centred, s)
    _assert_equals_reference(c, centred, s)
    np.testing.assert_allclose(
        m.scatters, c.scatters, rtol=0, atol=1e-12 * np.abs(c.scatters).max()
    )
    np.testing.assert_allclose(m.means - 1e8, c.means, rtol=0, atol=1e-7)  # ulp(1e8) = 1.5e-8


def test_groups_missing_from_blocks(route):
    # Grouped rows in blocks of 64: most blocks hold one group, some two; group 3 only in
    # the last, short block; group 1 in three blocks only.
    rng = np.random.default_rng(31)
    s = np.repeat([0, 1, 2, 3], [300, 150, 390, 20])
    X = rng.normal(size=(len(s), 3)) * [1.0, 5.0, 0.1] + [2.0, -1.0, 7.0] * s[:, None]
    m = GroupMoments.from_arrays(X, s)
    _assert_equals_reference(m, X, s)
    _assert_equals_reference(GroupMoments.from_arrays(X[::-1], s[::-1]), X, s)


def test_pooled_route_records_the_pooled_diagonal(monkeypatch):
    # The largest group's Gram is the block's minus the others': its error scale is the
    # block's diagonal, not its own. The per-group route gives its own diagonal.
    rng = np.random.default_rng(32)
    X = rng.normal(size=(4096, 3))
    codes = (rng.random(4096) < 0.2).astype(np.intp)
    groups = np.array([0, 1])
    pooled = moments_module._block_sums(X, codes, groups, np.zeros(3))
    monkeypatch.setattr(moments_module, "_POOLED_BELOW", 0.0)
    copied = moments_module._block_sums(X, codes, groups, np.zeros(3))
    for got, want in zip(pooled[:2], copied[:2], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(copied[2], np.diagonal(copied[0], axis1=1, axis2=2))
    np.testing.assert_array_equal(pooled[2][1], copied[2][1])  # the copied group: its own
    np.testing.assert_allclose(pooled[2][0], (X**2).sum(axis=0), rtol=1e-12)  # all rows


def test_subtracting_from_a_dominating_pooled_gram_is_summed_again(small_blocks, monkeypatch):
    # The first rows (group 0, 90 %) are centred: the shift is zero. Group 1 sits at 1e8,
    # so the pooled Gram is ~1e16 per row of group 1, and group 0's Gram obtained from it
    # by subtraction is rounding only, though group 0 itself has no offset to cancel.
    rng = np.random.default_rng(33)
    n = 2000
    s = np.where(np.arange(n) < 200, 0, (rng.random(n) < 0.1).astype(int))
    X = rng.normal(size=(n, 4)) + np.where(s == 1, 1e8, 0.0)[:, None]
    assert not moments_module._rough_shift(X).any()
    calls = _counting_passes(monkeypatch)
    m = GroupMoments.from_arrays(X, s)
    _assert_equals_reference(m, X, s, rtol=1e-10)
    # Both groups are summed again: group 1 for its offset, group 0 for the subtraction.
    assert len(calls) == 2 and sorted(calls[1]) == [0, 1]
    # Without that second pass, group 0's scatter would be wrong in every digit.
    rows = X.astype(np.longdouble)
    naive = (X.T @ X - X[s == 1].T @ X[s == 1]).astype(np.longdouble)
    mean = rows[s == 0].mean(axis=0)
    naive -= (s == 0).sum() * np.outer(mean, mean)
    ref = _reference(X, s)[0][2]
    assert np.abs(naive - ref).max() > 1e-2 * np.abs(ref).max()


def test_moderate_offsets_are_summed_around_zero_large_ones_around_a_shift():
    # Offsets up to about 3 spreads are summed without a shifted copy of the rows
    # (centring afterwards loses at most a digit); larger ones around the first rows' mean.
    rng = np.random.default_rng(36)
    s = (rng.random(5000) < 0.3).astype(int)
    noise = rng.normal(size=(5000, 4))
    for offset, shifted in ((3.0, False), (4.0, True)):
        X = noise + [offset, -offset, 0.0, 1.0]
        assert moments_module._rough_shift(X).any() == shifted
        _assert_equals_reference(GroupMoments.from_arrays(X, s), X, s)


@pytest.mark.parametrize("bad_group", [0, 1])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, 1e200])
def test_non_finite_values_are_found_on_either_route(route, bad_group, value):
    rng = np.random.default_rng(34)
    s = (rng.random(600) < 0.3).astype(int)
    X = rng.normal(size=(600, 3))
    row = np.flatnonzero(s == bad_group)[-1]  # beyond the first rows that choose the shift
    X[row, 1] = value
    word = {np.nan: "NaN", np.inf: "infinity", -np.inf: "infinity"}.get(value, "overflow")
    with pytest.raises(ValueError, match=word):
        GroupMoments.from_arrays(X, s)


def test_strided_and_fortran_data(small_blocks):
    rng = np.random.default_rng(35)
    wide = rng.normal(size=(700, 8))
    s = (rng.random(700) < 0.2).astype(int)
    for X in (wide[:, ::2], np.asfortranarray(wide[:, ::2]), wide[::-1, ::2]):
        _assert_equals_reference(GroupMoments.from_arrays(X, s), X, s)


def test_moment_pass_holds_one_scatter_array():
    # The width check budgets (k + 1) p x p matrices; the pass must not hold more
    # (it held four k p^2 arrays at its peak: sums, a copy, a product, the result).
    import tracemalloc

    rng = np.random.default_rng(0)
    p, k = 400, 16
    X = rng.normal(size=(4000, p))
    s = rng.integers(0, k, len(X))
    tracemalloc.start()
    try:
        moments = GroupMoments.from_arrays(X, s)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert moments.scatters.shape == (k, p, p)
    # Beyond the k p^2 result: row blocks, a pooled and a group Gram matrix, a mask.
    block = max(moments_module._BLOCK_BYTES, moments_module._MIN_BLOCK_ROWS * 8 * p)
    assert peak < k * p * p * 8 + 2 * block + 3 * p * p * 8 + k * p * p

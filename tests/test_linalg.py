"""The shared linear-algebra helpers (eigen-solvers against numpy, the row space)."""

import numpy as np
import pytest

from fairpca._linalg import full_eigh, row_space, top_eigh, top_eigh_fast


def psd(p, seed, decay=0.98):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(p, p)))[0]
    return (Q * decay ** np.arange(p)) @ Q.T


@pytest.mark.parametrize("solver", [top_eigh, top_eigh_fast])
@pytest.mark.parametrize(
    "p, n",
    [
        (6, 6),
        (20, 3),
        (40, 5),
        pytest.param(600, 5, marks=pytest.mark.slow),  # Lanczos at its real size (below: 160)
        pytest.param(600, 100, marks=pytest.mark.slow),
    ],
)
def test_top_eigenpairs_match_numpy(solver, p, n):
    M = psd(p, p + n)
    expected = np.linalg.eigvalsh(M)[::-1][:n]
    values, vectors = solver(M, n)
    np.testing.assert_allclose(values, expected, rtol=1e-12, atol=1e-14)
    assert np.all(np.diff(values) <= 0)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(n), atol=1e-10)
    np.testing.assert_allclose(M @ vectors, vectors * values, atol=1e-10)


def test_lanczos_path_on_a_small_matrix(monkeypatch):
    # The Lanczos path of top_eigh_fast on the smallest input that takes it.
    import fairpca._linalg as linalg

    monkeypatch.setattr(linalg, "_LANCZOS_MIN", 100)
    monkeypatch.setattr(linalg, "top_eigh", lambda *a, **k: pytest.fail("LAPACK path used"))
    test_top_eigenpairs_match_numpy(linalg.top_eigh_fast, 160, 5)


def test_lanczos_is_deterministic_and_used_on_large_matrices(monkeypatch):
    M = psd(800, 1)
    first, second = top_eigh_fast(M, 4), top_eigh_fast(M, 4)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    # On a large matrix with few pairs the LAPACK path is not taken.
    import fairpca._linalg as linalg

    def refuse(*args, **kwargs):
        raise AssertionError("LAPACK path used")

    monkeypatch.setattr(linalg, "top_eigh", refuse)
    linalg.top_eigh_fast(M, 4)
    with pytest.raises(AssertionError, match="LAPACK path used"):
        linalg.top_eigh_fast(M[:100, :100], 4)


def test_small_matrices_take_the_full_decomposition(monkeypatch):
    # Up to _FULL_EIGH_MAX rows LAPACK's subset driver costs more than numpy's full eigh.
    import fairpca._linalg as linalg

    def refuse(*args, **kwargs):
        raise AssertionError("subset driver used")

    monkeypatch.setattr(linalg, "eigh", refuse)
    M = psd(linalg._FULL_EIGH_MAX, 3)
    for solver in (linalg.top_eigh, linalg.top_eigh_fast):
        values, _ = solver(M, 4)
        np.testing.assert_allclose(values, np.linalg.eigvalsh(M)[::-1][:4], rtol=1e-12)
    with pytest.raises(AssertionError, match="subset driver used"):
        linalg.top_eigh(psd(linalg._FULL_EIGH_MAX + 1, 3), 4)


def test_row_space_splits_the_space_by_the_rows_rank():
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((2, 6))
    rows = np.vstack([rows, rows.sum(axis=0), 1e-18 * rng.standard_normal(6)])  # rank 2
    span, complement = row_space(rows)
    assert span.shape == (6, 2) and complement.shape == (6, 4)
    basis = np.hstack([span, complement])
    np.testing.assert_allclose(basis.T @ basis, np.eye(6), atol=1e-12)
    np.testing.assert_allclose(rows @ complement, 0, atol=1e-12)
    np.testing.assert_allclose(span @ (span.T @ rows.T), rows.T, atol=1e-12)
    empty_span, everything = row_space(np.zeros((2, 3)))
    assert empty_span.shape == (3, 0) and np.array_equal(everything, np.eye(3))


@pytest.mark.parametrize("size", [1, 7, 19, 32, 40])
def test_full_eigh_is_numpys_eigh_with_ties(size):
    # LAPACK's dsyevd called directly (small sizes) or through numpy: against numpy's
    # eigh, on a spectrum with a triple and a double eigenvalue (vectors compared
    # as the eigenspaces' projectors, which ties leave unique).
    rng = np.random.default_rng(size)
    basis, _ = np.linalg.qr(rng.standard_normal((size, size)))
    spectrum = np.sort(np.concatenate((np.full(min(3, size), 2.0), rng.standard_normal(size))))
    spectrum = spectrum[:size]
    spectrum[-2:] = spectrum[-1]
    A = (basis * spectrum) @ basis.T
    values, vectors = full_eigh(A)
    expected, expected_vectors = np.linalg.eigh(A)
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-13 * np.abs(expected).max())
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(size), atol=1e-13)
    np.testing.assert_allclose((vectors * values) @ vectors.T, A, atol=1e-13)
    for level in np.unique(np.round(expected, 10)):
        ours = vectors[:, np.abs(values - level) < 1e-8]
        theirs = expected_vectors[:, np.abs(expected - level) < 1e-8]
        np.testing.assert_allclose(ours @ ours.T, theirs @ theirs.T, atol=1e-10)

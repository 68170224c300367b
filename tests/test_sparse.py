"""Sparse X: moment-based fits equal the dense fits, and X is never densified."""

import tracemalloc
import warnings

import numpy as np
import pytest
from scipy import sparse
from sklearn.utils import get_tags

import fairpca
from answers import assert_same_answer
from fairpca import (
    ConvexFairPCA,
    FairKernelPCA,
    FairSparsePCA,
    GroupMoments,
    LinearErasure,
    MeanMatchingFairPCA,
    MinMaxLossFairPCA,
    MMDFairPCA,
    ParetoFairPCA,
    QuadraticErasure,
    RobustFairPCA,
    StreamingFairPCA,
)
from fairpca._sparse import centred_product

FORMATS = [sparse.csr_matrix, sparse.csc_matrix, sparse.csr_array]

# Estimator, parameters, and whether it takes sample_weight with groups. A sparse fit
# and a dense one see moments equal to rounding: the direct solver's projections agree to
# 1e-10, the iterative solvers' answers at the level their stopping rules guarantee
# (answers.assert_same_answer: certified optimal values, REPMS's step rule, values from
# fixed starts), not at one machine's rounding.
CASES = {
    "MeanMatchingFairPCA": (MeanMatchingFairPCA, {}, True),
    "ParetoFairPCA": (ParetoFairPCA, {}, True),
    "RobustFairPCA": (RobustFairPCA, {"random_state": 0, "n_iter": 200}, True),
    "MinMaxLossFairPCA": (MinMaxLossFairPCA, {}, True),
    "ConvexFairPCA": (ConvexFairPCA, {}, True),
    "MMDFairPCA": (MMDFairPCA, {"random_state": 0, "max_iter": 20}, False),
    "FairSparsePCA": (FairSparsePCA, {"n_nonzero": 4}, True),
}
DIRECT = {"MeanMatchingFairPCA"}
#: Supervised (fitted with a target): sparse X against dense in tests/test_fair_pls.py.
SUPERVISED = {"FairPLS"}
REFUSED = {
    "StreamingFairPCA": StreamingFairPCA,
    "FairKernelPCA": FairKernelPCA,
    "QuadraticErasure": QuadraticErasure,
}


def _table(n=900, seed=0, n_groups=3):
    """A dense block (offset, group-shifted) beside a one-hot block, and the groups."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, n_groups, n)
    numeric = rng.normal(5.0, 1.0, (n, 4)) + s[:, None] * np.array([1.0, 0.5, 0.0, 0.0])
    category = np.where(rng.random(n) < 0.3, s, rng.integers(0, 6, n))
    X = np.hstack([numeric, np.eye(6)[category]])
    return X, s, rng.uniform(0.2, 3.0, n)


def _projection(est):
    return est.components_.T @ (est.component_scales_[:, None] * est.components_)


def _relative(a, b):
    return np.abs(a - b).max() / max(np.abs(a).max(), 1e-300)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_every_estimator_accepts_or_refuses_sparse():
    """Each estimator is listed here, and its sparse tag says which it does."""
    exported = [getattr(fairpca, name) for name in fairpca.__all__]
    names = {obj.__name__ for obj in exported if isinstance(obj, type) and hasattr(obj, "fit")}
    assert names - {"FairPCABase"} == set(CASES) | set(REFUSED) | {"LinearErasure"} | SUPERVISED
    for name, (cls, *_) in CASES.items():
        assert get_tags(cls()).input_tags.sparse, name
    for name in SUPERVISED:
        assert get_tags(getattr(fairpca, name)()).input_tags.sparse, name
    assert get_tags(LinearErasure()).input_tags.sparse
    for cls in REFUSED.values():
        assert not get_tags(cls()).input_tags.sparse


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("with_covariates", [False, True])
def test_moments_equal_dense(fmt, weighted, with_covariates):
    X, s, w = _table()
    Z = np.random.default_rng(1).normal(10.0, 2.0, (X.shape[0], 2)) if with_covariates else None
    w = w if weighted else None
    dense = GroupMoments.from_arrays(X, s, Z, sample_weight=w)
    sparse_ = GroupMoments.from_arrays(fmt(X), s, Z, sample_weight=w)
    np.testing.assert_array_equal(sparse_.counts, dense.counts)
    np.testing.assert_allclose(sparse_.means, dense.means, rtol=1e-13, atol=1e-13)
    for a, b in zip(sparse_._joint(), dense._joint(), strict=True):
        assert _relative(b, a) < 1e-12


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("fmt", [sparse.csr_matrix, sparse.csc_matrix])
def test_fit_and_transform_equal_dense(name, fmt):
    cls, params, _ = CASES[name]
    X, s, _ = _table(n=600 if name == "MMDFairPCA" else 900)
    dense = cls(n_components=2, **params).fit(X, sensitive_features=s)
    est = cls(n_components=2, **params).fit(fmt(X), sensitive_features=s)
    assert_same_answer(dense, est)
    # Same fitted map applied to sparse and dense data: rounding only.
    assert _relative(est.transform(X), est.transform(fmt(X))) < 1e-12
    if name in DIRECT:
        assert _relative(dense.transform(X), est.transform(fmt(X))) < 1e-9
        np.testing.assert_allclose(est.explained_variance_, dense.explained_variance_, rtol=1e-9)


@pytest.mark.parametrize("name", [n for n, case in CASES.items() if case[2]])
def test_weighted_fit_equals_dense(name):
    cls, params, _ = CASES[name]
    X, s, w = _table()
    dense = cls(n_components=2, **params).fit(X, sensitive_features=s, sample_weight=w)
    est = cls(n_components=2, **params).fit(
        sparse.csr_matrix(X), sensitive_features=s, sample_weight=w
    )
    assert_same_answer(dense, est)


def test_mmd_refuses_sample_weight_on_sparse_as_on_dense():
    X, s, w = _table(n=200)
    for data in (X, sparse.csr_matrix(X)):
        with pytest.raises(TypeError, match="sample_weight"):
            MMDFairPCA().fit(data, sensitive_features=s, sample_weight=w)


def test_mmd_refuses_every_row_of_sparse_x():
    X, s, _ = _table(n=200)
    with pytest.raises(ValueError, match="densify all of the sparse X"):
        MMDFairPCA(max_samples=None).fit(sparse.csr_matrix(X), sensitive_features=s)


@pytest.mark.parametrize("weighted", [False, True])
def test_linear_erasure_equals_dense(weighted):
    X, s, w = _table()
    w = w if weighted else None
    dense = LinearErasure().fit(X, sensitive_features=s, sample_weight=w)
    est = LinearErasure().fit(sparse.csc_matrix(X), sensitive_features=s, sample_weight=w)
    assert _relative(dense.erasure_, est.erasure_) < 1e-10
    out = est.transform(sparse.csr_matrix(X))
    assert isinstance(out, np.ndarray)
    assert _relative(dense.transform(X), out) < 1e-10


def test_group_blind_partial_fit_and_inverse_transform():
    X, s, _ = _table()
    Xs = sparse.csr_matrix(X)
    dense = MeanMatchingFairPCA(n_components=3).fit(X)
    est = MeanMatchingFairPCA(n_components=3).fit(Xs)
    assert _relative(_projection(dense), _projection(est)) < 1e-10
    chunks = MeanMatchingFairPCA(n_components=3)
    for rows in np.array_split(np.arange(X.shape[0]), 3):
        chunks.partial_fit(Xs[rows], sensitive_features=s[rows])
    full = MeanMatchingFairPCA(n_components=3).fit(X, sensitive_features=s)
    assert _relative(_projection(full), _projection(chunks)) < 1e-10
    Z = full.transform(X)
    np.testing.assert_allclose(
        full.inverse_transform(sparse.csr_matrix(Z)), full.inverse_transform(Z), atol=1e-12
    )


def test_offset_columns_keep_their_digits():
    """A column with a large common offset, and a one-hot column constant in a group."""
    X, s, w = _table()
    X[:, 0] = 1e6 + X[:, 0]  # G_jj / S_jj ~ 1e12: centring after summing would lose it all
    X[:, 4] = (s == 1).astype(float)  # constant within every group: scatter exactly zero
    for weights in (None, w):
        exact = _two_pass_scatters(X, s, np.ones(len(s)) if weights is None else weights)
        sparse_ = GroupMoments.from_arrays(sparse.csr_matrix(X), s, sample_weight=weights)
        # Entry-wise, relative to sqrt(S_jj S_kk), the scale each entry has.
        diagonal = np.diagonal(exact, axis1=1, axis2=2)
        scale = np.sqrt(diagonal[:, :, None] * diagonal[:, None, :])
        assert np.all(np.abs(sparse_.scatters - exact) <= 1e-10 * scale + 1e-15 * scale.max())
        assert np.all(sparse_.scatters[:, 4, :] == 0)
    est = MeanMatchingFairPCA(n_components=2).fit(sparse.csr_matrix(X), sensitive_features=s)
    ref = MeanMatchingFairPCA(n_components=2).fit(X, sensitive_features=s)
    assert _relative(_projection(ref), _projection(est)) < 1e-9
    assert _relative(ref.transform(X), est.transform(sparse.csr_matrix(X))) < 1e-9


def _two_pass_scatters(X, s, w):
    """Reference scatters: centre each group's rows on their mean, then multiply."""
    scatters = []
    for a in np.unique(s):
        Xa, wa = X[s == a], w[s == a]
        D = Xa - wa @ Xa / wa.sum()
        scatters.append(D.T @ (wa[:, None] * D))
    return np.array(scatters)


def test_centred_product_guards_offset_columns():
    rng = np.random.default_rng(0)
    X = np.column_stack([1e8 + rng.normal(size=50), rng.random(50) < 0.1])
    mean, B = X.mean(axis=0), rng.normal(size=(2, 3))
    exact = (X - mean) @ B
    guarded = centred_product(sparse.csr_matrix(X), mean, B, X.var(axis=0), 100.0)
    assert _relative(exact, guarded) < 1e-12


def _wide_one_hot(n=20000, blocks=20, levels=50, seed=0):
    """``blocks`` one-hot encoded columns of ``levels`` categories: 1/levels non-zeros."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, levels, (n, blocks)) + levels * np.arange(blocks)
    rows = np.repeat(np.arange(n), blocks)
    X = sparse.csr_matrix((np.ones(n * blocks), (rows, codes.ravel())), shape=(n, blocks * levels))
    return X, rng.integers(0, 3, n)


def test_fit_never_densifies_x(monkeypatch):
    """Only moment-sized matrices (p columns, at most p rows) are ever made dense."""
    X, s = _wide_one_hot(n=3000, blocks=6, levels=10)
    p = X.shape[1]

    def guarded(method):
        def densify(self, *args, **kwargs):
            if self.shape[0] > p:
                raise AssertionError(f"a {self.shape} sparse matrix was densified")
            return method(self, *args, **kwargs)

        return densify

    for cls in (sparse.csr_matrix, sparse.csc_matrix, sparse.coo_matrix, sparse.csr_array):
        for name in ("toarray", "todense"):
            monkeypatch.setattr(cls, name, guarded(getattr(cls, name)))
    for cls, params in [
        (MeanMatchingFairPCA, {}),
        (ParetoFairPCA, {}),
        (RobustFairPCA, {"random_state": 0, "n_iter": 50}),
        (MinMaxLossFairPCA, {}),
    ]:
        est = cls(n_components=2, **params).fit(X, sensitive_features=s)
        assert est.transform(X).shape[0] == X.shape[0]
    LinearErasure().fit(X, sensitive_features=s)


def test_moment_pass_memory_is_that_of_the_moments():
    """On a wide one-hot X, peak memory is a few p x p matrices, not the dense n x p."""
    X, s = _wide_one_hot(n=40000, blocks=20, levels=50)  # 40000 x 1000, 2 % non-zeros
    n, p = X.shape
    tracemalloc.start()
    try:
        GroupMoments.from_arrays(X, s)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    dense_bytes = 8 * n * p
    assert peak < dense_bytes / 4
    assert peak < 8 * 8 * p * p  # three groups' scatters and the temporaries of one


@pytest.mark.parametrize("name", list(REFUSED))
def test_row_reading_estimators_refuse_sparse(name):
    X, s, _ = _table(n=200)
    with pytest.raises(TypeError, match=rf"{name} does not accept sparse X.*toarray\(\)"):
        cls = REFUSED[name]
        params = {"n_components": 2} if "n_components" in cls().get_params() else {}
        cls(**params).fit(sparse.csr_matrix(X), sensitive_features=s)


def test_non_finite_sparse_values_are_refused():
    X, s, _ = _table(n=200)
    X[3, 6] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MeanMatchingFairPCA().fit(sparse.csr_matrix(X), sensitive_features=s)
    with pytest.raises(ValueError, match="NaN"):
        GroupMoments.from_arrays(sparse.csr_matrix(X), s)

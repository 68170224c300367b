"""scikit-learn's common invariants on the fair path: every estimator fitted WITH groups.

scikit-learn's own checks (tests/test_base.py) call ``fit`` without
``sensitive_features`` and so exercise only the group-blind fallback; these
apply the same invariants to the fit users make (and its ``transform`` with
the groups where the estimator's transform needs them, see ``transform_groups``).
"""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

import fairpca
from fairpca.datasets import make_gaussian_groups
from transform_groups import transform_kwargs

X, S = make_gaussian_groups(n_samples=240, n_features=5, n_groups=3, random_state=9)


def _small(cls):
    params = {
        fairpca.MMDFairPCA: {"max_iter": 5, "random_state": 0},
        fairpca.RobustFairPCA: {"n_iter": 30, "n_restarts": 1, "random_state": 0},
        fairpca.FairKernelPCA: {"random_state": 0},
        fairpca.StreamingFairPCA: {"unfair_rank": 1, "random_state": 0},
    }.get(cls, {})
    if "n_components" in cls().get_params():
        params["n_components"] = 2
    return cls(**params)


# FairPLS (supervised: fit needs y) has these checks in tests/test_fair_pls.py.
ESTIMATORS = [
    pytest.param(cls, id=cls.__name__) for cls in fairpca.all_estimators(supervised=False)
]


def _fit(est, data=X, groups=S):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(data, sensitive_features=groups)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_fit_returns_self_and_is_idempotent(cls):
    est = _small(cls)
    assert _fit(est) is est
    first = est.transform(X, **transform_kwargs(est, S))
    np.testing.assert_allclose(
        _fit(est).transform(X, **transform_kwargs(est, S)), first, atol=1e-10
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        together = _small(cls).fit_transform(X, sensitive_features=S)
    np.testing.assert_allclose(np.abs(together), np.abs(first), atol=1e-8)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_clone_and_pickle(cls):
    est = _fit(_small(cls))
    copy = clone(est)
    assert copy.get_params() == est.get_params()
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(copy))
    restored = pickle.loads(pickle.dumps(est))
    kwargs = transform_kwargs(est, S)
    np.testing.assert_array_equal(restored.transform(X, **kwargs), est.transform(X, **kwargs))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_n_features_in_and_feature_names(cls):
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)])
    est = _fit(_small(cls), frame)
    assert est.n_features_in_ == 5
    assert list(est.feature_names_in_) == list(frame.columns)
    with pytest.raises(ValueError, match="features"):
        est.transform(X[:, :4], **transform_kwargs(est, S))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_dtypes_give_the_float64_answer(cls):
    def fit_transform(data):
        est = _fit(_small(cls), data)
        return est.transform(data, **transform_kwargs(est, S))

    reference = fit_transform(X)
    rounded = np.round(X * 8) / 8  # exactly representable as float32 and as integers / 8
    base = fit_transform(rounded)
    as32 = fit_transform(rounded.astype(np.float32))
    assert as32.dtype == np.float64 and reference.dtype == np.float64
    np.testing.assert_allclose(as32, base, atol=1e-8)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_set_output_pandas(cls):
    est = _fit(_small(cls)).set_output(transform="pandas")
    kwargs = transform_kwargs(est, S)
    out = est.transform(X, **kwargs)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(est.get_feature_names_out())
    default = est.set_output(transform="default").transform(X, **kwargs)
    np.testing.assert_allclose(out.to_numpy(), default)

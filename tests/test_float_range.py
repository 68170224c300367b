"""The whole float range: scale-free methods give the same answer at any magnitude of X
whose second moments fit float64, and data outside that range is refused by name."""

import warnings

import numpy as np
import pytest

import fairpca
from fairpca.datasets import make_gaussian_groups

#: Methods whose hyper-parameters carry no units of X (ConvexFairPCA's delta and
#: RobustFairPCA's radii are lengths in the units of X: scaling X changes the problem).
SCALE_FREE = [
    fairpca.MMDFairPCA,
    fairpca.MeanMatchingFairPCA,
    fairpca.MinMaxLossFairPCA,
    fairpca.ParetoFairPCA,
]


def _fit(cls, X, s):
    params = {"random_state": 0} if "random_state" in cls().get_params() else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(n_components=2, **params).fit(X, sensitive_features=s)


def _projector(est):
    return est.components_.T @ np.diag(est.component_scales_) @ est.components_


@pytest.mark.parametrize("cls", SCALE_FREE, ids=lambda c: c.__name__)
@pytest.mark.parametrize("exponent", [-460, -300, -100, 100, 300, 490])
def test_scale_free_methods_give_the_same_projection_at_any_magnitude(cls, exponent):
    X, s = make_gaussian_groups(n_samples=300, n_features=5, random_state=0)
    reference = _fit(cls, X, s)
    scaled = _fit(cls, X * 2.0**exponent, s)  # a power of two: X itself is scaled exactly
    np.testing.assert_allclose(_projector(scaled), _projector(reference), atol=1e-8)
    np.testing.assert_allclose(
        scaled.explained_variance_ratio_, reference.explained_variance_ratio_, rtol=1e-8
    )


@pytest.mark.parametrize(
    "cls",
    [*fairpca.all_estimators(), fairpca.LinearErasure, fairpca.FairKernelPCA],
    ids=lambda c: c.__name__,
)
@pytest.mark.parametrize(
    ("scale", "match"),
    [
        (1e-160, "too small in magnitude"),
        (1e-300, "too small in magnitude"),
        (1e200, "too large in magnitude|overflow"),
    ],
)
def test_data_outside_the_range_is_refused_by_name(cls, scale, match):
    X, s = make_gaussian_groups(n_samples=120, n_features=4, random_state=1)
    est = cls()
    with pytest.raises(ValueError, match=match):
        est.fit(X * scale, sensitive_features=s)
    assert not hasattr(est, "n_features_in_")


def test_constant_data_is_refused_for_a_fair_fit():
    s = np.repeat([0, 1], 20)
    for cls in fairpca.all_estimators():
        with pytest.raises(ValueError, match="zero variance"):
            cls(n_components=1).fit(np.full((40, 3), 7.0), sensitive_features=s)

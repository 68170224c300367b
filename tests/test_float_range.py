"""The whole float range: scale-free methods give the same answer at any magnitude of X
whose second moments fit float64, and data outside that range is refused by name."""

import warnings

import numpy as np
import pytest

import fairpca
from fairpca.datasets import make_gaussian_groups

#: Methods whose hyper-parameters carry no units of X (ConvexFairPCA's delta is a length in
#: the units of X, and RobustFairPCA's answer moves with the scale of X, measured).
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


def _three_groups():
    """Three groups on which MinMaxLossFairPCA's rounding once depended on the scale of X.

    Its vertex search mixed losses in the units of X squared with unit coefficients,
    so at 2^-40 it returned another vertex (objective 12.49 instead of 4.24).
    """
    rng = np.random.default_rng(244)
    sizes = rng.integers(15, 40, size=3)
    parts = [rng.normal(size=(m, 4)) @ rng.normal(size=(4, 4)) + rng.normal(size=4) for m in sizes]
    return np.vstack(parts), np.repeat(np.arange(3), sizes)


@pytest.mark.parametrize("cls", SCALE_FREE, ids=lambda c: c.__name__)
@pytest.mark.parametrize("exponent", [-460, -300, -100, -40, 100, 300, 490])
@pytest.mark.parametrize("groups", [2, 3])
def test_scale_free_methods_give_the_same_projection_at_any_magnitude(cls, exponent, groups):
    if groups == 2:
        X, s = make_gaussian_groups(n_samples=300, n_features=5, random_state=0)
    else:
        X, s = _three_groups()
    reference = _fit(cls, X, s)
    scaled = _fit(cls, X * 2.0**exponent, s)  # a power of two: X itself is scaled exactly
    np.testing.assert_allclose(_projector(scaled), _projector(reference), atol=1e-8)
    # The subspace's share (a basis inside it need not be the same for every method).
    assert scaled.explained_variance_ratio_.sum() == pytest.approx(
        reference.explained_variance_ratio_.sum(), rel=1e-8
    )


@pytest.mark.parametrize(
    "cls",
    fairpca.all_estimators(supervised=False),  # FairPLS: tests/test_fair_pls.py
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
    # Four features leave room for StreamingFairPCA's default 2 + 2 directions only at m = 1.
    est = cls(unfair_rank=1) if cls is fairpca.StreamingFairPCA else cls()
    with pytest.raises(ValueError, match=match):
        est.fit(X * scale, sensitive_features=s)
    assert not hasattr(est, "n_features_in_")


def test_constant_data_is_refused_for_a_fair_fit():
    s = np.repeat([0, 1], 20)
    for cls in fairpca.all_estimators(supervised=False):  # FairPLS: tests/test_fair_pls.py
        if not issubclass(cls, fairpca.FairPCABase):
            continue  # their own messages: test_erasure, test_kernel_pca, test_streaming
        with pytest.raises(ValueError, match="zero variance"):
            cls(n_components=1).fit(np.full((40, 3), 7.0), sensitive_features=s)

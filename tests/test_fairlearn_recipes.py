"""The fairlearn recipes of the user guide ("Fitting without groups"), end to end.

fairlearn's meta-estimators forward no metadata routing: ``ThresholdOptimizer``
passes its ``**kwargs`` to ``estimator.fit``, ``ExponentiatedGradient`` only the
sample weights. A fair step that gets no ``sensitive_features`` fits its
group-blind answer with a ``GroupBlindFitWarning``, or raises in strict mode;
these tests pin both, and the recipes that do fit the fair method.
"""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

import fairpca
from fairpca import MeanMatchingFairPCA
from fairpca.datasets import make_gaussian_groups

pytest.importorskip("fairlearn")
from fairlearn.metrics import MetricFrame, demographic_parity_difference, selection_rate  # noqa: E402
from fairlearn.postprocessing import ThresholdOptimizer  # noqa: E402
from fairlearn.reductions import DemographicParity, ExponentiatedGradient  # noqa: E402

# fairlearn's own use of pandas, not ours.
pytestmark = pytest.mark.filterwarnings("ignore:Setting a value on a Series via .at")


@pytest.fixture(scope="module")
def data():
    X, s, y = make_gaussian_groups(n_samples=400, n_features=5, random_state=0, return_target=True)
    return X, np.where(s == 1, "b", "a"), y


def _pipeline(**fair_params):
    return Pipeline([("fair", MeanMatchingFairPCA(**fair_params)), ("clf", LogisticRegression())])


def _optimizer(pipe):
    return ThresholdOptimizer(
        estimator=pipe, constraints="demographic_parity", predict_method="predict_proba"
    )


def test_threshold_optimizer_alone_fits_group_blind_with_the_warning(data):
    X, s, y = data
    to = _optimizer(_pipeline())
    with pytest.warns(fairpca.GroupBlindFitWarning, match="MeanMatchingFairPCA.fit was called"):
        to.fit(X, y, sensitive_features=s)
    fair = to.estimator_.named_steps["fair"]
    assert fair.groups_ is None  # group-blind PCA: said, not silent


def test_threshold_optimizer_alone_raises_in_strict_mode(data):
    X, s, y = data
    with fairpca.config_context(require_groups=True):
        with pytest.raises(ValueError, match="groups are required"):
            _optimizer(_pipeline()).fit(X, y, sensitive_features=s)
    # The parameter survives fairlearn's clone of the pipeline.
    pipe = _pipeline(require_groups=True)
    assert clone(pipe).named_steps["fair"].require_groups is True
    with pytest.raises(ValueError, match=r"MeanMatchingFairPCA\(require_groups=True\)"):
        _optimizer(pipe).fit(X, y, sensitive_features=s)


def test_threshold_optimizer_recipe_fits_the_fair_method(data):
    X, s, y = data
    to = _optimizer(_pipeline(require_groups=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error", fairpca.GroupBlindFitWarning)
        to.fit(X, y, sensitive_features=s, fair__sensitive_features=s)
    fair = to.estimator_.named_steps["fair"]
    np.testing.assert_array_equal(fair.groups_, ["a", "b"])
    direct = MeanMatchingFairPCA().fit(X, sensitive_features=s)
    # The same computation on the same rows: equal to rounding.
    np.testing.assert_allclose(fair.components_, direct.components_, atol=1e-12)
    np.testing.assert_allclose(fair.mean_, direct.mean_, atol=1e-12)
    # MetricFrame on its output: selection rates per group, nearly equal (the
    # optimizer's constraint on the training rows).
    y_pred = to.predict(X, sensitive_features=s, random_state=0)
    frame = MetricFrame(
        metrics={"selection_rate": selection_rate}, y_true=y, y_pred=y_pred, sensitive_features=s
    )
    assert list(frame.by_group.index) == ["a", "b"]
    assert frame.difference()["selection_rate"] < 0.1


def test_exponentiated_gradient_cannot_pass_groups_to_the_fair_step(data):
    """It calls estimator.fit(X, y, sample_weight=w) and nothing else: strict mode says so."""
    X, s, y = data
    eg = ExponentiatedGradient(
        _pipeline(require_groups=True), DemographicParity(), sample_weight_name="clf__sample_weight"
    )
    with pytest.raises(ValueError, match="groups are required"):
        eg.fit(X, y, sensitive_features=s)


def test_exponentiated_gradient_recipe_with_a_frozen_fair_step(data):
    from sklearn.frozen import FrozenEstimator

    X, s, y = data
    fair = MeanMatchingFairPCA(require_groups=True).fit(X, sensitive_features=s)
    pipe = Pipeline([("fair", FrozenEstimator(fair)), ("clf", LogisticRegression())])
    eg = ExponentiatedGradient(pipe, DemographicParity(), sample_weight_name="clf__sample_weight")
    eg.fit(X, y, sensitive_features=s)
    # Every classifier of the reduction reads the fair representation fitted with groups.
    for predictor in eg.predictors_:
        assert predictor.named_steps["fair"].estimator is fair
    np.testing.assert_array_equal(fair.groups_, ["a", "b"])
    np.testing.assert_allclose(
        fair.components_,
        MeanMatchingFairPCA().fit(X, sensitive_features=s).components_,
        atol=1e-12,
    )
    y_pred = eg.predict(X, random_state=0)
    frame = MetricFrame(
        metrics={"selection_rate": selection_rate}, y_true=y, y_pred=y_pred, sensitive_features=s
    )
    assert frame.difference()["selection_rate"] == pytest.approx(
        demographic_parity_difference(y, y_pred, sensitive_features=s)
    )
    assert frame.difference()["selection_rate"] < 0.1

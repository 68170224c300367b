"""Classifier-based metrics: group separability and downstream fairness.

fairlearn (for :func:`downstream_fairness`) and the scikit-learn models are
imported inside the functions.
"""

from __future__ import annotations

import numbers
from itertools import combinations
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import ks_2samp

from fairpca._validation import check_data, check_sensitive_features
from fairpca.metrics._projection import _labels, _representation

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator
    from sklearn.model_selection import BaseCrossValidator, BaseShuffleSplit


def _import_fairlearn_metrics():
    try:
        import fairlearn.metrics as flm
    except ImportError as exc:
        raise ImportError(
            "fairpca.metrics.downstream_fairness needs fairlearn; install it with "
            'pip install "fairpca[fairness]".'
        ) from exc
    return flm


def _make_cv(cv, random_state):
    from sklearn.model_selection import StratifiedKFold

    if isinstance(cv, numbers.Integral) and not isinstance(cv, (bool, np.bool_)):
        if cv < 2:
            raise ValueError(f"cv must be at least 2 folds, got {cv}.")
        return StratifiedKFold(n_splits=int(cv), shuffle=True, random_state=random_state), int(cv)
    if hasattr(cv, "split"):
        n_splits = cv.get_n_splits() if hasattr(cv, "get_n_splits") else None
        return cv, n_splits
    raise TypeError(f"cv must be an int >= 2 or a cross-validation splitter, got {cv!r}.")


def _classifier(classifier, builtin, method):
    """A fresh classifier: a named built-in, or a clone of an estimator with ``method``.

    ``builtin`` maps names to zero-argument factories.
    """
    from sklearn.base import clone

    names = " or ".join(repr(name) for name in builtin)
    if isinstance(classifier, str):
        if classifier not in builtin:
            raise ValueError(
                f"classifier must be {names} or a classifier instance, got {classifier!r}."
            )
        return builtin[classifier]()
    if hasattr(classifier, "fit") and hasattr(classifier, method):
        return clone(classifier)
    raise TypeError(
        f"classifier must be {names} or an estimator with fit and {method}, "
        f"got {type(classifier).__name__}."
    )


def group_separability(
    X: ArrayLike,
    sensitive_features: ArrayLike,
    projection: BaseEstimator | ArrayLike,
    *,
    classifier: Literal["logistic", "linear_svm"] | BaseEstimator = "logistic",
    cv: int | BaseCrossValidator | BaseShuffleSplit = 5,
    random_state: int | np.random.RandomState | None = None,
) -> float:
    r"""Estimate of Olfat & Aswani's linear adversarial unfairness Δ_A(F_lin).

    [Olfat2019]_ (restated in appendix B of [Lee2022]_) call a projection
    ``Delta_A(F_lin)``-fair if no linear classifier ``h(z) = 1(w^T z <= t)``
    predicting the group from the representation ``z`` separates the groups
    by more than ``Delta``:

    .. math:: \Delta_A(\mathcal F_{lin}) = \sup_w \sup_t
              | P(w^T z \le t \mid a) - P(w^T z \le t \mid b) |,

    i.e. the largest Kolmogorov(-Smirnov) distance between the groups'
    distributions of a linear score. This function picks ``w`` by fitting a
    linear classifier of group membership on the representation, computes
    **out-of-fold** decision scores with ``cross_val_predict`` (stratified,
    shuffled, seeded folds) and returns the two-sample KS distance between
    the groups' scores (sup over all thresholds ``t``). Because ``w`` is
    fitted rather than maximised over and scores are out of sample, it is an
    honest estimate from below of the supremum. With ``k > 2`` groups a
    classifier is fitted for every pair of groups (on their rows only) and
    the maximum over pairs is returned. 0 means no linear direction
    separates the groups; 1 means perfectly separable.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row.
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`; any other fitted transformer
        (e.g. FairKernelPCA, LinearErasure) is also accepted, its
        representation being ``transform(X)``.
    classifier : {"logistic", "linear_svm"} or estimator, default="logistic"
        ``"logistic"``: :class:`~sklearn.linear_model.LogisticRegression`;
        ``"linear_svm"``: :class:`~sklearn.svm.LinearSVC`; or any classifier
        with ``decision_function`` (cloned).
    cv : int or cross-validation splitter, default=5
        Folds; an int means ``StratifiedKFold(cv, shuffle=True)``.
    random_state : int, RandomState instance or None, default=None
        Seed of the folds (and of ``LinearSVC``).

    Returns
    -------
    separability : float
        In ``[0, 1]``.
    """
    from sklearn.base import clone
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict
    from sklearn.svm import LinearSVC

    model = _classifier(
        classifier,
        {
            "logistic": lambda: LogisticRegression(max_iter=1000),
            "linear_svm": lambda: LinearSVC(random_state=random_state),
        },
        "decision_function",
    )
    X = check_data(X, "X")
    splitter, n_splits = _make_cv(cv, random_state)
    groups, codes = check_sensitive_features(
        sensitive_features, X.shape[0], min_groups=2, min_group_size=n_splits or 1
    )
    Z, _ = _representation(projection, X)
    best = 0.0
    for a, b in combinations(range(len(groups)), 2):
        mask = (codes == a) | (codes == b)
        target = (codes[mask] == b).astype(int)
        scores = cross_val_predict(
            clone(model), Z[mask], target, cv=splitter, method="decision_function"
        )
        gap = ks_2samp(scores[target == 0], scores[target == 1], method="asymp").statistic
        best = max(best, gap)
    return float(best)


def _check_binary_y(y, n_samples, pos_label):
    if y is None:
        raise ValueError("y is required: pass one binary label per row of X.")
    y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}.")
    if y.shape[0] != n_samples:
        raise ValueError(
            f"y has {y.shape[0]} labels but X has {n_samples} rows; they must have the same length."
        )
    # The shared label encoder: one hash pass, and it names missing or mixed labels.
    classes, codes = check_sensitive_features(y, n_samples, name="y")
    if classes.size != 2:
        raise ValueError(
            f"y must be binary (exactly two classes), found {classes.size} class(es): "
            f"{classes[:10].tolist()}."
        )
    if pos_label is None:
        pos_label = classes[1]
    elif pos_label not in classes.tolist():
        raise ValueError(f"pos_label={pos_label!r} is not one of the classes of y {classes}.")
    return (codes == classes.tolist().index(pos_label)).astype(int)


def downstream_fairness(
    X: ArrayLike,
    y: ArrayLike,
    sensitive_features: ArrayLike,
    projection: BaseEstimator | ArrayLike,
    *,
    classifier: Literal["rbf_svm", "linear_svm"] | BaseEstimator = "rbf_svm",
    cv: int | BaseCrossValidator | BaseShuffleSplit = 5,
    random_state: int | np.random.RandomState | None = None,
    pos_label: object = None,
) -> dict[str, float]:
    """Accuracy and group-fairness gaps of a classifier trained on the representation.

    The protocol of [Lee2022]_ (RBF SVM; ``Delta_DP``) and [Kamani]_ (linear
    SVM; ``DEO = |TPR_0 - TPR_1|``), with one correction: predictions are
    **out of fold** (``cross_val_predict`` with stratified, shuffled, seeded
    folds), so every row is scored by a classifier that did not see it.
    Gaps use fairlearn's metric functions with ``method="between_groups"``
    (largest minus smallest over groups):

    * ``demographic_parity_difference``: gap in ``P(yhat = 1 | group)``;
    * ``equal_opportunity_difference``: gap in ``P(yhat = 1 | y = 1, group)``;
    * ``equalized_odds_difference``: the larger of the true- and
      false-positive-rate gaps.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data.
    y : array-like of shape (n_samples,)
        Binary target (exactly two classes).
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row; every group needs both classes of ``y``.
    projection : estimator or array-like of shape (n_components, n_features)
        See :func:`group_reconstruction_error`; any other fitted transformer
        (e.g. FairKernelPCA, LinearErasure) is also accepted, its
        representation being ``transform(X)``.
    classifier : {"rbf_svm", "linear_svm"} or estimator, default="rbf_svm"
        ``"rbf_svm"``: ``sklearn.svm.SVC(kernel="rbf")``; ``"linear_svm"``:
        ``sklearn.svm.LinearSVC``; or any scikit-learn classifier (cloned).
    cv : int or cross-validation splitter, default=5
        Folds; an int means ``StratifiedKFold(cv, shuffle=True)`` on ``y``.
    random_state : int, RandomState instance or None, default=None
        Seed of the folds (and of ``LinearSVC``).
    pos_label : scalar, default=None
        The positive class; by default the larger of the two sorted labels.

    Returns
    -------
    result : dict
        Keys ``"accuracy"``, ``"demographic_parity_difference"``,
        ``"equal_opportunity_difference"``, ``"equalized_odds_difference"``
        and ``"positive_rate"`` (share of rows predicted positive: 0 or 1
        means the classifier predicts one class, and its parity gaps are 0
        without saying anything about fairness).
    """
    from sklearn.model_selection import cross_val_predict
    from sklearn.svm import SVC, LinearSVC

    model = _classifier(
        classifier,
        {
            "rbf_svm": lambda: SVC(kernel="rbf"),
            "linear_svm": lambda: LinearSVC(random_state=random_state),
        },
        "predict",
    )
    X = check_data(X, "X")
    groups, codes = check_sensitive_features(sensitive_features, X.shape[0], min_groups=2)
    y01 = _check_binary_y(y, X.shape[0], pos_label)
    Z, _ = _representation(projection, X)
    splitter, n_splits = _make_cv(cv, random_state)
    if n_splits is not None:
        class_counts = np.bincount(y01, minlength=2)
        if np.any(class_counts < n_splits):
            raise ValueError(
                f"y: each class needs at least cv={n_splits} rows, got {class_counts.tolist()} "
                "(negative, positive)."
            )
    for a, label in enumerate(_labels(groups)):
        present = np.unique(y01[codes == a])
        if present.size < 2:
            raise ValueError(
                f"sensitive_features: group {label!r} contains only one class of y; "
                "equal opportunity and equalised odds need both classes in every group."
            )
    flm = _import_fairlearn_metrics()
    pred = cross_val_predict(model, Z, y01, cv=splitter)
    return {
        "accuracy": float(np.mean(pred == y01)),
        "demographic_parity_difference": float(
            flm.demographic_parity_difference(y01, pred, sensitive_features=codes)
        ),
        "equal_opportunity_difference": float(
            flm.equal_opportunity_difference(y01, pred, sensitive_features=codes)
        ),
        "equalized_odds_difference": float(
            flm.equalized_odds_difference(y01, pred, sensitive_features=codes)
        ),
        "positive_rate": float(np.mean(pred)),
    }


def held_out_predictions(
    projection: BaseEstimator,
    X_train: ArrayLike,
    y_train: ArrayLike,
    X_test: ArrayLike,
    classifier: BaseEstimator,
) -> np.ndarray:
    """The held-out downstream classifier: trained on the training representation.

    A clone of ``classifier`` is fitted on ``projection.transform(X_train)`` to
    predict ``y_train`` and predicts the rows of ``projection.transform(X_test)``.
    Score its predictions with :func:`prediction_scores`. Used by
    :func:`fairpca.tradeoff_curve` (a logistic regression by default) and the
    papers' downstream tasks (Lee et al.'s RBF SVM, Kamani et al.'s linear SVM),
    each passing its own classifier.

    Parameters
    ----------
    projection : fitted transformer
    X_train, y_train : array-like
        Training rows (as the projection accepts them) and their target.
    X_test : array-like
        Held-out rows.
    classifier : estimator
        Any scikit-learn classifier (cloned, not modified).

    Returns
    -------
    predicted : ndarray of shape (n_test,)
    """
    from sklearn.base import clone

    model = clone(classifier).fit(projection.transform(X_train), y_train)
    return model.predict(projection.transform(X_test))


def _group_rates(values, codes, n_groups, rows=None):
    """Mean of ``values`` over each group's ``rows`` (a mask; all rows when None).

    NaN for a group with none of ``rows``.
    """
    weights = np.ones(len(codes)) if rows is None else rows.astype(float)
    totals = np.bincount(codes, weights=weights, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(codes, weights=weights * values, minlength=n_groups) / totals


def _rate_gap(predicted, codes, n_groups, rows=None):
    """Largest minus smallest group rate of ``predicted == 1`` among ``rows``.

    NaN when a group has none of ``rows``.
    """
    rates = _group_rates(predicted, codes, n_groups, rows)
    if np.isnan(rates).any():
        return np.nan
    return float(rates.max() - rates.min())


def group_prediction_rates(
    y: ArrayLike, predicted: ArrayLike, sensitive_features: ArrayLike
) -> dict[str, dict]:
    """Per group: accuracy, true-positive rate and positive-prediction rate of predictions.

    Parameters
    ----------
    y, predicted : array-like of shape (n_samples,)
        Target and predictions, the positive class being 1.
    sensitive_features : array-like of shape (n_samples,)

    Returns
    -------
    rates : dict
        ``{"accuracy": {group: value}, "tpr": {...}, "positive_rate": {...}}``,
        groups sorted; NaN where a group has no row the rate needs.
    """
    y, predicted = np.asarray(y), np.asarray(predicted)
    groups, codes = check_sensitive_features(sensitive_features, len(y))
    labels, k = _labels(groups), len(groups)
    positive = (predicted == 1).astype(float)
    values = {
        "accuracy": _group_rates((predicted == y).astype(float), codes, k),
        "tpr": _group_rates(positive, codes, k, rows=y == 1),
        "positive_rate": _group_rates(positive, codes, k),
    }
    return {name: dict(zip(labels, rates.tolist(), strict=True)) for name, rates in values.items()}


def prediction_scores(
    y: ArrayLike, predicted: ArrayLike, sensitive_features: ArrayLike
) -> dict[str, float]:
    """Accuracy and group-fairness gaps of a classifier's predictions (positive class 1).

    Fairlearn's definitions (``method="between_groups"``): the gap in the
    groups' positive-prediction rate, true-positive rate, or the larger of
    the true- and false-positive-rate gaps; NaN when a group lacks the rows
    a rate needs. Computed with ``bincount`` (fairlearn's MetricFrame costs
    milliseconds per call); equal to fairlearn's (tested). The trade-off
    curve's bootstrap computes the same gaps on every resample at once
    (:func:`resampled_prediction_gaps`).

    Returns
    -------
    scores : dict
        The keys of :func:`downstream_fairness`: ``"accuracy"``,
        ``"demographic_parity_difference"``, ``"equal_opportunity_difference"``,
        ``"equalized_odds_difference"`` and ``"positive_rate"``.
    """
    y, predicted = np.asarray(y), np.asarray(predicted)
    groups, codes = check_sensitive_features(sensitive_features, len(y))
    k = len(groups)
    positive = (predicted == 1).astype(float)
    true_positive = _rate_gap(positive, codes, k, rows=y == 1)
    return {
        "accuracy": float(np.mean(predicted == y)),
        "demographic_parity_difference": _rate_gap(positive, codes, k),
        "equal_opportunity_difference": true_positive,
        "equalized_odds_difference": float(
            np.max([true_positive, _rate_gap(positive, codes, k, rows=y == 0)])
        ),
        "positive_rate": float(np.mean(positive)),
    }


#: The rows :func:`downstream_baselines` returns, as they appear in the comparison's table.
BASELINES = ("baseline: majority class", "baseline: all features")


def downstream_baselines(
    X: ArrayLike,
    y: ArrayLike,
    sensitive_features: ArrayLike,
    *,
    classifier: Literal["rbf_svm", "linear_svm"] | BaseEstimator = "rbf_svm",
    cv: int | BaseCrossValidator | BaseShuffleSplit = 5,
    random_state: int | np.random.RandomState | None = None,
) -> dict[str, dict[str, float]]:
    """What the downstream metrics read against: the majority class and all features.

    The protocol of :func:`downstream_fairness` (out-of-fold predictions on
    ``X``) with two reference representations: ``"baseline: majority class"``
    predicts the training folds' most frequent class (its accuracy is the
    majority rate, its parity gaps 0); ``"baseline: all features"`` trains the
    classifier on ``X`` itself, with no projection.

    Returns
    -------
    baselines : dict
        ``{row name: downstream_fairness's dict}``, keyed by :data:`BASELINES`.
    """
    from sklearn.dummy import DummyClassifier
    from sklearn.preprocessing import FunctionTransformer

    X = check_data(X, "X")
    identity = FunctionTransformer().fit(X)
    common = {"cv": cv, "random_state": random_state}
    return {
        BASELINES[0]: downstream_fairness(
            X, y, sensitive_features, identity, classifier=DummyClassifier(), **common
        ),
        BASELINES[1]: downstream_fairness(
            X, y, sensitive_features, identity, classifier=classifier, **common
        ),
    }


def resampled_prediction_gaps(
    y: np.ndarray, predicted: np.ndarray, codes: np.ndarray, counts: np.ndarray
) -> dict[str, np.ndarray]:
    """:func:`prediction_scores`'s group gaps on many resamples at once.

    Resample ``r`` takes row ``i`` ``counts[r, i]`` times (bootstrap counts),
    so a group's rate on it is a ratio of two count-weighted sums, one matrix
    product for every resample and group. Equal to :func:`prediction_scores`
    on the resampled rows (to rounding; tested against fairlearn's).

    Parameters
    ----------
    y, predicted : ndarray of shape (n_samples,)
        Target and predictions, the positive class being 1.
    codes : ndarray of shape (n_samples,)
        Group codes ``0 .. k - 1``.
    counts : ndarray of shape (n_resamples, n_samples)
        How many times each resample takes each row.

    Returns
    -------
    gaps : dict
        ``"demographic_parity_difference"``, ``"equal_opportunity_difference"``
        and ``"equalized_odds_difference"``, each of shape ``(n_resamples,)``;
        NaN where a group has none of the rows a rate needs.
    """
    y, predicted = np.asarray(y), np.asarray(predicted)
    codes = np.asarray(codes)
    n_groups = int(codes.max()) + 1
    positive = (predicted == 1).astype(float)
    onehot = np.zeros((len(codes), n_groups))
    onehot[np.arange(len(codes)), codes] = 1.0

    def gap(rows):
        """Largest minus smallest group rate of positive predictions among ``rows``."""
        weights = onehot if rows is None else onehot * rows[:, None]
        totals = counts @ weights
        with np.errstate(invalid="ignore", divide="ignore"):
            rates = (counts @ (weights * positive[:, None])) / totals
        values = rates.max(axis=1) - rates.min(axis=1)
        values[np.isnan(rates).any(axis=1)] = np.nan
        return values

    true_positive = gap(y == 1)
    return {
        "demographic_parity_difference": gap(None),
        "equal_opportunity_difference": true_positive,
        # np.maximum propagates NaN, as prediction_scores' np.max does.
        "equalized_odds_difference": np.maximum(true_positive, gap(y == 0)),
    }

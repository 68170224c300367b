"""Held-out checks of the linear fairness guarantee on real data.

:class:`~fairpca.MeanMatchingFairPCA`, :class:`~fairpca.LinearErasure` and
:class:`~fairpca.FairKernelPCA` equalise the group means of their output on
the training rows, so no linear model of the output predicts the group better
than a constant there (Belrose et al., 2023). :func:`linear_guarantee_report`
measures what is left of this on held-out rows: how well a logistic
regression predicts the group (balanced accuracy, chance ``1/k``) and the
demographic-parity gap of a logistic regression of the target.
:func:`adult_intersections` prepares the data set with the most groups we ship:
Adult with its own train/test files and the sex x race intersections.
"""

import numpy as np

from fairpca._fitting import fit_estimator
from fairpca.datasets._real import load_adult
from fairpca.experiments._split import Split, one_hot, standardise

__all__ = ["adult_intersections", "linear_guarantee_report"]

_ADULT_CATEGORICAL = [
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
]


def adult_intersections(data_home=None):
    """Adult with two sensitive attributes, on UCI's own train/test files.

    Rows with a missing value are dropped (45,222 of 48,842 remain: 30,162
    from ``adult.data`` for training, 15,060 from ``adult.test`` for testing);
    ``fnlwgt`` is dropped; the other 13 attributes are one-hot encoded (103
    columns, sex and race included) and standardised with the training mean
    and population SD.

    Returns
    -------
    split : Split
        ``s_train`` and ``s_test`` have two columns, sex and race (strings):
        their 10 intersections are the groups. ``y`` is 1 for income > 50K.
    """
    bunch = load_adult(subset="all", data_home=data_home)
    frame = bunch.data.drop(columns=["fnlwgt"])
    complete = frame.notna().all(axis=1).to_numpy()
    frame, origin = frame[complete], bunch.subset.to_numpy()[complete]
    s = frame[["sex", "race"]].to_numpy(dtype=str)
    y = (bunch.target.to_numpy()[complete] == ">50K").astype(np.int64)
    encoded = one_hot(frame, _ADULT_CATEGORICAL)
    X = encoded.to_numpy(dtype=np.float64)
    train, test = origin == "train", origin == "test"
    X_train, X_test = standardise(X[train], X[test])
    description = (
        f"Adult, UCI train/test files, {int((~complete).sum())} rows with a missing value "
        f"dropped; {X.shape[1]} one-hot columns (sex and race included), standardised with "
        "training statistics; groups: sex x race."
    )
    return Split(
        X_train,
        X_test,
        s[train],
        s[test],
        y[train],
        y[test],
        list(map(str, encoded.columns)),
        int((~complete).sum()),
        description,
    )


def _row_groups(s):
    """One string per row naming its group: the label, or a 2-D table's row joined by " & "."""
    s = np.asarray(s)
    if s.ndim == 1:
        return s.astype(str)
    return np.array([" & ".join(map(str, row)) for row in s.tolist()])


def linear_guarantee_report(estimators, split):
    """Held-out group predictability and downstream parity of fitted representations.

    Each estimator is fitted on the training rows (``sensitive_features=s_train``;
    ``None`` stands for plain PCA fitted without groups) and both parts are
    transformed. Two logistic regressions (scikit-learn defaults,
    ``max_iter=1000``) are trained on the training representation: one of the
    group, one of the target.

    Parameters
    ----------
    estimators : dict of str to estimator
        Unfitted transformers; a fair method (the estimator registry's rule,
        :func:`fairpca._fitting.takes_groups`) is fitted with the groups, any
        other (e.g. :class:`sklearn.decomposition.PCA`) group-blind.
    split : Split
        Data with a binary target.

    Returns
    -------
    report : pandas.DataFrame
        One row per estimator: ``group_balanced_accuracy`` (test rows; chance
        is ``chance``), ``target_accuracy``, ``target_delta_dp`` (largest
        difference between two groups' positive-prediction rates on the test
        rows) and ``train_score_gap`` (largest difference between two groups'
        mean decision scores of the target model on the training rows: 0 up
        to rounding under the guarantee).
    """
    import pandas as pd
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score

    g_train, g_test = _row_groups(split.s_train), _row_groups(split.s_test)
    labels = np.unique(g_train)
    rows = []
    for name, estimator in estimators.items():
        fit_estimator(estimator, split.X_train, split.s_train)
        Z_train, Z_test = estimator.transform(split.X_train), estimator.transform(split.X_test)
        group_model = LogisticRegression(max_iter=1000).fit(Z_train, g_train)
        accuracy = balanced_accuracy_score(g_test, group_model.predict(Z_test))
        target_model = LogisticRegression(max_iter=1000).fit(Z_train, split.y_train)
        predicted = target_model.predict(Z_test)
        scores = target_model.decision_function(Z_train)
        rates = [np.mean(predicted[g_test == g]) for g in labels if np.any(g_test == g)]
        means = [np.mean(scores[g_train == g]) for g in labels]
        rows.append(
            {
                "method": name,
                "groups": len(labels),
                "chance": 1 / len(labels),
                "group_balanced_accuracy": float(accuracy),
                "target_accuracy": float(np.mean(predicted == split.y_test)),
                "target_delta_dp": float(max(rates) - min(rates)),
                "train_score_gap": float(max(means) - min(means)),
            }
        )
    return pd.DataFrame(rows).set_index("method")

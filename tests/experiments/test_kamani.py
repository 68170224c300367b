"""Kamani et al.: the protocol's groups, counts, split and integer coding."""

import numpy as np
import pytest
from experiments_support import assert_train_standardised

from fairpca.experiments import kamani


@pytest.mark.parametrize(
    ("dataset", "attribute", "groups", "n_rows", "n_features", "n_dropped"),
    [
        ("adult", "sex", {"Male": 21790, "Female": 10771}, 32561, 14, 0),
        (
            "adult",
            "race",
            {
                "White": 27816,
                "Black": 3124,
                "Asian-Pac-Islander": 1039,
                "Amer-Indian-Eskimo": 311,
                "Other": 271,
            },
            32561,
            14,
            0,
        ),
        ("default_credit", "sex", {"male": 11888, "female": 18112}, 30000, 23, 0),
        (
            "default_credit",
            "marriage",
            {"married": 13659, "single": 15964, "other": 323},
            29946,
            23,
            54,
        ),
    ],
)
@pytest.mark.requires_data
def test_kamani(dataset, attribute, groups, n_rows, n_features, n_dropped):
    result = kamani(dataset, attribute, split=6)
    s = np.r_[result.s_train, result.s_test]
    labels, counts = np.unique(s, return_counts=True)
    assert dict(zip(labels.tolist(), counts.tolist(), strict=True)) == groups
    assert result.X_train.shape == (int(0.7 * n_rows), n_features)
    assert result.n_dropped == n_dropped
    assert result.y_train is not None and set(np.unique(result.y_test)) == {0, 1}
    for group, count in groups.items():  # stratified by group
        assert abs((result.s_train == group).sum() - 0.7 * count) < 2
    assert_train_standardised(result)


@pytest.mark.requires_data
def test_kamani_adult_codes_categories_as_integers():
    result = kamani("adult", "sex", split=0)
    assert result.feature_names == [
        "age",
        "workclass",
        "fnlwgt",
        "education",
        "education-num",
        "marital-status",
        "occupation",
        "relationship",
        "race",
        "sex",
        "capital-gain",
        "capital-loss",
        "hours-per-week",
        "native-country",
    ]
    workclass = np.r_[result.X_train[:, 1], result.X_test[:, 1]]
    assert len(np.unique(workclass)) == 9  # 8 levels and the missing "?"
    # Integer codes, equally spaced after scaling.
    assert np.allclose(np.diff(np.unique(workclass)), np.diff(np.unique(workclass))[0])

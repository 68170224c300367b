"""Split and make_split live in fairpca.datasets; their former import paths are aliases."""

import numpy as np
import pandas as pd
import pytest

from fairpca import datasets


def test_split_and_make_split_are_one_object_under_every_name():
    import fairpca._split
    import fairpca.experiments

    assert fairpca._split.Split is datasets.Split is fairpca.experiments.Split
    assert fairpca.experiments.make_split is datasets.make_split


def test_make_split_encodes_stratifies_and_standardises():
    rng = np.random.default_rng(0)
    n = 200
    frame = pd.DataFrame({"x": rng.normal(3.0, 2.0, n), "colour": rng.choice(["r", "g"], n)})
    s = np.repeat(["a", "b"], [150, 50])
    split = datasets.make_split(frame, s, rng.integers(0, 2, n), test_size=0.25, random_state=1)
    assert isinstance(split, datasets.Split)
    assert split.feature_names == ["x", "colour_g", "colour_r"]
    np.testing.assert_allclose(split.X_train.mean(axis=0), 0.0, atol=1e-12)
    assert (split.s_test == "b").sum() in (12, 13)  # stratified: a quarter of 50
    assert "one-hot encoded" in split.description and split.n_dropped == 0


def test_make_split_refuses_missing_values_by_name():
    frame = pd.DataFrame({"x": [1.0, np.nan] * 20, "z": np.arange(40.0)})
    with pytest.raises(ValueError, match="'x' have missing values"):
        datasets.make_split(frame, np.repeat(["a", "b"], 20))
    split = datasets.make_split(frame, np.repeat(["a", "b"], 20), impute="drop-rows")
    assert split.n_dropped == 20

"""Samadi et al. (2018): the protocol against their MATLAB preprocessing."""

import numpy as np
import pytest
from experiments_support import data_dir

from fairpca.experiments import samadi2018


@pytest.mark.requires_data
def test_samadi_credit_matches_their_matlab_preprocessing():
    result = samadi2018("default_credit")
    # csvread('default_degree.csv', 2, 1) then data(:, 2:22), z-scored with MATLAB's std.
    raw = np.loadtxt(data_dir() / "default_credit/default_degree.csv", delimiter=",", skiprows=2)
    data = raw[:, 1:]
    features = data[:, 1:22]
    expected = (features - features.mean(axis=0)) / features.std(axis=0, ddof=1)
    np.testing.assert_allclose(result.X_train, expected, rtol=1e-12, atol=1e-12)
    assert result.X_test is result.X_train and result.y_train is None and result.y_test is None
    low = (data[:, 0] - 1) * (data[:, 0] - 2) != 0  # their "normalized" education indicator
    np.testing.assert_array_equal(result.s_train == "low", low)
    assert low.sum() == 5385
    assert result.feature_names[0] == "SEX" and result.feature_names[-1] == "PAY_AMT5"
    assert len(result.feature_names) == 21 and result.n_dropped == 0


@pytest.mark.slow
@pytest.mark.requires_data
def test_samadi_lfw():
    result = samadi2018("lfw")
    assert result.X_train.shape == (13232, 1764) and result.X_test is result.X_train
    assert (result.s_train == "female").sum() == 2962
    image = np.loadtxt(data_dir() / "lfw/samples/img13231.txt")
    np.testing.assert_allclose(result.X_train[13231], image.ravel() / 255, rtol=1e-6)
    assert 0 <= result.X_train.min() and result.X_train.max() <= 1

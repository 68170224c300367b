"""The refactored estimators give the projections recorded before the refactoring.

``projections.npz`` was written by ``record_projections.py`` on commit c186720
(before the one-home-per-concept reshaping); the projection matrix
``C^T diag(scales) C`` and the mean must match to 1e-10.
"""

import warnings

import numpy as np
import pytest
from record_projections import OUT, estimators, key, problems, projection

RECORDED = np.load(OUT)
PROBLEMS = problems()


@pytest.mark.parametrize("problem", list(PROBLEMS))
@pytest.mark.parametrize("method", list(estimators()))
def test_projection_matches_the_recorded_one(problem, method):
    X, s = PROBLEMS[problem]
    est = estimators()[method]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, sensitive_features=s)
    np.testing.assert_allclose(projection(est), RECORDED[key(problem, method)], rtol=0, atol=1e-10)
    np.testing.assert_allclose(est.mean_, RECORDED[key(problem, method) + "__mean"], atol=1e-12)

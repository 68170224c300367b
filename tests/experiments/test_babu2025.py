"""The babu2025-sparse target: the worst-group variance it measures, its claims, the theorems."""

import numpy as np
import pytest
from experiments_support import assert_checks_computed

from fairpca import experiments
from fairpca.experiments import kamani
from fairpca.experiments.papers.babu2025 import worst_group_variance

THEOREMS = ("monotone_objective", "dense_below_relaxation")
CLAIMS = ("sparse_keeps_worst_group", "sparser_with_penalty")


@pytest.mark.requires_data
def test_quick_run_computes_every_check_and_the_theorems_hold():
    quick = experiments.run("babu2025-sparse", quick=True)
    assert_checks_computed(quick.table.set_index("metric"), THEOREMS, CLAIMS)
    details = quick.details
    share = details[
        (details["metric"] == "non-zero share") & (details["method"] == "FairSparsePCA")
    ]
    by_penalty = share.set_index("setting")["value"]
    assert by_penalty["penalty=0"] == 1.0 and by_penalty["penalty=0.1"] < 0.5  # sparse at all


@pytest.mark.requires_data
def test_worst_group_variance_against_the_rows():
    data = kamani("default_credit", "sex", split=2)
    X, s = data.X_train, data.s_train
    U = np.linalg.qr(np.random.default_rng(0).normal(size=(X.shape[1], 3)))[0].T
    centre = X.mean(axis=0)
    # Independent: each group's mean squared norm of its centred rows' coordinates.
    captured = [np.mean(np.sum(((X[s == g] - centre) @ U.T) ** 2, axis=1)) for g in np.unique(s)]
    assert worst_group_variance(X, s, centre, U) == pytest.approx(min(captured), rel=1e-10)
    assert max(captured) > min(captured) * 1.001  # the minimum is a choice between groups

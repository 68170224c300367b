"""The dediego2025-pls target: the group-mean gap it measures, its claims and the theorem."""

import numpy as np
import pytest
from experiments_support import assert_checks_computed
from sklearn.decomposition import PCA

from fairpca import FairPLS, experiments
from fairpca.experiments import lee2022
from fairpca.experiments.papers.dediego2025 import projected_mean_gap

CLAIMS = ("accuracy_above_fair_pca", "dp_below_fair_pca", "dp_below_pls")


@pytest.mark.requires_data
def test_quick_run_computes_every_check_and_the_theorem_holds():
    quick = experiments.run("dediego2025-pls", quick=True)
    table = quick.table.set_index("metric")
    assert_checks_computed(table, ("equal_group_means",), CLAIMS)
    assert set(table["dataset"]) == {"compas/d=2"}
    details = quick.details
    assert set(details["method"]) == {"PCA", "MeanMatchingFairPCA", "PLS", "FairPLS"}
    accuracy = details[details["metric"] == "accuracy (test)"]["value"]
    assert accuracy.between(0.5, 1).all()  # better than chance on COMPAS, never above 1


@pytest.mark.requires_data
def test_projected_mean_gap_against_a_direct_computation():
    data = lee2022("german_credit", split=0)
    X, s = data.X_train, data.s_train
    fair = FairPLS(n_components=3).fit(X, data.y_train, sensitive_features=s)
    pca = PCA(n_components=3).fit(X)
    for est in (fair, pca):
        Z = (X - est.mean_) @ est.components_.T
        if est is fair:
            Z = Z * np.sqrt(est.component_scales_)
        gaps = [np.linalg.norm(Z[s == g].mean(axis=0) - Z.mean(axis=0)) for g in np.unique(s)]
        expected = max(gaps) / np.sqrt(np.trace(np.cov(Z.T, bias=True)))
        assert projected_mean_gap(est, X, s) == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert projected_mean_gap(fair, X, s) <= 1e-8  # the constraint
    assert projected_mean_gap(pca, X, s) > 0.01  # PCA's scores differ by group: the check can fail

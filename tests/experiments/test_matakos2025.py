"""The matakos2025-nested target: its loss helper, its claims, and the theorems it checks."""

import numpy as np
import pytest
from experiments_support import assert_checks_computed

from fairpca import experiments
from fairpca.experiments import kamani
from fairpca.experiments.papers.matakos2025 import containment_deviation, prefix_losses
from fairpca.metrics import marginal_loss

THEOREMS = ("containment", "single_group_is_pca", "above_joint_optimum", "prefix_gaps_reported")
CLAIMS = ("below_joint_prefixes", "below_pca")


@pytest.fixture(scope="module")
def quick():
    return experiments.run("matakos2025-nested", quick=True)


@pytest.mark.requires_data
def test_quick_run_computes_every_check_and_the_theorems_hold(quick):
    table = quick.table.set_index("metric")
    assert_checks_computed(table, THEOREMS, CLAIMS)
    assert set(table["dataset"]) == {"default_credit/marriage"}  # three groups
    # Every rank 1..10 of every curve was measured, and the bound is below the nested loss.
    details = quick.details
    worst = details[details["metric"] == "worst loss (train)"]
    assert worst.groupby("method")["d"].nunique().to_dict() == {
        "PCA": 10, "joint": 10, "joint optimum": 10, "nested": 10,
    }  # fmt: skip
    by = worst.set_index(["method", "d"])["value"]
    assert (by["nested"] >= by["joint optimum"] * (1 - 1e-9)).all()
    # No rank-10 projection beats the bound, the joint fit's unit-scaled rows included.
    assert by["joint", 10] >= by["joint optimum", 10] * (1 - 1e-9)


@pytest.mark.requires_data
def test_prefix_losses_match_marginal_loss_on_every_prefix():
    data = kamani("adult", "race", split=1)
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.normal(size=(data.X_test.shape[1], 6)))[0].T
    # Centred on the rows' own mean, as marginal_loss centres an array projection.
    losses = prefix_losses(data.X_test, data.s_test, data.X_test.mean(axis=0), U)
    assert losses.shape == (5, 6)
    for r in range(1, 7):
        expected = marginal_loss(data.X_test, data.s_test, U[:r], n_components=r)
        np.testing.assert_allclose(losses[:, r - 1], list(expected.values()), rtol=1e-9)
    assert (losses > 0).all()  # a random basis is no group's own PCA


def test_containment_deviation():
    rng = np.random.default_rng(1)
    U = np.linalg.qr(rng.normal(size=(8, 5)))[0].T
    flipped = U[:3] * np.array([[1.0], [-1.0], [1.0]])
    assert containment_deviation(U, flipped) == pytest.approx(0.0, abs=1e-15)
    # The same span in another order is not the same sequence of components.
    assert containment_deviation(U, U[[1, 0, 2]]) > 0.5

"""Helpers shared by the tests of fairpca.experiments: quick reproduction runs and oracles."""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairpca.cli import cli

_QUICK_RUNS = {}


@pytest.fixture(scope="module", name="quick_run")
def quick_run_fixture(tmp_path_factory):
    """``fairpca reproduce TARGET --quick --output DIR``, run once per target for the session."""

    def run(target):
        if target not in _QUICK_RUNS:
            out = tmp_path_factory.mktemp(target) / "out"
            result = CliRunner().invoke(cli, ["reproduce", target, "--quick", "--output", str(out)])
            assert result.exit_code == 0, result.output
            details = pd.read_csv(out / f"{target}-details.csv", keep_default_na=False)
            table = pd.read_csv(out / f"{target}.csv", keep_default_na=False, na_values=[""])
            _QUICK_RUNS[target] = (result, out, table, details)
        return _QUICK_RUNS[target]

    return run


def data_dir():
    return Path(os.environ["FAIRPCA_DATA"])


def standardise(train, test, ddof=0):
    mean, sd = train.mean(axis=0), train.std(axis=0, ddof=ddof)
    sd[sd == 0] = 1.0
    return (train - mean) / sd, (test - mean) / sd


def assert_same_columns(actual, expected):
    """Every column of ``actual`` equals a distinct column of ``expected`` (any order)."""
    assert actual.shape == expected.shape
    unused = list(range(expected.shape[1]))
    for j in range(actual.shape[1]):
        match = [k for k in unused if np.allclose(actual[:, j], expected[:, k], atol=1e-12)]
        assert match, f"column {j} has no counterpart"
        unused.remove(match[0])


def assert_train_standardised(split):
    """Training columns have mean 0 and population SD 1 (or are constant)."""
    np.testing.assert_allclose(split.X_train.mean(axis=0), 0, atol=1e-10)
    sd = split.X_train.std(axis=0)
    assert np.all(np.isclose(sd, 1) | np.isclose(sd, 0))
    # The test part is scaled with the training statistics, not its own.
    assert np.abs(split.X_test.mean(axis=0)).max() > 1e-3


def claims_details(settings, values):
    return pd.DataFrame(
        [
            {
                "dataset": "x",
                "method": m,
                "setting": st,
                "d": 1,
                "split": i,
                "metric": mt,
                "value": v,
            }
            for (m, st, mt, i), v in zip(settings, values, strict=True)
        ]
    )


def assert_checks_computed(table, theorems, claims):
    """Every check of a figure target measured: each theorem holds, each claim is judged.

    ``table`` is the reproduction's table indexed by metric; a claim of the paper may
    fail on our data, but its value must be a number.
    """
    assert set(table.index) == {*theorems, *claims}
    for metric in theorems:
        assert table.loc[metric, "status"] == "holds", table.loc[metric, "rule"]
    for metric in claims:
        assert table.loc[metric, "status"] in ("holds", "fails")
        assert np.isfinite(table.loc[metric, "ours_mean"])

"""What every paper's protocol shares: determinism, the Split, argument and file errors."""

import dataclasses
import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

from fairpca.experiments import Split, kamani, lee2022, samadi2018, vu2022
from fairpca.experiments._split import standardise


@pytest.mark.requires_data
def test_same_split_is_identical_and_splits_differ():
    a, b = lee2022("german_credit", split=3), lee2022("german_credit", split=3)
    for field in dataclasses.fields(Split):
        x, y = getattr(a, field.name), getattr(b, field.name)
        assert np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
    assert not np.array_equal(a.X_train, lee2022("german_credit", split=4).X_train)
    assert not np.array_equal(vu2022("ecoli", split=0).X_train, vu2022("ecoli", split=1).X_train)


@pytest.mark.requires_data
def test_split_is_identical_in_a_fresh_process():
    code = (
        "import hashlib; from fairpca.experiments import vu2022; "
        "sp = vu2022('energy', split=2); "
        "print(hashlib.sha256(sp.X_train.tobytes() + sp.X_test.tobytes()).hexdigest())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    here = vu2022("energy", split=2)
    assert (
        out.stdout.strip()
        == hashlib.sha256(here.X_train.tobytes() + here.X_test.tobytes()).hexdigest()
    )


@pytest.mark.requires_data
def test_split_is_frozen_and_describes_itself():
    split = vu2022("ecoli", split=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        split.n_dropped = 3
    assert "Vu et al." in split.description and "30/70" in split.description
    assert "X_train=(99, 7)" in repr(split)
    assert isinstance(split.feature_names, list)
    assert split.X_train.dtype == np.float64 and split.X_train.flags.c_contiguous


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: lee2022("lfw"), ValueError, "lee2022: dataset must be one of"),
        (lambda: vu2022("adult"), ValueError, "vu2022: dataset must be one of"),
        (lambda: samadi2018("adult"), ValueError, "samadi2018: dataset must be one of"),
        (lambda: kamani("compas", "race"), ValueError, "kamani: dataset must be one of"),
        (lambda: kamani("adult", "marriage"), ValueError, "attribute for adult must be one of"),
        (lambda: lee2022("compas", split=2**32), ValueError, "split must be a non-negative int"),
        (lambda: vu2022("ecoli", split=-1), ValueError, "split must be a non-negative int"),
        (lambda: lee2022("compas", split=True), TypeError, "split must be a non-negative int"),
        (lambda: kamani("adult", "sex", split=1.0), TypeError, "split must be a non-negative int"),
    ],
)
def test_bad_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_missing_files_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="compas/compas-scores-two-years.csv"):
        lee2022("compas", data_home=tmp_path)
    with pytest.raises(FileNotFoundError, match="lfw_samadi_1764px_grey_x3.npz"):
        samadi2018("lfw", data_home=tmp_path)


def test_standardise_keeps_scale_one_for_a_column_constant_up_to_rounding():
    # 0.48 repeated: numpy's SD of it is ~1e-16, not 0; dividing by it would turn a
    # held-out 1.0 into ~1e15 (E. coli's lip on Vu et al.'s split 3).
    train = np.c_[np.full(37, 0.48), np.arange(37.0)]
    test = np.array([[1.0, 3.0]])
    assert train[:, 0].std() > 0
    train_z, test_z = standardise(train, test)
    np.testing.assert_allclose(train_z[:, 0], 0.0, atol=1e-15)
    assert test_z[0, 0] == pytest.approx(0.52)
    assert test_z[0, 1] == pytest.approx((3.0 - 18.0) / np.arange(37.0).std())


@pytest.mark.requires_data("ecoli")
def test_vu_authors_ecoli_split_3_has_no_blown_up_column():
    from fairpca.experiments import vu2022

    data = vu2022("ecoli", split=3, splits="authors")
    assert np.abs(data.X_test).max() < 50

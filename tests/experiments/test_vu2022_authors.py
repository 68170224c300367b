"""Vu et al. (2022): ``vu2022(..., splits="authors")``, the authors' seeded draw and files."""

import numpy as np
import pytest
from experiments_support import assert_train_standardised, data_dir, standardise

from fairpca.datasets import load_default_credit
from fairpca.experiments import vu2022

# dataset -> (file in the data home, groups' labels of the codes 0 and 1)
FILES = {
    "default_credit": ("authors/vu2022/default_credit.csv", ("high", "low")),
    "skillcraft": ("authors/vu2022/SkillCraft_Data.csv", (0, 1)),
    "ecoli": ("ecoli/Ecoli_Data.csv", (0, 1)),
    "german_credit": ("german_credit/German_Credit_Data.csv", (0, 1)),
}


def _raw(dataset):
    """Features (all columns but the last two), and the 0/1 group codes (last column)."""
    table = np.loadtxt(data_dir() / FILES[dataset][0], delimiter=",", skiprows=1, ndmin=2)
    return table[:, :-2], table[:, -1].astype(int)


def _readme_draw(codes, seed):
    """The data README's recipe, written out again: per group, a permutation, 30 % train."""
    rng = np.random.default_rng(seed)
    train_parts, test_parts = [], []
    for code in (0, 1):
        rows = rng.permutation(np.where(codes == code)[0])
        cut = int(0.3 * len(rows))
        train_parts.append(rows[:cut])
        test_parts.append(rows[cut:])
    train = rng.permutation(np.concatenate(train_parts))
    test = rng.permutation(np.concatenate(test_parts))
    return train, test


@pytest.mark.requires_data("authors")
def test_vu_authors_default_credit_seed0_group_counts():
    # The authors' group 1 (EDUCATION in {3, 4, 5, 6}, 5371 rows) and group 0 (24629 rows).
    result = vu2022("default_credit", split=0, splits="authors")
    labels, counts = np.unique(result.s_train, return_counts=True)
    assert dict(zip(labels.tolist(), counts.tolist(), strict=True)) == {"low": 1611, "high": 7388}
    labels, counts = np.unique(result.s_test, return_counts=True)
    assert dict(zip(labels.tolist(), counts.tolist(), strict=True)) == {
        "low": 5371 - 1611,
        "high": 24629 - 7388,
    }
    assert result.X_train.shape == (8999, 22)
    assert result.X_test.shape == (21001, 22)
    assert set(np.unique(result.y_train)) == {0, 1}


@pytest.mark.parametrize(
    ("dataset", "seed"),
    [("default_credit", 0), ("default_credit", 7), ("skillcraft", 3), ("ecoli", 1)],
)
@pytest.mark.requires_data("authors", "ecoli")
def test_vu_authors_split_is_the_readme_recipe(dataset, seed):
    X, codes = _raw(dataset)
    train, test = _readme_draw(codes, seed)
    expected_train, expected_test = standardise(X[train], X[test])
    result = vu2022(dataset, split=seed, splits="authors")
    keep = X.std(axis=0) > 1e-5
    # The same rows, in the same order, standardised with the training statistics.
    np.testing.assert_allclose(result.X_train, expected_train[:, keep], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(result.X_test, expected_test[:, keep], rtol=1e-12, atol=1e-12)
    labels = np.asarray(FILES[dataset][1])
    np.testing.assert_array_equal(result.s_train, labels[codes[train]])
    np.testing.assert_array_equal(result.s_test, labels[codes[test]])


@pytest.mark.requires_data("authors")
def test_vu_authors_split_is_a_function_of_the_seed():
    first = vu2022("default_credit", split=4, splits="authors")
    again = vu2022("default_credit", split=4, splits="authors")
    other = vu2022("default_credit", split=5, splits="authors")
    np.testing.assert_array_equal(first.X_train, again.X_train)
    np.testing.assert_array_equal(first.X_test, again.X_test)
    np.testing.assert_array_equal(first.s_test, again.s_test)
    assert first.X_train.shape == other.X_train.shape
    assert not np.array_equal(first.X_train, other.X_train)


@pytest.mark.parametrize("dataset", ["default_credit", "skillcraft", "ecoli", "german_credit"])
@pytest.mark.requires_data("authors", "ecoli", "german_credit")
def test_vu_authors_training_rows_are_standardised(dataset):
    result = vu2022(dataset, split=2, splits="authors")
    assert_train_standardised(result)
    sd = result.X_train.std(axis=0)
    np.testing.assert_allclose(sd[sd > 1e-8], 1.0, rtol=1e-10)
    # A column constant on the training rows (E. coli's rare "chg" values) is only centred.
    np.testing.assert_array_equal(result.X_train[:, sd <= 1e-8], 0.0)


@pytest.mark.requires_data("authors", "default_credit")
def test_vu_authors_default_credit_coding_and_values():
    # Code 1 is EDUCATION in {3, 4, 5, 6}, rows in the order of Samadi et al.'s file, and
    # the 22 other attributes carry the same values (PAY_0 there is PAY_1 here).
    X, codes = _raw("default_credit")
    ours = load_default_credit()
    education = ours.data["EDUCATION"].to_numpy()
    np.testing.assert_array_equal(codes == 1, np.isin(education, [3, 4, 5, 6]))
    assert np.sum((education == 0) & (codes == 0)) == 14
    names = vu2022("default_credit", splits="authors").feature_names
    ours_names = [{"PAY_0": "PAY_1"}.get(name, name) for name in names]
    np.testing.assert_array_equal(X, ours.data[ours_names].to_numpy(dtype=float))


@pytest.mark.requires_data("authors", "skillcraft")
def test_vu_authors_skillcraft_file():
    result = vu2022("skillcraft", split=0, splits="authors")
    assert "TotalHours" not in result.feature_names
    assert len(result.feature_names) == 17
    assert result.X_train.shape[0] + result.X_test.shape[0] == 3337
    assert result.y_train is None and result.y_test is None
    n0, n1 = np.bincount(_raw("skillcraft")[1])
    assert result.X_train.shape[0] == int(0.3 * n0) + int(0.3 * n1)
    ours = vu2022("skillcraft", split=0)
    assert set(np.unique(ours.s_train)) == set(np.unique(result.s_train)) == {0, 1}


@pytest.mark.requires_data("ecoli")
def test_vu_authors_other_sets_use_our_files():
    ours = vu2022("ecoli", split=0)
    theirs = vu2022("ecoli", split=0, splits="authors")
    assert theirs.feature_names == ours.feature_names
    assert theirs.X_train.shape == ours.X_train.shape
    assert "authors" in theirs.description


def test_vu_splits_mode_is_checked():
    with pytest.raises(ValueError, match=r"vu2022: splits must be one of \['ours', 'authors'\]"):
        vu2022("ecoli", splits="theirs")
    with pytest.raises(ValueError, match="splits must be one of"):
        vu2022("ecoli", splits=None)


def test_vu_authors_split_type_is_checked():
    with pytest.raises(ValueError, match="non-negative"):
        vu2022("ecoli", split=-1, splits="authors")
    with pytest.raises(TypeError, match="non-negative int"):
        vu2022("ecoli", split=1.0, splits="authors")


@pytest.mark.parametrize("dataset", ["default_credit", "skillcraft"])
@pytest.mark.parametrize("download", [False, True])
def test_vu_authors_missing_file_says_where_to_get_it(tmp_path, dataset, download):
    with pytest.raises(FileNotFoundError, match="distributionally_robust_fair_pca") as info:
        vu2022(dataset, splits="authors", data_home=tmp_path, download=download)
    assert FILES[dataset][0] in str(info.value)
    assert ("no publisher URL" in str(info.value)) == download


@pytest.mark.requires_data("authors")
def test_vu_authors_checksum_is_verified(tmp_path):
    folder = tmp_path / "authors" / "vu2022"
    folder.mkdir(parents=True)
    data = (data_dir() / "authors/vu2022/SkillCraft_Data.csv").read_bytes()
    (folder / "SkillCraft_Data.csv").write_bytes(data)
    result = vu2022("skillcraft", splits="authors", data_home=tmp_path)
    assert result.X_train.shape[1] == 17
    (folder / "SkillCraft_Data.csv").write_bytes(data.replace(b"143.718", b"143.719", 1))
    with pytest.raises(ValueError, match="checksum mismatch"):
        vu2022("skillcraft", splits="authors", data_home=tmp_path)

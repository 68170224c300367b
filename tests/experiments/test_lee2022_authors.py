"""Lee et al. (2022): ``lee2022(..., splits="authors")`` reads the authors' shipped split files."""

import numpy as np
import pytest
from experiments_support import data_dir

import fairpca
from fairpca.experiments import lee2022
from fairpca.metrics import explained_variance_ratio, mmd2

# dataset -> (folder, feature columns, train rows, test rows, labels of codes 0 and 1)
SHIPPED = {
    "compas": ("COMPAS", 11, 1727, 741, ("not Caucasian", "Caucasian")),
    "german_credit": ("German", 57, 700, 300, ("<25", "25+")),
    "adult": ("Adult", 97, 1582, 679, ("Female", "Male")),
}


def _shipped(dataset, part, split):
    folder = SHIPPED[dataset][0]
    return np.loadtxt(data_dir() / f"authors/lee2022/{folder}/{part}_{split}.csv", delimiter=",")


@pytest.mark.parametrize("dataset", list(SHIPPED))
@pytest.mark.parametrize("split", [0, 9])
@pytest.mark.requires_data("authors")
def test_lee_authors_split_is_the_shipped_rows(dataset, split):
    _, n_features, n_train, n_test, labels = SHIPPED[dataset]
    result = lee2022(dataset, split=split, splits="authors")
    assert result.X_train.shape == (n_train, n_features)
    assert result.X_test.shape == (n_test, n_features)
    assert len(result.feature_names) == n_features
    for part, X, s, y in (
        ("train", result.X_train, result.s_train, result.y_train),
        ("test", result.X_test, result.s_test, result.y_test),
    ):
        table = _shipped(dataset, part, split)
        # Exactly the shipped values, in the shipped order: not standardised again.
        np.testing.assert_array_equal(X, table[:, :n_features])
        np.testing.assert_array_equal(y, table[:, -2].astype(int))
        np.testing.assert_array_equal(s == labels[1], table[:, -1] == 1)
        np.testing.assert_array_equal(s == labels[0], table[:, -1] == 0)
    assert set(np.unique(result.y_train)) == {0, 1}


@pytest.mark.requires_data("authors")
def test_lee_authors_group_counts():
    # Counts of the 1-coded group over the shipped rows, by dataset: the subsample is one
    # draw shared by the ten splits, so train + test counts are the same for every split.
    expected = {"compas": 827, "german_credit": 851, "adult": 1511}
    for dataset, count in expected.items():
        labels = SHIPPED[dataset][4]
        for split in (0, 5):
            result = lee2022(dataset, split=split, splits="authors")
            s = np.r_[result.s_train, result.s_test]
            assert set(np.unique(s)) == set(labels)
            assert np.sum(s == labels[1]) == count
    # German credit keeps every row: 851 aged 25+ and 149 under 25, as in "ours" mode.
    ours = lee2022("german_credit", split=0)
    theirs = lee2022("german_credit", split=0, splits="authors")
    assert sorted(np.unique(ours.s_train)) == sorted(np.unique(theirs.s_train))


@pytest.mark.requires_data("authors")
def test_lee_authors_coding_matches_the_feature_copy():
    # The protected attribute's feature copy is larger exactly on the rows coded 1.
    for dataset, name in (("compas", "race"), ("german_credit", "age"), ("adult", "sex")):
        result = lee2022(dataset, split=2, splits="authors")
        column = result.X_train[:, result.feature_names.index(name)]
        high = column > column.mean()
        np.testing.assert_array_equal(high, result.s_train == SHIPPED[dataset][4][1])


@pytest.mark.requires_data("authors")
def test_lee_authors_n_dropped_matches_ours():
    for dataset in SHIPPED:
        ours = lee2022(dataset, split=0)
        theirs = lee2022(dataset, split=0, splits="authors")
        assert theirs.n_dropped == ours.n_dropped
        assert "authors" in theirs.description


def test_lee_splits_mode_is_checked():
    with pytest.raises(ValueError, match=r"splits must be one of \['ours', 'authors'\]"):
        lee2022("compas", splits="theirs")
    with pytest.raises(ValueError, match="splits must be one of"):
        lee2022("compas", splits=None)


@pytest.mark.parametrize("split", [10, 11, 2**20])
def test_lee_authors_split_must_be_below_ten(split):
    with pytest.raises(ValueError, match=r"split must be in range\(10\)"):
        lee2022("compas", split=split, splits="authors")


def test_lee_authors_split_type_and_sign_are_checked():
    with pytest.raises(ValueError, match="non-negative"):
        lee2022("compas", split=-1, splits="authors")
    with pytest.raises(TypeError, match="non-negative int"):
        lee2022("compas", split=1.0, splits="authors")


@pytest.mark.parametrize("download", [False, True])
def test_lee_authors_missing_file_says_where_to_get_it(tmp_path, download):
    with pytest.raises(FileNotFoundError, match="nick-jhlee/fair-manifold-pca") as info:
        lee2022("german_credit", split=0, splits="authors", data_home=tmp_path, download=download)
    assert "authors/lee2022/German/train_0.csv" in str(info.value)
    assert ("no publisher URL" in str(info.value)) == download


@pytest.mark.requires_data("authors")
def test_lee_authors_checksum_is_verified(tmp_path):
    folder = tmp_path / "authors" / "lee2022" / "German"
    folder.mkdir(parents=True)
    for part in ("train", "test"):
        text = (data_dir() / f"authors/lee2022/German/{part}_0.csv").read_text()
        (folder / f"{part}_0.csv").write_text(text)
    assert lee2022("german_credit", splits="authors", data_home=tmp_path).X_train.shape[0] == 700
    (folder / "test_0.csv").write_text(text.replace("e+00", "e+01", 1))
    with pytest.raises(ValueError, match="checksum mismatch"):
        lee2022("german_credit", splits="authors", data_home=tmp_path)


@pytest.mark.slow
@pytest.mark.requires_data("authors")
def test_lee_authors_compas_mbf_pca_mmd2_matches_the_paper():
    # Table 1, COMPAS, MbF-PCA (d = 2, tau = 1e-3): test MMD² 0.005 ± 0.002 over the
    # ten shipped splits (the authors' own record: 0.00529 ± 0.00244).
    values = []
    for split in range(10):
        data = lee2022("compas", split=split, splits="authors")
        est = fairpca.MMDFairPCA(n_components=2, tau=1e-3, random_state=split)
        est.fit(data.X_train, sensitive_features=data.s_train)
        values.append(mmd2(data.X_test, data.s_test, est, bandwidth=est.bandwidth_))
        assert 0 < explained_variance_ratio(data.X_test, est) < 1
    assert np.mean(values) == pytest.approx(0.005, abs=0.001)
    assert np.std(values, ddof=1) == pytest.approx(0.002, abs=0.001)

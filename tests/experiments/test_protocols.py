"""The papers' protocols, checked against independent rebuilds from the raw files.

Oracles: the raw files parsed with the standard library / numpy (not the
loaders), the documented split rule (scikit-learn's ``train_test_split`` seeded by
the split index) and the documented scaling, and the counts of the data README
and the papers.
"""

import dataclasses
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import train_test_split

from fairpca.datasets import load_adult
from fairpca.experiments import Split, kamani, lee2022, samadi2018, vu2022


def _data():
    return Path(os.environ["FAIRPCA_DATA"])


def _standardise(train, test, ddof=0):
    mean, sd = train.mean(axis=0), train.std(axis=0, ddof=ddof)
    sd[sd == 0] = 1.0
    return (train - mean) / sd, (test - mean) / sd


def _assert_same_columns(actual, expected):
    """Every column of ``actual`` equals a distinct column of ``expected`` (any order)."""
    assert actual.shape == expected.shape
    unused = list(range(expected.shape[1]))
    for j in range(actual.shape[1]):
        match = [k for k in unused if np.allclose(actual[:, j], expected[:, k], atol=1e-12)]
        assert match, f"column {j} has no counterpart"
        unused.remove(match[0])


def _assert_train_standardised(split):
    """Training columns have mean 0 and population SD 1 (or are constant)."""
    np.testing.assert_allclose(split.X_train.mean(axis=0), 0, atol=1e-10)
    sd = split.X_train.std(axis=0)
    assert np.all(np.isclose(sd, 1) | np.isclose(sd, 0))
    # The test part is scaled with the training statistics, not its own.
    assert np.abs(split.X_test.mean(axis=0)).max() > 1e-3


# --------------------------------------------------------------------------
# Lee et al. 2022
# --------------------------------------------------------------------------


def _lee_german_oracle():
    rows = [
        line.split() for line in (_data() / "german_credit/german.data").read_text().split("\n")
    ]
    rows = [r for r in rows if r]
    numeric = [1, 4, 7, 10, 15, 17]  # duration, amount, rate, residence, credits, liable
    categorical = [0, 2, 3, 5, 6, 9, 11, 13, 14, 16, 18, 19]  # all coded ones but status (8)
    columns = [[float(r[j]) for r in rows] for j in numeric]
    columns.append([float(int(r[12]) >= 25) for r in rows])
    for j in categorical:
        for level in sorted({r[j] for r in rows}):
            columns.append([float(r[j] == level) for r in rows])
    y = np.array([int(r[20]) - 1 for r in rows])
    s = np.array(["25+" if int(r[12]) >= 25 else "<25" for r in rows])
    return np.array(columns).T, s, y


@pytest.mark.parametrize("split", [0, 7])
@pytest.mark.requires_data
def test_lee_german_matches_an_independent_rebuild(split):
    result = lee2022("german_credit", split=split)
    X, s, y = _lee_german_oracle()
    assert X.shape == (1000, 57)  # the paper's 57 features
    train, test = train_test_split(np.arange(1000), train_size=0.7, random_state=split)
    X_train, X_test = _standardise(X[train], X[test])
    _assert_same_columns(result.X_train, X_train)
    _assert_same_columns(result.X_test, X_test)
    np.testing.assert_array_equal(result.s_train, s[train])
    np.testing.assert_array_equal(result.y_test, y[test])
    assert result.n_dropped == 0 and len(result.feature_names) == 57
    assert not {"personal_status", "sex"} & {n.split("=")[0] for n in result.feature_names}
    _assert_train_standardised(result)


@pytest.mark.requires_data
def test_lee_compas():
    result = lee2022("compas", split=1)
    assert result.X_train.shape == (1727, 11) and result.X_test.shape == (741, 11)
    assert result.n_dropped == 7214 - 2468  # ProPublica filter, then 40 % of 6172
    assert set(result.feature_names) == {
        "age",
        "race",
        "juv_fel_count",
        "juv_misd_count",
        "juv_other_count",
        "priors_count",
        "age_cat=25 - 45",
        "age_cat=Greater than 45",
        "age_cat=Less than 25",
        "c_charge_degree=F",
        "c_charge_degree=M",
    }
    # The protected attribute is a feature: race = 1 for Caucasian, standardised.
    race = result.X_train[:, result.feature_names.index("race")]
    assert len(np.unique(race)) == 2
    np.testing.assert_array_equal(race > 0, result.s_train == "Caucasian")
    assert set(np.unique(result.y_train)) == {0, 1}
    _assert_train_standardised(result)


@pytest.mark.requires_data
def test_lee_subsample_is_drawn_per_split():
    a, b = lee2022("compas", split=0), lee2022("compas", split=4)
    assert not np.array_equal(a.s_train, b.s_train)
    for split in (a, b):
        assert split.X_train.shape[0] + split.X_test.shape[0] == 2468
    # Different rows: the multisets of a count column differ (compared after undoing
    # each split's standardisation up to an affine map, via the sorted values' ranks).
    j = a.feature_names.index("priors_count")
    col_a = np.sort(np.r_[a.X_train[:, j], a.X_test[:, j]])
    col_b = np.sort(np.r_[b.X_train[:, j], b.X_test[:, j]])
    assert abs(np.corrcoef(col_a, col_b)[0, 1] - 1.0) > 1e-9
    # A split is reproducible: the same subsample and rows again.
    again = lee2022("compas", split=4)
    np.testing.assert_array_equal(again.X_train, b.X_train)
    np.testing.assert_array_equal(again.X_test, b.X_test)
    assert "seed (2022, 4)" in b.description


@pytest.mark.requires_data
def test_lee_adult():
    result = lee2022("adult", split=2)
    assert result.X_train.shape == (1582, 97) and result.X_test.shape == (679, 97)
    assert result.n_dropped == 48842 - 2261  # 3620 incomplete rows, then 5 % of 45222
    names = result.feature_names
    assert "fnlwgt" not in names and "race" not in names and not any("race=" in n for n in names)
    complete = load_adult().data.dropna()
    assert len(complete) == 45222
    for block in ("workclass", "education", "native-country"):
        assert sum(n.startswith(block + "=") for n in names) == complete[block].nunique()
    sex = result.X_test[:, names.index("sex")]
    np.testing.assert_array_equal(sex > 0, result.s_test == "Male")
    _assert_train_standardised(result)


# --------------------------------------------------------------------------
# Vu et al. 2022
# --------------------------------------------------------------------------

# dataset -> features after dropping SD <= 1e-5 columns (their table 2 except the two noted)
VU_FEATURES = {
    "default_credit": 22,
    "biodeg": 40,
    "ecoli": 7,
    "energy": 8,
    "german_credit": 48,
    "image_segmentation": 18,
    "letter": 16,
    "magic": 10,
    "parkinsons": 20,
    "skillcraft": 18,  # table 2: 17
    "statlog": 36,
    "steel": 26,  # table 2: 24
    "taiwan_credit": 22,
    "wine_quality": 11,
}
VU_ROWS = {
    "default_credit": 30000,
    "biodeg": 1055,
    "ecoli": 333,
    "energy": 768,
    "german_credit": 1000,
    "image_segmentation": 660,
    "letter": 20000,
    "magic": 19020,
    "parkinsons": 5875,
    "skillcraft": 3338,
    "statlog": 3071,
    "steel": 1941,
    "taiwan_credit": 29623,
    "wine_quality": 6497,
}


@pytest.mark.parametrize("dataset", sorted(VU_FEATURES))
@pytest.mark.requires_data
def test_vu_shapes_and_stratified_30_70(dataset):
    result = vu2022(dataset, split=3)
    n = VU_ROWS[dataset]
    assert result.X_train.shape == (int(0.3 * n), VU_FEATURES[dataset])
    assert result.X_test.shape[0] == n - int(0.3 * n)
    s_all = np.r_[result.s_train, result.s_test]
    for group in np.unique(s_all):
        share = np.mean(result.s_train == group)
        assert share == pytest.approx(np.mean(s_all == group), abs=2 / result.X_train.shape[0])
    _assert_train_standardised(result)
    has_label = dataset in {
        "default_credit",
        "biodeg",
        "energy",
        "german_credit",
        "taiwan_credit",
        "wine_quality",
    }
    assert (result.y_train is not None) == has_label


# Split 37 lies beyond the paper's ten: further splits follow the same rule, seeded by split.
@pytest.mark.parametrize(
    ("dataset", "dropped", "split"),
    [("ecoli", None, 5), ("german_credit", "A4_7", 5), ("ecoli", None, 37)],
)
@pytest.mark.requires_data
def test_vu_matches_an_independent_rebuild(dataset, dropped, split):
    file = {
        "ecoli": "ecoli/Ecoli_Data.csv",
        "german_credit": "german_credit/German_Credit_Data.csv",
    }
    path = _data() / file[dataset]
    header = path.read_text().split("\n", 1)[0].split(",")
    raw = np.loadtxt(path, delimiter=",", skiprows=1)
    X, y, s = raw[:, :-2], raw[:, -2], raw[:, -1]
    names = header[:-2]
    if dropped is not None:
        keep = [j for j, name in enumerate(names) if name != dropped]
        assert np.ptp(X[:, names.index(dropped)]) == 0
        X, names = X[:, keep], [names[j] for j in keep]
    result = vu2022(dataset, split=split)
    assert result.feature_names == names
    train, test = train_test_split(
        np.arange(len(s)), train_size=0.3, stratify=s, random_state=split
    )
    X_train, X_test = _standardise(X[train], X[test])
    np.testing.assert_allclose(result.X_train, X_train, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(result.X_test, X_test, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(result.s_test, s[test])
    if result.y_train is not None:
        np.testing.assert_array_equal(result.y_train, y[train])


@pytest.mark.requires_data
def test_vu_default_credit_groups():
    result = vu2022("default_credit", split=0)
    s = np.r_[result.s_train, result.s_test]
    assert (s == "low").sum() == 5385 and (s == "high").sum() == 24615
    assert "EDUCATION" not in result.feature_names and "PAY_AMT6" in result.feature_names


# --------------------------------------------------------------------------
# Samadi et al. 2018
# --------------------------------------------------------------------------


@pytest.mark.requires_data
def test_samadi_credit_matches_their_matlab_preprocessing():
    result = samadi2018("default_credit")
    # csvread('default_degree.csv', 2, 1) then data(:, 2:22), z-scored with MATLAB's std.
    raw = np.loadtxt(_data() / "default_credit/default_degree.csv", delimiter=",", skiprows=2)
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


@pytest.mark.requires_data
def test_samadi_lfw():
    result = samadi2018("lfw")
    assert result.X_train.shape == (13232, 1764) and result.X_test is result.X_train
    assert (result.s_train == "female").sum() == 2962
    image = np.loadtxt(_data() / "lfw/samples/img13231.txt")
    np.testing.assert_allclose(result.X_train[13231], image.ravel() / 255, rtol=1e-6)
    assert 0 <= result.X_train.min() and result.X_train.max() <= 1


# --------------------------------------------------------------------------
# Kamani et al.
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dataset", "attribute", "groups", "n_rows", "n_features", "n_dropped"),
    [
        ("adult", "sex", {"Male": 21790, "Female": 10771}, 32561, 14, 0),
        (
            "adult",
            "race",
            {
                "White": 27816,
                "Black": 3124,
                "Asian-Pac-Islander": 1039,
                "Amer-Indian-Eskimo": 311,
                "Other": 271,
            },
            32561,
            14,
            0,
        ),
        ("default_credit", "sex", {"male": 11888, "female": 18112}, 30000, 23, 0),
        (
            "default_credit",
            "marriage",
            {"married": 13659, "single": 15964, "other": 323},
            29946,
            23,
            54,
        ),
    ],
)
@pytest.mark.requires_data
def test_kamani(dataset, attribute, groups, n_rows, n_features, n_dropped):
    result = kamani(dataset, attribute, split=6)
    s = np.r_[result.s_train, result.s_test]
    labels, counts = np.unique(s, return_counts=True)
    assert dict(zip(labels.tolist(), counts.tolist(), strict=True)) == groups
    assert result.X_train.shape == (int(0.7 * n_rows), n_features)
    assert result.n_dropped == n_dropped
    assert result.y_train is not None and set(np.unique(result.y_test)) == {0, 1}
    for group, count in groups.items():  # stratified by group
        assert abs((result.s_train == group).sum() - 0.7 * count) < 2
    _assert_train_standardised(result)


@pytest.mark.requires_data
def test_kamani_adult_codes_categories_as_integers():
    result = kamani("adult", "sex", split=0)
    assert result.feature_names == [
        "age",
        "workclass",
        "fnlwgt",
        "education",
        "education-num",
        "marital-status",
        "occupation",
        "relationship",
        "race",
        "sex",
        "capital-gain",
        "capital-loss",
        "hours-per-week",
        "native-country",
    ]
    workclass = np.r_[result.X_train[:, 1], result.X_test[:, 1]]
    assert len(np.unique(workclass)) == 9  # 8 levels and the missing "?"
    # Integer codes, equally spaced after scaling.
    assert np.allclose(np.diff(np.unique(workclass)), np.diff(np.unique(workclass))[0])


# --------------------------------------------------------------------------
# determinism, Split, errors
# --------------------------------------------------------------------------


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
        (lambda: vu2022("lfw"), ValueError, "vu2022: dataset must be one of"),
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

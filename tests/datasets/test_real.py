"""Real-data loaders: shapes and group sizes against the data README, quirks, file errors.

Expected numbers are those of ``shared/data/README.md`` (counted there with an
independent script); where a value can be read from an independent copy of the
data (Samadi's ``default_degree.csv``, the LFW ``img<k>.txt`` samples, the raw
text of ``german.data``) the loader is compared with it.
"""

import functools
import hashlib
import io
import os
import shutil
import sys
import urllib.error
from pathlib import Path

import numpy as np
import pytest

from fairpca.datasets import (
    _fetch,
    get_data_home,
    load_adult,
    load_compas,
    load_default_credit,
    load_fairml,
    load_german_credit,
    load_lfw,
)


def _data():
    return Path(os.environ["FAIRPCA_DATA"])


@functools.lru_cache
def _lfw():
    return load_lfw()


@functools.lru_cache
def _adult():
    return load_adult()


@functools.lru_cache
def _credit(sensitive):
    return load_default_credit(sensitive=sensitive)


def _counts(series):
    return series.value_counts().to_dict()


# --------------------------------------------------------------------------
# German credit
# --------------------------------------------------------------------------


@pytest.mark.requires_data
def test_german_credit_shapes_groups_and_decoded_codes():
    bunch = load_german_credit()
    assert bunch.data.shape == (1000, 20)
    assert bunch.feature_names == list(bunch.data.columns)
    assert _counts(bunch.sensitive) == {"25+": 851, "<25": 149}
    assert _counts(bunch.target) == {"good": 700, "bad": 300}
    assert _counts(load_german_credit(sensitive="sex").sensitive) == {"male": 690, "female": 310}
    assert "Hofmann" in bunch.DESCR and "CC BY 4.0" in bunch.DESCR
    # Independent parse of the raw text: every code maps to exactly one level, row by row.
    rows = [
        line.split() for line in (_data() / "german_credit/german.data").read_text().split("\n")
    ]
    rows = [r for r in rows if r]
    assert len(rows) == 1000
    status = [r[8] for r in rows]
    assert (bunch.data["personal_status"] == "female_div_or_married").tolist() == [
        c == "A92" for c in status
    ]
    assert bunch.data["age"].tolist() == [int(r[12]) for r in rows]
    assert bunch.data["credit_amount"].tolist() == [int(r[4]) for r in rows]
    for column in ("purpose", "savings", "job"):
        raw = [r[bunch.feature_names.index(column)] for r in rows]
        pairs = set(zip(raw, bunch.data[column], strict=True))
        assert len(pairs) == len(set(raw)) == bunch.data[column].nunique()
    assert not any(str(v).startswith("A") for v in bunch.data["checking_account"])


# --------------------------------------------------------------------------
# COMPAS
# --------------------------------------------------------------------------


@pytest.mark.requires_data
def test_compas_propublica_filter_and_duplicate_columns():
    raw = load_compas(propublica_filter=False)
    assert raw.data.shape[0] == 7214 and raw.n_dropped == 0
    assert _counts(raw.target) == {0: 3963, 1: 3251}
    assert _counts(raw.sensitive) == {
        "African-American": 3696,
        "Caucasian": 2454,
        "Hispanic": 637,
        "Other": 377,
        "Asian": 32,
        "Native American": 18,
    }
    assert _counts(load_compas(sensitive="sex", propublica_filter=False).sensitive) == {
        "Male": 5819,
        "Female": 1395,
    }
    # The duplicated names are gone, the first copies are kept.
    assert not any(c.endswith(".1") for c in raw.feature_names)
    assert {"decile_score", "priors_count"} <= set(raw.feature_names)
    assert "two_year_recid" not in raw.feature_names

    kept = load_compas()
    assert kept.data.shape == (6172, 49) and kept.n_dropped == 7214 - 6172
    assert _counts(kept.sensitive) == {
        "African-American": 3175,
        "Caucasian": 2103,
        "Hispanic": 509,
        "Other": 343,
        "Asian": 31,
        "Native American": 11,
    }
    d = kept.data
    assert d["days_b_screening_arrest"].between(-30, 30).all()
    assert (d["is_recid"] != -1).all() and (d["c_charge_degree"] != "O").all()
    # Every raw row meeting the filter is kept.
    r = raw.data
    meets = (
        r["days_b_screening_arrest"].between(-30, 30)
        & (r["is_recid"] != -1)
        & (r["c_charge_degree"] != "O")
        & r["score_text"].notna()
    )
    assert sorted(d.index) == sorted(r.index[meets])


@pytest.mark.requires_data
def test_compas_differing_duplicate_column_is_an_error(tmp_path, monkeypatch):
    source = (_data() / "compas/compas-scores-two-years.csv").read_text()
    header, first, rest = source.split("\n", 2)
    cells = first.split(",")
    names = header.split(",")
    cells[names.index("decile_score") + 0] = "99"  # first copy no longer equals the second
    path = _copy_with(
        tmp_path,
        "compas/compas-scores-two-years.csv",
        monkeypatch,
        "\n".join([header, ",".join(cells), rest]),
    )
    with pytest.raises(ValueError, match="duplicated column 'decile_score'") as info:
        load_compas(data_home=tmp_path)
    assert str(path) in str(info.value)


# --------------------------------------------------------------------------
# Adult
# --------------------------------------------------------------------------


@pytest.mark.requires_data
def test_adult_train_and_test_files():
    train = load_adult(subset="train")
    test = load_adult(subset="test")
    assert train.data.shape == (32561, 14) and test.data.shape == (16281, 14)
    assert _counts(train.sensitive) == {"Male": 21790, "Female": 10771}
    assert _counts(test.sensitive) == {"Male": 10860, "Female": 5421}
    # adult.test's trailing periods are gone; its junk first line is not a row.
    assert _counts(train.target) == {"<=50K": 24720, ">50K": 7841}
    assert _counts(test.target) == {"<=50K": 12435, ">50K": 3846}
    assert test.data["age"].iloc[0] == 25  # first real row of adult.test: "25, Private, ..."
    # "?" is a missing value, only in the three documented columns.
    for bunch, incomplete in ((train, 2399), (test, 1221)):
        missing = bunch.data.isna()
        assert int(missing.any(axis=1).sum()) == incomplete
        assert set(missing.columns[missing.any()]) == {"workclass", "occupation", "native-country"}
        assert not (bunch.data == "?").any().any()
    assert _counts(load_adult(subset="train", sensitive="race").sensitive) == {
        "White": 27816,
        "Black": 3124,
        "Asian-Pac-Islander": 1039,
        "Amer-Indian-Eskimo": 311,
        "Other": 271,
    }
    both = _adult()
    assert both.data.shape == (48842, 14)
    assert _counts(both.subset) == {"train": 32561, "test": 16281}
    assert both.data["fnlwgt"].dtype == np.int64


# --------------------------------------------------------------------------
# Default credit
# --------------------------------------------------------------------------


@pytest.mark.requires_data
def test_default_credit_groups_and_equality_with_samadis_file():
    bunch = _credit("education")
    assert bunch.data.shape == (30000, 23)
    assert bunch.data.index.name == "ID"
    assert _counts(bunch.sensitive) == {"high": 24615, "low": 5385}
    assert _counts(bunch.target) == {0: 23364, 1: 6636}
    assert _counts(bunch.data["EDUCATION"]) == {
        0: 14,
        1: 10585,
        2: 14030,
        3: 4917,
        4: 123,
        5: 280,
        6: 51,
    }
    assert _counts(_credit("sex").sensitive) == {"male": 11888, "female": 18112}
    assert _counts(_credit("marriage").sensitive) == {
        "married": 13659,
        "single": 15964,
        "other": 323,
        "unknown": 54,
    }
    # Samadi's own file (no label), read independently with numpy: same values cell for cell.
    samadi = np.loadtxt(_data() / "default_credit/default_degree.csv", delimiter=",", skiprows=2)
    assert samadi.shape == (30000, 24)
    np.testing.assert_array_equal(samadi[:, 0], bunch.data.index.to_numpy())
    np.testing.assert_array_equal(samadi[:, 1:], bunch.data.to_numpy(dtype=float))


# --------------------------------------------------------------------------
# LFW
# --------------------------------------------------------------------------


@pytest.mark.requires_data
def test_lfw_images_match_the_original_text_files():
    bunch = _lfw()
    assert bunch.data.shape == (13232, 1764) and bunch.target is None
    assert bunch.images.shape == (13232, 49, 36)
    assert _counts(bunch.sensitive) == {"male": 10270, "female": 2962}
    assert bunch.data.to_numpy().min() >= 0 and bunch.data.to_numpy().max() <= 255
    for k in (0, 1, 13231):
        text = np.loadtxt(_data() / f"lfw/samples/img{k}.txt")
        assert text.shape == (49, 36)
        # The text files hold float32(k / 3); the loader returns the exact k / 3.
        np.testing.assert_array_equal(bunch.images[k].astype(np.float32), text.astype(np.float32))
        np.testing.assert_array_equal(bunch.data.iloc[k].to_numpy(), bunch.images[k].ravel())
    sex = np.loadtxt(_data() / "lfw/sex.txt")
    assert (bunch.sensitive == "male").to_numpy().tolist() == (sex == 1).tolist()


@pytest.mark.parametrize(("flag", "ones"), [("white", 11829), ("black", 2428), ("asian", 3358)])
@pytest.mark.requires_data
def test_lfw_race_flags(flag, ones):
    bunch = load_lfw(sensitive=flag)
    assert _counts(bunch.sensitive) == {flag: ones, f"not {flag}": 13232 - ones}


# --------------------------------------------------------------------------
# FairML CSVs
# --------------------------------------------------------------------------

# name -> (rows, columns in the file, sensitive 1, sensitive 0, label column or None)
FAIRML = {
    "biodeg": (1055, 42, 356, 699, "nX"),
    "ecoli": (333, 9, 140, 193, None),
    "energy": (768, 10, 384, 384, "GlazingAreaDistribution<3?"),
    "image_segmentation": (660, 21, 330, 330, None),
    "letter": (20000, 18, 4664, 15336, None),
    "magic": (19020, 12, 12332, 6688, None),
    "parkinsons": (5875, 22, 1867, 4008, None),
    "skillcraft": (3338, 20, 1841, 1497, None),
    "statlog": (3071, 38, 1072, 1999, None),
    "steel": (1941, 28, 673, 1268, None),
    "wine_quality": (6497, 13, 4898, 1599, "quality>=6"),
    "german_credit": (1000, 51, 701, 299, "A21"),
    "taiwan_credit": (29623, 24, 17880, 11743, "default payment next month"),
    "compas": (5278, 8, 3175, 2103, "is_recid"),
    "adult": (32561, 60, 21790, 10771, "V15"),
    "pima_diabetes": (768, 9, 522, 246, "Class.variable..0.or.1."),
}


@pytest.mark.parametrize("name", sorted(FAIRML))
@pytest.mark.requires_data
def test_fairml_shapes_groups_and_label(name):
    rows, columns, ones, zeros, label = FAIRML[name]
    bunch = load_fairml(name)
    assert bunch.data.shape == (rows, columns - 2)
    assert _counts(bunch.sensitive) == {1: ones, 0: zeros} or _counts(bunch.sensitive) == {
        0: zeros,
        1: ones,
    }
    assert bunch.sensitive.dtype == np.int64
    if label is None:
        assert bunch.target is None and bunch.label_name == "DummyMain"
    else:
        assert bunch.label_name == label and bunch.target.name == label
        assert len(bunch.target) == rows
    assert "Olfat" in bunch.DESCR and "FairML" in bunch.DESCR
    assert all(c == c.strip() and '"' not in c and "_ " not in c for c in bunch.feature_names)


@pytest.mark.requires_data
def test_fairml_quirks_and_label_counts():
    wine = load_fairml("wine_quality")
    assert wine.feature_names[:3] == ["fixed acidity", "volatile acidity", "citric acid"]
    assert _counts(wine.target) == {1: 4113, 0: 2384}
    adult = load_fairml("adult")
    assert "V2_Private" in adult.feature_names
    assert int((adult.target == 1).sum()) == 24720  # V15 = 1 iff income <= 50K
    assert _counts(load_fairml("german_credit").target) == {0: 700, 1: 300}
    assert _counts(load_fairml("taiwan_credit").target) == {0: 23076, 1: 6547}
    assert set(load_fairml("biodeg").target.unique()) - {0, 1}  # nX is a count, not a class


# --------------------------------------------------------------------------
# locating, verifying and downloading files
# --------------------------------------------------------------------------


def _copy_with(home, relpath, monkeypatch, text=None, data=None):
    """Put a (possibly altered) copy of a shared file under ``home`` and pin its new hash.

    Pinning the altered file's hash lets the parsing checks behind the checksum run.
    """
    target = home / relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    if text is None and data is None:
        shutil.copyfile(_data() / relpath, target)
    else:
        target.write_bytes(data if data is not None else text.encode())
        entry = _fetch.FILES[relpath]
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
        monkeypatch.setitem(_fetch.FILES, relpath, _fetch.DataFile(entry.path, digest, entry.url))
    return target


def test_data_home_order(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRPCA_DATA", str(tmp_path / "env"))
    assert get_data_home(tmp_path / "arg") == tmp_path / "arg"
    assert get_data_home() == tmp_path / "env"
    monkeypatch.delenv("FAIRPCA_DATA")
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path / "sk"))
    assert get_data_home() == tmp_path / "sk" / "fairpca"
    assert not (tmp_path / "sk").exists()  # locating does not create directories
    with pytest.raises(TypeError, match="data_home"):
        get_data_home(3)


def test_missing_file_says_which_file_and_where(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        load_adult(data_home=tmp_path)
    message = str(info.value)
    assert "adult/adult.data" in message
    assert str(tmp_path / "adult" / "adult.data") in message
    assert "archive.ics.uci.edu" in message and "FAIRPCA_DATA" in message
    with pytest.raises(FileNotFoundError, match="no public download URL"):
        load_lfw(data_home=tmp_path, download=True)


@pytest.mark.requires_data
def test_environment_variable_is_used(tmp_path, monkeypatch):
    shutil.copytree(_data() / "ecoli", tmp_path / "ecoli")
    monkeypatch.setenv("FAIRPCA_DATA", str(tmp_path))
    assert load_fairml("ecoli").filenames == [str(tmp_path / "ecoli" / "Ecoli_Data.csv")]
    with pytest.raises(FileNotFoundError, match="energy/Energy_Data.csv"):
        load_fairml("energy")


@pytest.mark.requires_data
def test_checksum_mismatch_names_the_file(tmp_path):
    target = tmp_path / "german_credit" / "german.data"
    target.parent.mkdir()
    content = bytearray((_data() / "german_credit/german.data").read_bytes())
    content[100] = ord("9") if content[100] != ord("9") else ord("8")
    target.write_bytes(bytes(content))
    with pytest.raises(ValueError, match="checksum mismatch") as info:
        load_german_credit(data_home=tmp_path)
    assert str(target) in str(info.value)
    # A truncated file fails the same way.
    target.write_bytes(bytes(content[: len(content) // 2]))
    with pytest.raises(ValueError, match="checksum mismatch"):
        load_german_credit(data_home=tmp_path)


@pytest.mark.requires_data("german_credit")
def test_file_edited_in_place_with_size_and_mtime_restored_is_caught(tmp_path):
    import os

    target = tmp_path / "german_credit" / "german.data"
    target.parent.mkdir()
    original = (_data() / "german_credit/german.data").read_bytes()
    target.write_bytes(original)
    load_german_credit(data_home=tmp_path)  # verified and remembered
    stat = target.stat()
    edited = bytearray(original)
    edited[100] = ord("9") if edited[100] != ord("9") else ord("8")
    target.write_bytes(bytes(edited))  # same size
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime
    assert target.stat().st_size == stat.st_size
    assert target.stat().st_mtime_ns == stat.st_mtime_ns
    with pytest.raises(ValueError, match="checksum mismatch"):
        load_german_credit(data_home=tmp_path)


@pytest.mark.requires_data
def test_wrong_column_count_names_the_file(tmp_path, monkeypatch):
    text = (_data() / "ecoli/Ecoli_Data.csv").read_text()
    cut = "\n".join(",".join(line.split(",")[1:]) for line in text.splitlines())
    path = _copy_with(tmp_path, "ecoli/Ecoli_Data.csv", monkeypatch, text=cut)
    with pytest.raises(ValueError, match="has 8 columns, expected 9") as info:
        load_fairml("ecoli", data_home=tmp_path)
    assert str(path) in str(info.value)

    german = (_data() / "german_credit/german.data").read_text()
    dropped = "\n".join(" ".join(line.split(" ")[:-1]) for line in german.splitlines())
    path = _copy_with(tmp_path, "german_credit/german.data", monkeypatch, text=dropped)
    with pytest.raises(ValueError, match="20 columns, expected 21") as info:
        load_german_credit(data_home=tmp_path)
    assert str(path) in str(info.value)


@pytest.mark.requires_data
def test_truncated_file_with_matching_pin_is_caught_by_parsing(tmp_path, monkeypatch):
    text = (_data() / "letter/Letter_Rec_Data.csv").read_text()
    lines = text.splitlines()
    path = _copy_with(
        tmp_path, "letter/Letter_Rec_Data.csv", monkeypatch, text="\n".join(lines[:5000])
    )
    with pytest.raises(ValueError, match="4999 rows, expected 20000") as info:
        load_fairml("letter", data_home=tmp_path)
    assert str(path) in str(info.value)
    # A line cut in the middle leaves a missing value: named, not silently dropped.
    credit = (_data() / "default_credit/default_degree_with_label.csv").read_text()
    cut = credit[: credit.index("\n", 5000) - 3]
    path = _copy_with(tmp_path, "default_credit/default_degree_with_label.csv", monkeypatch, cut)
    with pytest.raises(ValueError, match="missing or unparsable") as info:
        load_default_credit(data_home=tmp_path)
    assert str(path) in str(info.value)


@pytest.mark.requires_data
def test_unknown_german_code_is_an_error(tmp_path, monkeypatch):
    german = (_data() / "german_credit/german.data").read_text().replace("A11 ", "A19 ", 1)
    path = _copy_with(tmp_path, "german_credit/german.data", monkeypatch, text=german)
    with pytest.raises(ValueError, match="unknown code.*A19.*checking_account") as info:
        load_german_credit(data_home=tmp_path)
    assert str(path) in str(info.value)


def test_corrupt_lfw_archive(tmp_path, monkeypatch):
    buffer = io.BytesIO()
    np.savez_compressed(buffer, grey_x3=np.zeros((10, 1764), np.uint16), sex=np.zeros(10, np.uint8))
    path = _copy_with(
        tmp_path, "lfw/lfw_samadi_1764px_grey_x3.npz", monkeypatch, data=buffer.getvalue()
    )
    with pytest.raises(ValueError, match=r"expected \(13232, 1764\)") as info:
        load_lfw(data_home=tmp_path)
    assert str(path) in str(info.value)


class _Response(io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.mark.requires_data
def test_download_verifies_before_saving(tmp_path, monkeypatch):
    original = (_data() / "ecoli/Ecoli_Data.csv").read_bytes()
    requested = []

    def good(url, timeout):
        requested.append(url)
        return _Response(original)

    monkeypatch.setattr(_fetch.urllib.request, "urlopen", good)
    bunch = load_fairml("ecoli", data_home=tmp_path, download=True)
    assert requested == [_fetch.FILES["ecoli/Ecoli_Data.csv"].url]
    assert requested[0].startswith("https://raw.githubusercontent.com/molfat66/FairML/")
    assert (tmp_path / "ecoli" / "Ecoli_Data.csv").read_bytes() == original
    assert bunch.data.shape == (333, 7)

    # A download whose checksum does not match is refused and nothing is stored.
    monkeypatch.setattr(_fetch.urllib.request, "urlopen", lambda url, timeout: _Response(b"x,y\n"))
    with pytest.raises(ValueError, match="checksum mismatch for Energy_Data.csv"):
        load_fairml("energy", data_home=tmp_path, download=True)
    assert list((tmp_path / "energy").iterdir()) == []


def test_download_without_network(tmp_path, monkeypatch):
    def offline(url, timeout):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(_fetch.urllib.request, "urlopen", offline)
    with pytest.raises(OSError, match="could not download data file adult.data") as info:
        load_adult(data_home=tmp_path, download=True)
    assert str(tmp_path / "adult" / "adult.data") in str(info.value)
    assert list((tmp_path / "adult").iterdir()) == []
    with pytest.raises(TypeError, match="download must be a bool"):
        load_adult(data_home=tmp_path, download="yes")


@pytest.mark.parametrize(
    ("loader", "kwargs", "message"),
    [
        (load_german_credit, {"sensitive": "race"}, "sensitive must be one of"),
        (load_compas, {"sensitive": "age"}, "sensitive must be one of"),
        (load_adult, {"subset": "validation"}, "subset must be one of"),
        (load_default_credit, {"sensitive": "age"}, "sensitive must be one of"),
        (load_lfw, {"sensitive": "age"}, "sensitive must be one of"),
        (load_fairml, {"name": "iris"}, "name must be one of"),
    ],
)
def test_bad_arguments(loader, kwargs, message, tmp_path):
    # Arguments are checked before any file is looked for.
    with pytest.raises(ValueError, match=message):
        loader(**kwargs, data_home=tmp_path)


@pytest.mark.requires_data
def test_loaders_need_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pip install 'fairpca\[datasets\]'"):
        load_fairml("ecoli")


@pytest.mark.requires_data
def test_pinned_checksums_are_those_of_the_data_readme():
    listed = {}
    for line in (_data() / "SHA256SUMS.txt").read_text().splitlines():
        digest, name = line.split()
        listed[name] = digest
    authors = [path for path in _fetch.FILES if path.startswith("authors/")]
    assert len(_fetch.FILES) - len(authors) == 22
    per_folder = {}
    for path in authors:
        folder = path.split("/")[1]
        per_folder[folder] = per_folder.get(folder, 0) + 1
    # Lee et al.'s ten train/test splits of three data sets; Vu et al.'s two differing files.
    assert per_folder == {"lee2022": 60, "vu2022": 2}
    for relpath, entry in _fetch.FILES.items():
        assert entry.path == relpath
        assert listed[relpath] == entry.sha256, relpath
        assert entry.url is None or entry.url.startswith("https://")


@pytest.mark.requires_data
def test_ragged_row_is_a_parse_error_naming_the_file(tmp_path, monkeypatch):
    lines = (_data() / "energy/Energy_Data.csv").read_text().splitlines()
    lines[10] += ",1.5"
    path = _copy_with(tmp_path, "energy/Energy_Data.csv", monkeypatch, text="\n".join(lines))
    with pytest.raises(ValueError, match="could not parse data file") as info:
        load_fairml("energy", data_home=tmp_path)
    assert str(path) in str(info.value)

"""A user's raw table: which columns become features, and why the others do not."""

import numpy as np
import pandas as pd
import pytest

from fairpca.datasets import choose_columns, read_table
from fairpca.datasets._table import MIN_TEXT_LEVELS


def _raw_table(n=400, seed=0):
    """A table as users bring them: ids, names, dates, free text, empties, real features."""
    rng = np.random.default_rng(seed)
    days = pd.Timestamp("2013-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D")
    return pd.DataFrame(
        {
            "id": np.arange(1000, 1000 + n),
            "name": [f"person {i} {rng.integers(1e6)}" for i in range(n)],
            "case_number": [f"{13000000 + i}CF10A" for i in range(n)],
            "arrest_date": days.strftime("%Y-%m-%d"),
            "jail_in": (days + pd.to_timedelta(rng.integers(0, 86400, n), unit="s")).strftime(
                "%Y-%m-%d %H:%M:%S"
            ),
            "charge": [f"charge {i}" for i in rng.integers(0, 120, n)],  # 120 > max(50, 20)
            "degree": rng.choice(["F", "M"], n),
            "age": rng.integers(18, 70, n),
            "priors": rng.poisson(2.0, n),
            "score": rng.normal(size=n),
            "violent": np.full(n, np.nan),
            "assessment": "Risk of Recidivism",
            "race": rng.choice(["a", "b", "c"], n),
            "recid": rng.integers(0, 2, n),
        }
    )


@pytest.fixture
def raw_csv(tmp_path):
    frame = _raw_table()
    path = tmp_path / "raw.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_rules_leave_out_ids_dates_free_text_and_empty_columns(raw_csv):
    path, frame = raw_csv
    table = read_table(path, "race", "recid")
    assert list(table.features.columns) == ["degree", "age", "priors", "score"]
    notes = "\n".join(table.notes)
    assert "left out as dates or times: arrest_date, jail_in;" in notes
    assert "left out as identifiers (nearly every value different): id, name, case_number;" in notes
    assert f"left out as text with more than {MIN_TEXT_LEVELS} distinct values: charge;" in notes
    assert "every value missing: violent; one value only: assessment." in notes
    # Each rule speaks once, and says how to keep what it left out.
    assert len(table.notes) == 5 and notes.count("--features") == 3
    np.testing.assert_array_equal(table.groups, frame["race"].to_numpy())
    np.testing.assert_array_equal(table.target, frame["recid"].to_numpy())
    assert table.positive_class == 1


def test_named_columns_are_kept_and_dates_become_days(raw_csv):
    path, frame = raw_csv
    table = read_table(path, "race", features=["id", "arrest_date", "charge", "violent"])
    assert list(table.features.columns) == ["id", "arrest_date", "charge"]
    expected = (pd.to_datetime(frame["arrest_date"]) - pd.Timestamp("1970-01-01")).dt.days
    np.testing.assert_array_equal(table.features["arrest_date"], expected.astype(float))
    assert any("dates converted to days since 1970-01-01: arrest_date" in n for n in table.notes)
    assert any("every value missing: violent" in n for n in table.notes)


def test_dates_with_gaps_and_other_formats_are_recognised():
    n = 200
    dates = pd.Series(pd.date_range("2001-01-01", periods=n, freq="D").strftime("%m/%d/%Y"))
    frame = pd.DataFrame({"when": dates.where(np.arange(n) % 5 > 0), "x": np.arange(n) % 7})
    kept, notes = choose_columns(frame)
    assert list(kept.columns) == ["x"] and "dates or times: when" in notes[0]
    # Month names, code strings and numbers written as text are not dates.
    frame = pd.DataFrame(
        {
            "month": np.resize(["May", "June", "July"], n),
            "code": [f"t{i % 40}" for i in range(n)],
            "degree": np.resize(["(F3)", "(M1)"], n),
            "band": np.resize(["25 - 45", "Greater than 45"], n),
        }
    )
    kept, notes = choose_columns(frame)
    assert list(kept.columns) == ["month", "code", "degree", "band"] and notes == []


def test_identifier_and_cardinality_thresholds():
    n = 1000
    share = pd.DataFrame(
        {
            # 960 distinct of 1000: an identifier; 940 distinct: free text, not an id.
            "near_id": [f"c{i}" for i in range(960)] + [f"c{i}" for i in range(40)],
            "many": [f"t{i % 940}" for i in range(n)],
            "levels_50": [f"l{i % 50}" for i in range(n)],
            "levels_51": [f"l{i % 51}" for i in range(n)],
            "counts": np.arange(n) % 990,  # integers, not all different: a feature
        }
    )
    kept, notes = choose_columns(share)
    assert list(kept.columns) == ["levels_50", "counts"]
    assert "identifiers (nearly every value different): near_id;" in notes[0]
    assert "text with more than 50 distinct values: many, levels_51;" in notes[1]
    # With more rows the cap is 5 % of them: 51 levels of 2000 rows are kept.
    kept, _ = choose_columns(pd.concat([share, share], ignore_index=True))
    assert "levels_51" in kept.columns


def test_the_one_hot_width_is_capped_before_any_fit():
    n = 3000
    frame = pd.DataFrame(
        {
            "a": [f"a{i % 140}" for i in range(n)],
            "b": [f"b{i % 100}" for i in range(n)],
            "c": np.resize(["x", "y"], n),
        }
    )
    kept, _ = choose_columns(frame, max_encoded_features=242)
    assert list(kept.columns) == ["a", "b", "c"]
    with pytest.raises(ValueError, match=r"give 242 features, more than the cap of 241") as info:
        choose_columns(frame, max_encoded_features=241)
    assert "'a' (140 values), 'b' (100 values), 'c' (2 values)" in str(info.value)
    assert "--max-encoded-features" in str(info.value)
    with pytest.raises(ValueError, match="max_encoded_features == 0, must be >= 1"):
        choose_columns(frame, max_encoded_features=0)
    with pytest.raises(TypeError, match="max_encoded_features must be an instance of int"):
        choose_columns(frame, max_encoded_features=2.5)


def test_headerless_file_with_column_names(tmp_path):
    path = tmp_path / "adult.data"
    path.write_text("39, Male, 13, <=50K\n50, Female, 9, >50K\n39, Male, 9, <=50K\n")
    table = read_table(path, "sex", "income", column_names=["age", "sex", "edu", "income"])
    assert list(table.features.columns) == ["age", "edu"]
    np.testing.assert_array_equal(table.groups, ["Male", "Female", "Male"])
    np.testing.assert_array_equal(table.target, [0, 1, 0])
    assert table.positive_class == ">50K"
    with pytest.raises(ValueError, match="has 4 columns but 3 column names"):
        read_table(path, "sex", column_names=["age", "sex", "edu"])
    with pytest.raises(ValueError, match="column names must be distinct"):
        read_table(path, "sex", column_names=["age", "sex", "age", "income"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sensitive": "gender"}, "sensitive column 'gender' is not in raw.csv"),
        ({"sensitive": "race", "target": "degree2"}, "target column 'degree2' is not in"),
        ({"sensitive": "race", "target": "charge"}, r"exactly two values, found \d+"),
        ({"sensitive": "score"}, "bins=N"),
        ({"sensitive": "race", "bins": 3}, "bins needs a numeric sensitive column"),
        ({"sensitive": "violent"}, "sensitive column 'violent' has missing values"),
        ({"sensitive": "race", "features": ["violent"]}, "no feature columns"),
    ],
)
def test_bad_requests_name_the_problem(raw_csv, kwargs, message):
    path, _ = raw_csv
    with pytest.raises(ValueError, match=message):
        read_table(path, **kwargs)


def test_numeric_sensitive_column_cut_into_bins(raw_csv):
    path, frame = raw_csv
    table = read_table(path, "age", bins=4)
    assert len(np.unique(table.groups)) == 4
    assert "groups: 'age' cut into 4 quantile bins" in table.notes


def test_the_former_module_is_an_alias():
    import fairpca.table

    assert fairpca.table.read_table is read_table
    assert fairpca.table.choose_columns is choose_columns


def test_constant_and_empty_columns_are_named_and_left_out(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame(
        {
            "g": ["a", "b"] * 20,
            "x": np.arange(40.0) % 7,
            "same": 3.0,
            "blank": np.nan,
            "y": [0, 1, 1, 0] * 10,
        }
    ).to_csv(path, index=False)
    table = read_table(path, "g", "y", drop=None)
    assert list(table.features.columns) == ["x"]
    assert any(
        "one value only: same" in n and "every value missing: blank" in n for n in table.notes
    )
    assert table.positive_class == 1 and table.target.tolist() == [0, 1, 1, 0] * 10
    with pytest.raises(ValueError, match="no feature columns besides the named ones"):
        read_table(path, "g", "y", drop=["x"])


def _people(tmp_path):
    frame = pd.DataFrame(
        {
            "sex": ["F", "M", "F", "M", "F", "M"],
            "race": ["a", "a", "b", "b", "a", "b"],
            "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            "y": [0, 1, 0, 1, 1, 0],
        }
    )
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return path


def test_several_sensitive_columns_make_intersectional_groups(tmp_path):
    path = _people(tmp_path)
    for sensitive in ("sex,race", ["sex", "race"], "sex, race"):
        table = read_table(path, sensitive, "y")
        assert list(table.groups) == ["F/a", "M/a", "F/b", "M/b", "F/a", "M/b"]
        assert list(table.features.columns) == ["x"]  # neither group column is a feature
        assert "groups: the combinations of 'sex' x 'race' (4 groups)" in table.notes
    with pytest.raises(ValueError, match="sensitive column 'religion' is not in people.csv"):
        read_table(path, "sex,religion")


def test_the_target_cannot_be_a_sensitive_column(tmp_path):
    path = _people(tmp_path)
    for sensitive in ("y", "sex,y"):
        with pytest.raises(ValueError, match="target column 'y' is also a sensitive column"):
            read_table(path, sensitive, "y")

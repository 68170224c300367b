"""Group labels are encoded by hashing (issue 46), with the order and errors of ``np.unique``.

The reference is :func:`numpy.unique` on the plain values: sorted groups and
each row's index into them. Both hash tables are checked: pandas' (taken when
pandas is loaded) and the dictionary used without it.
"""

import sys
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairpca
from answers import assert_same_answer
from fairpca._validation import check_sensitive_features
from fairpca.datasets import make_gaussian_groups
from transform_groups import transform_kwargs

WORDS = st.sampled_from(["a", "b", "ab", "B", "é", "zz", "", " a", "a "])


def _no_pandas():
    """Hide pandas from the encoder, as in an environment without it."""
    return mock.patch.dict(sys.modules, {"pandas": None})


def _assert_encodes_as_unique(labels, plain):
    groups, codes = check_sensitive_features(labels, len(plain))
    expected_groups, expected_codes = np.unique(plain, return_inverse=True)
    np.testing.assert_array_equal(groups, expected_groups)
    assert groups.dtype == expected_groups.dtype
    np.testing.assert_array_equal(codes, expected_codes)
    assert codes.dtype == np.intp


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.integers(-300, 300), min_size=1, max_size=40),
    dtype=st.sampled_from(["int8", "int16", "int64", "uint16", "float64"]),
)
def test_numbers_encode_as_numpy_unique(values, dtype):
    labels = np.array(values).astype(dtype)
    _assert_encodes_as_unique(labels, labels)
    _assert_encodes_as_unique(pd.Series(labels), labels)
    _assert_encodes_as_unique(labels.astype(object), labels.astype(np.int64))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(WORDS, min_size=1, max_size=40), pandas_loaded=st.booleans())
def test_strings_encode_as_numpy_unique(values, pandas_loaded):
    plain = np.array(values, dtype=str)
    wide = plain.astype("<U12")  # the groups keep the array's width
    objects = np.array(values, dtype=object)
    if pandas_loaded:
        _assert_encodes_as_unique(pd.Series(values), plain)
        _assert_encodes_as_unique(pd.Series(values, dtype="category"), plain)
        _assert_encodes_as_unique(pd.Series(values, dtype="string"), plain)
        _assert_encodes_as_unique(pd.Series(objects, dtype=object), plain)
    with mock.patch.dict(sys.modules) if pandas_loaded else _no_pandas():
        _assert_encodes_as_unique(plain, plain)
        _assert_encodes_as_unique(wide, wide)
        _assert_encodes_as_unique(objects, plain)
        encoded = np.array([v.encode() for v in values])
        _assert_encodes_as_unique(encoded, encoded)


@settings(max_examples=30, deadline=None)
@given(values=st.lists(st.booleans(), min_size=1, max_size=40))
def test_booleans_encode_as_numpy_unique(values):
    plain = np.array(values)
    _assert_encodes_as_unique(plain, plain)
    _assert_encodes_as_unique(pd.Series(values, dtype="boolean"), plain)
    _assert_encodes_as_unique(plain.astype(object), plain)
    with _no_pandas():
        _assert_encodes_as_unique(plain.astype(object), plain)


@settings(max_examples=40, deadline=None)
@given(
    sex=st.lists(st.sampled_from(["F", "M"]), min_size=1, max_size=40),
    race=st.data(),
)
def test_intersections_are_the_sorted_tuples_that_occur(sex, race):
    other = race.draw(st.lists(st.integers(0, 3), min_size=len(sex), max_size=len(sex)))
    table = pd.DataFrame({"sex": sex, "race": other})
    groups, codes = check_sensitive_features(table, len(sex))
    expected = sorted(set(zip(sex, other, strict=True)))  # brute force
    assert list(groups) == expected
    assert [groups[c] for c in codes] == list(zip(sex, other, strict=True))
    groups_array, codes_array = check_sensitive_features(np.array(table, dtype=object), len(sex))
    np.testing.assert_array_equal(codes_array, codes)


@pytest.mark.parametrize("pandas_loaded", [True, False])
@pytest.mark.parametrize(
    ("labels", "error", "match"),
    [
        (np.array(["a", None, "b"], dtype=object), ValueError, "missing labels"),
        (np.array(["a", np.nan, "b"], dtype=object), ValueError, "missing labels"),
        (np.array(["a", pd.NA, "b"], dtype=object), ValueError, "missing labels"),
        (np.array([1, True, 1], dtype=object), TypeError, "mixes label types"),
        (np.array([0, False], dtype=object), TypeError, "mixes label types"),
        (np.array([1, "a", 1], dtype=object), TypeError, "mixes label types"),
        (np.array([0.5, np.nan, 1.0]), ValueError, "NaN or infinite"),
        (np.array([0.5, np.inf, 1.0]), ValueError, "NaN or infinite"),
    ],
)
def test_bad_numpy_labels_keep_their_errors(labels, error, match, pandas_loaded):
    with mock.patch.dict(sys.modules) if pandas_loaded else _no_pandas():
        with pytest.raises(error, match=match):
            check_sensitive_features(labels, len(labels))


@pytest.mark.parametrize(
    ("labels", "error", "match"),
    [
        (pd.Series(["a", None, "b"]), ValueError, "missing labels"),
        (pd.Series(["a", pd.NA, "b"], dtype="string"), ValueError, "missing labels"),
        (pd.Series([True, pd.NA, False], dtype="boolean"), ValueError, "missing labels"),
        (pd.Series([1, pd.NA, 2], dtype="Int64"), ValueError, "missing labels|NaN"),
        (pd.Series(["a", None], dtype="category"), ValueError, "missing labels"),
        (pd.Series([0.5, np.nan]), ValueError, "NaN or infinite"),
        (pd.Series([0.5, np.inf]), ValueError, "NaN or infinite"),
        (pd.Series([1, True, 2], dtype=object), TypeError, "mixes label types"),
        (pd.Series([[1], [2]], dtype=object), TypeError, "got list"),
        (pd.Series(["a", "b"]), ValueError, "has 2 labels but X has 3 rows"),
    ],
)
def test_bad_pandas_labels_keep_their_errors(labels, error, match):
    with pytest.raises(error, match=match):
        check_sensitive_features(labels, 3 if "X has 3" in match else len(labels))


def test_unhashable_numpy_labels_are_named():
    labels = np.empty(2, dtype=object)
    labels[:] = [[1], [2]]
    with pytest.raises(TypeError, match="got list"):
        check_sensitive_features(labels, 2)


def _unsupervised_estimators():
    return [
        cls
        for cls in fairpca.all_estimators()
        if not getattr(fairpca.estimator_capabilities(cls), "supervised", False)
    ]


@pytest.mark.parametrize("cls", _unsupervised_estimators(), ids=lambda c: c.__name__)
def test_string_and_integer_labels_give_the_same_fit(cls):
    X, s = make_gaussian_groups(n_samples=450, n_features=8, n_groups=3, random_state=3)
    names = np.array(["north", "south", "west"])[s]
    seed = {"random_state": 0} if "random_state" in cls().get_params() else {}
    reference = cls(**seed).fit(X, sensitive_features=s)
    for labels in (names, names.astype(object), pd.Series(names, dtype="str")):
        est = cls(**seed).fit(X, sensitive_features=labels)
        np.testing.assert_array_equal(est.groups_, ["north", "south", "west"])
        if hasattr(reference, "components_"):
            assert_same_answer(est, reference)
        else:
            np.testing.assert_allclose(
                est.transform(X, **transform_kwargs(est, labels)),
                reference.transform(X, **transform_kwargs(reference, s)),
                rtol=1e-10,
                atol=1e-10,
            )

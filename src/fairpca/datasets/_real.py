"""Loaders for the real data sets of the fair-PCA literature.

Each loader reads pinned, checksum-verified files (see
:mod:`fairpca.datasets._fetch` for where they are looked for) and returns a
:class:`sklearn.utils.Bunch` with

- ``data``: pandas DataFrame of the attributes (the target excluded);
- ``sensitive``: pandas Series, the group label of each row;
- ``target``: pandas Series, or ``None`` when the data set has no label;
- ``feature_names``: list of the columns of ``data``;
- ``DESCR``: source, licence and citation;
- ``filenames``: the files read.

The loaders parse the files faithfully and drop nothing unless the docstring
says so (then the Bunch reports it in ``n_dropped``). The papers' own
preparations (encodings, subsamples, splits, standardisation) are in
:mod:`fairpca.experiments`.

pandas is required (``pip install 'fairpca[datasets]'``).
"""

from __future__ import annotations

import os
from typing import Literal

import numpy as np
from sklearn.utils import Bunch

from fairpca.datasets._fetch import fetch_file

__all__ = [
    "FAIRML_DATASETS",
    "load_adult",
    "load_compas",
    "load_default_credit",
    "load_fairml",
    "load_german_credit",
    "load_lfw",
]

_UCI_LICENCE = (
    "Licence: CC BY 4.0 (UCI Machine Learning Repository donation policy; the data set's own "
    "page could not be checked)."
)


def _pandas():
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - depends on environment
        raise ImportError(
            "the fairpca data set loaders require pandas: pip install 'fairpca[datasets]'"
        ) from exc
    return pd


def _check_choice(value, name, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}.")
    return value


def _read_csv(path, n_columns, names=None, **kwargs):
    """``pandas.read_csv`` whose errors, and a wrong column count, name the file.

    With ``names`` the file has no header; the names are set after the column
    count was checked (``read_csv(names=...)`` would pad or merge columns silently).
    """
    pd = _pandas()
    if names is not None:
        kwargs["header"] = None
    try:
        frame = pd.read_csv(path, **kwargs)
    except ValueError as exc:  # ParserError, EmptyDataError and UnicodeDecodeError among them
        raise ValueError(f"could not parse data file {path}: {exc}") from exc
    if frame.shape[1] != n_columns:
        raise ValueError(
            f"data file {path} has {frame.shape[1]} columns, expected {n_columns}; "
            "the file is truncated or not the expected version."
        )
    if frame.shape[0] == 0:
        raise ValueError(f"data file {path} has no data rows.")
    if names is not None:
        frame.columns = names
    return frame


def _check_numeric(frame, columns, path):
    """Raise naming ``path`` if any of ``columns`` holds a non-numeric value."""
    pd = _pandas()
    bad = [str(c) for c in columns if not pd.api.types.is_numeric_dtype(frame[c].dtype)]
    if bad:
        raise ValueError(f"data file {path}: non-numeric values in column(s) {', '.join(bad)}.")


def _check_complete(frame, columns, path):
    """Raise naming ``path`` if any of ``columns`` has a missing value."""
    bad = [str(c) for c in columns if frame[c].isna().any()]
    if bad:
        raise ValueError(
            f"data file {path} has missing or unparsable values in column(s) {', '.join(bad)}; "
            "the file is truncated or corrupted."
        )


def _bunch(data, sensitive, target, descr, filenames, **extra):
    return Bunch(
        data=data,
        sensitive=sensitive,
        target=target,
        feature_names=[str(c) for c in data.columns],
        DESCR=descr,
        filenames=[str(f) for f in filenames],
        **extra,
    )


# --------------------------------------------------------------------------
# German credit
# --------------------------------------------------------------------------

_GERMAN_COLUMNS = [
    "checking_account",
    "duration",
    "credit_history",
    "purpose",
    "credit_amount",
    "savings",
    "employment_since",
    "installment_rate",
    "personal_status",
    "other_debtors",
    "residence_since",
    "property",
    "age",
    "other_installment_plans",
    "housing",
    "existing_credits",
    "job",
    "people_liable",
    "telephone",
    "foreign_worker",
    "credit",
]

# Short names for the codes of german.doc (attribute -> code -> level).
_GERMAN_CODES = {
    "checking_account": {"A11": "<0", "A12": "0-200", "A13": ">=200", "A14": "none"},
    "credit_history": {
        "A30": "none_or_all_paid",
        "A31": "all_paid_this_bank",
        "A32": "existing_paid",
        "A33": "past_delay",
        "A34": "critical",
    },
    "purpose": {
        "A40": "car_new",
        "A41": "car_used",
        "A42": "furniture",
        "A43": "radio_tv",
        "A44": "appliances",
        "A45": "repairs",
        "A46": "education",
        "A47": "vacation",
        "A48": "retraining",
        "A49": "business",
        "A410": "other",
    },
    "savings": {
        "A61": "<100",
        "A62": "100-500",
        "A63": "500-1000",
        "A64": ">=1000",
        "A65": "unknown",
    },
    "employment_since": {
        "A71": "unemployed",
        "A72": "<1",
        "A73": "1-4",
        "A74": "4-7",
        "A75": ">=7",
    },
    "personal_status": {
        "A91": "male_divorced",
        "A92": "female_div_or_married",
        "A93": "male_single",
        "A94": "male_married_or_widowed",
        "A95": "female_single",
    },
    "other_debtors": {"A101": "none", "A102": "co_applicant", "A103": "guarantor"},
    "property": {
        "A121": "real_estate",
        "A122": "savings_or_insurance",
        "A123": "car_or_other",
        "A124": "unknown",
    },
    "other_installment_plans": {"A141": "bank", "A142": "stores", "A143": "none"},
    "housing": {"A151": "rent", "A152": "own", "A153": "free"},
    "job": {
        "A171": "unskilled_nonresident",
        "A172": "unskilled_resident",
        "A173": "skilled",
        "A174": "management",
    },
    "telephone": {"A191": "none", "A192": "yes"},
    "foreign_worker": {"A201": "yes", "A202": "no"},
}

#: Age (years) from which a German-credit applicant is in the "old" group, as Lee et al.
GERMAN_AGE_THRESHOLD = 25

_GERMAN_DESCR = """German credit (Statlog German Credit Data), UCI Machine Learning Repository.

1000 loan applicants described by 20 attributes (7 numeric, 13 categorical; the
categorical codes A11...A202 of german.doc are decoded to short level names) and
a credit risk label (good 700 / bad 300). Sensitive attribute: age (>= 25: 851,
< 25: 149, the grouping of Lee et al. 2022 after Kamiran & Calders) or sex
derived from personal_status (female = A92/A95: 310).

Source: https://archive.ics.uci.edu/ml/machine-learning-databases/statlog/german/german.data
{licence}
Citation: H. Hofmann. Statlog (German Credit Data). UCI Machine Learning
Repository, 1994. https://doi.org/10.24432/C5NC77
"""


def load_german_credit(
    *,
    sensitive: Literal["age", "sex"] = "age",
    data_home: str | os.PathLike[str] | None = None,
    download: bool = False,
) -> Bunch:
    """Load the UCI German credit data (``german.data``).

    Parameters
    ----------
    sensitive : {"age", "sex"}, default="age"
        ``"age"``: ``"25+"`` if age >= 25 else ``"<25"`` (Lee et al. 2022, as
        AIF360 with their threshold). ``"sex"``: ``"female"`` for personal status
        A92/A95, else ``"male"`` (as AIF360's German data set).
    data_home : str or path-like, default=None
        Directory holding ``german_credit/german.data``; default: the
        ``FAIRPCA_DATA`` environment variable, else the user cache directory.
    download : bool, default=False
        Fetch the file from UCI if it is missing (checksum-verified).

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (1000, 20) DataFrame, categorical codes decoded; ``target``
        Series ``"good"``/``"bad"``; ``sensitive`` Series; ``feature_names``;
        ``DESCR``; ``filenames``.
    """
    _check_choice(sensitive, "sensitive", {"age", "sex"})
    path = fetch_file("german_credit/german.data", data_home=data_home, download=download)
    frame = _read_csv(path, len(_GERMAN_COLUMNS), sep=" ", names=_GERMAN_COLUMNS)
    for column, codes in _GERMAN_CODES.items():
        decoded = frame[column].map(codes)
        if decoded.isna().any():
            unknown = sorted(set(frame.loc[decoded.isna(), column].astype(str)))[:5]
            raise ValueError(
                f"data file {path}: unknown code(s) {unknown} in attribute {column!r}; "
                "the file is corrupted or not german.data."
            )
        frame[column] = decoded
    _check_numeric(frame, [c for c in _GERMAN_COLUMNS if c not in _GERMAN_CODES], path)
    pd = _pandas()
    target = frame.pop("credit")
    if not set(target.unique()) <= {1, 2}:
        raise ValueError(f"data file {path}: the class column must hold 1 (good) or 2 (bad).")
    target = target.map({1: "good", 2: "bad"}).rename("credit")
    if sensitive == "age":
        s = np.where(frame["age"] >= GERMAN_AGE_THRESHOLD, "25+", "<25")
    else:
        s = np.where(frame["personal_status"].str.startswith("female"), "female", "male")
    return _bunch(
        frame,
        pd.Series(s, index=frame.index, name=sensitive),
        target,
        _GERMAN_DESCR.format(licence=_UCI_LICENCE),
        [path],
    )


# --------------------------------------------------------------------------
# COMPAS
# --------------------------------------------------------------------------

_COMPAS_N_COLUMNS = 53

_COMPAS_DESCR = """COMPAS recidivism data (ProPublica, compas-scores-two-years.csv).

7214 defendants screened by COMPAS in Broward County, Florida, 2013-2014, with
their two-year recidivism (two_year_recid). With ProPublica's standard filter
(|days_b_screening_arrest| <= 30, is_recid != -1, c_charge_degree != "O",
score_text present) 6172 rows remain: race African-American 3175, Caucasian
2103, Hispanic 509, Other 343, Asian 31, Native American 11. The file contains
personal data (names, dates of birth).

Source: https://github.com/propublica/compas-analysis (commit bafff5da).
Licence: no licence file; ProPublica's Data Terms of Use apply (no modification
except corrections, no sub-licensing or resale; cite ProPublica when used in a
published table or chart).
Citation: J. Larson, S. Mattu, L. Kirchner and J. Angwin. "How We Analyzed the
COMPAS Recidivism Algorithm." ProPublica, 2016.
"""


def load_compas(
    *,
    sensitive: Literal["race", "sex"] = "race",
    propublica_filter: bool = True,
    data_home: str | os.PathLike[str] | None = None,
    download: bool = False,
) -> Bunch:
    """Load ProPublica's COMPAS two-year recidivism data.

    The file names two columns twice (``decile_score``, ``priors_count``); the
    second copies are checked to equal the first and dropped.

    Parameters
    ----------
    sensitive : {"race", "sex"}, default="race"
        Column used as the group label (its raw values, e.g. ``"Caucasian"``).
    propublica_filter : bool, default=True
        Keep only the rows ProPublica's analysis keeps:
        ``-30 <= days_b_screening_arrest <= 30``, ``is_recid != -1``,
        ``c_charge_degree != "O"`` and ``score_text`` not missing (6172 of
        7214). The number of rows removed is ``n_dropped``.
    data_home : str or path-like, default=None
        Directory holding ``compas/compas-scores-two-years.csv``.
    download : bool, default=False
        Fetch the file from ProPublica's repository if it is missing.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` DataFrame indexed by ``id`` (49 columns), ``target``
        ``two_year_recid`` (0/1), ``sensitive``, ``feature_names``, ``DESCR``,
        ``filenames`` and ``n_dropped``.
    """
    _check_choice(sensitive, "sensitive", {"race", "sex"})
    if not isinstance(propublica_filter, bool):
        raise TypeError("propublica_filter must be a bool.")
    path = fetch_file("compas/compas-scores-two-years.csv", data_home=data_home, download=download)
    frame = _read_csv(path, _COMPAS_N_COLUMNS)
    for name in ("decile_score", "priors_count"):
        copy = f"{name}.1"
        if copy not in frame.columns or not frame[name].equals(frame[copy]):
            raise ValueError(
                f"data file {path}: the duplicated column {name!r} is missing or differs "
                "from its first copy; the file is not ProPublica's."
            )
        frame = frame.drop(columns=copy)
    _check_complete(frame, ["id", "race", "sex", "two_year_recid", "is_recid"], path)
    frame = frame.set_index("id")
    n_rows = len(frame)
    if propublica_filter:
        days = frame["days_b_screening_arrest"]
        keep = (
            days.between(-30, 30)
            & (frame["is_recid"] != -1)
            & (frame["c_charge_degree"] != "O")
            & frame["score_text"].notna()
            & (frame["score_text"] != "N/A")
        )
        frame = frame[keep]
    target = frame.pop("two_year_recid")
    return _bunch(
        frame,
        frame[sensitive].rename(sensitive),
        target,
        _COMPAS_DESCR,
        [path],
        n_dropped=n_rows - len(frame),
    )


# --------------------------------------------------------------------------
# Adult
# --------------------------------------------------------------------------

_ADULT_COLUMNS = [
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
    "income",
]
_ADULT_NUMERIC = [
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
]

_ADULT_DESCR = """Adult (Census Income), UCI Machine Learning Repository.

Extracted from the 1994 US census: 32561 training rows (adult.data) and 16281
test rows (adult.test), 14 attributes, income above or at most 50K. Missing
values ("?") in workclass, occupation and native-country are NaN: 2399
training and 1221 test rows have one. Training set: sex Male 21790 / Female
10771; race White 27816, Black 3124, Asian-Pac-Islander 1039,
Amer-Indian-Eskimo 311, Other 271.

Source: https://archive.ics.uci.edu/ml/machine-learning-databases/adult/
{licence}
Citation: B. Becker and R. Kohavi. Adult. UCI Machine Learning Repository,
1996. https://doi.org/10.24432/C5XW20
"""


def _read_adult(path, skiprows):
    frame = _read_csv(
        path,
        len(_ADULT_COLUMNS),
        names=_ADULT_COLUMNS,
        skipinitialspace=True,
        na_values="?",
        skiprows=skiprows,
    )
    required = [c for c in _ADULT_COLUMNS if c not in ("workclass", "occupation", "native-country")]
    _check_complete(frame, required, path)
    _check_numeric(frame, _ADULT_NUMERIC, path)
    # adult.test writes its labels with a trailing period ("<=50K.").
    frame["income"] = frame["income"].str.rstrip(".")
    if not set(frame["income"].unique()) <= {"<=50K", ">50K"}:
        raise ValueError(f"data file {path}: income labels other than '<=50K' / '>50K'.")
    return frame.astype({c: "int64" for c in _ADULT_NUMERIC})


def load_adult(
    *,
    subset: Literal["all", "train", "test"] = "all",
    sensitive: Literal["sex", "race"] = "sex",
    data_home: str | os.PathLike[str] | None = None,
    download: bool = False,
) -> Bunch:
    """Load the UCI Adult census-income data.

    Parsing: fields are separated by ``", "``; ``?`` marks a missing value
    (kept as NaN); ``adult.test`` starts with a junk line (skipped) and ends its
    labels with a period (removed).

    Parameters
    ----------
    subset : {"all", "train", "test"}, default="all"
        ``adult.data`` (32561 rows), ``adult.test`` (16281) or both, training
        rows first (48842).
    sensitive : {"sex", "race"}, default="sex"
        Column used as the group label (raw values).
    data_home : str or path-like, default=None
        Directory holding ``adult/adult.data`` and ``adult/adult.test``.
    download : bool, default=False
        Fetch missing files from UCI.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` DataFrame (14 attributes), ``target`` ``income``
        (``"<=50K"``/``">50K"``), ``sensitive``, ``feature_names``, ``DESCR``,
        ``filenames`` and ``subset`` (Series ``"train"``/``"test"`` per row).
    """
    _check_choice(subset, "subset", {"all", "train", "test"})
    _check_choice(sensitive, "sensitive", {"sex", "race"})
    pd = _pandas()
    parts, paths = [], []
    if subset in ("all", "train"):
        paths.append(fetch_file("adult/adult.data", data_home=data_home, download=download))
        parts.append(_read_adult(paths[-1], skiprows=None).assign(_subset="train"))
    if subset in ("all", "test"):
        paths.append(fetch_file("adult/adult.test", data_home=data_home, download=download))
        parts.append(_read_adult(paths[-1], skiprows=1).assign(_subset="test"))
    frame = pd.concat(parts, ignore_index=True)
    origin = frame.pop("_subset").rename("subset")
    target = frame.pop("income")
    return _bunch(
        frame,
        frame[sensitive].rename(sensitive),
        target,
        _ADULT_DESCR.format(licence=_UCI_LICENCE),
        paths,
        subset=origin,
    )


# --------------------------------------------------------------------------
# Default of credit card clients
# --------------------------------------------------------------------------

_CREDIT_COLUMNS = [
    "ID",
    "EDUCATION",
    "SEX",
    "LIMIT_BAL",
    "MARRIAGE",
    "AGE",
    *[f"PAY_{i}" for i in range(1, 7)],
    *[f"BILL_AMT{i}" for i in range(1, 7)],
    *[f"PAY_AMT{i}" for i in range(1, 7)],
    "default payment next month",
]

_CREDIT_DESCR = """Default of credit card clients (Taiwan, 2005), UCI Machine Learning Repository.

30000 card holders, 23 attributes and whether they defaulted the next month
(0: 23364, 1: 6636). File as in Samadi et al.'s data folder: EDUCATION moved to
the first column, UCI's PAY_0 named PAY_1. EDUCATION has the undocumented codes
0, 5, 6 and MARRIAGE the undocumented code 0 (54 rows). Groups: education
low (EDUCATION not in {{1, 2}}) 5385 / high 24615 (Samadi et al. 2018); sex
male 11888 / female 18112; marriage married 13659 / single 15964 / other 323 /
unknown (code 0) 54.

Source: https://archive.ics.uci.edu/dataset/350 (values re-saved as CSV with
the label by the Fair-PCA-via-EigOpt repository; identical cell for cell to
Samadi et al.'s default_degree.csv).
{licence}
Citation: I.-C. Yeh and C.-h. Lien. "The comparisons of data mining techniques
for the predictive accuracy of probability of default of credit card clients."
Expert Systems with Applications 36(2), 2009.
"""


def load_default_credit(
    *,
    sensitive: Literal["education", "sex", "marriage"] = "education",
    data_home: str | os.PathLike[str] | None = None,
    download: bool = False,
) -> Bunch:
    """Load the UCI "default of credit card clients" data (Yeh & Lien 2009).

    The CSV starts with two header rows (UCI's X-codes, then the names); the
    first is skipped. ``ID`` becomes the index.

    Parameters
    ----------
    sensitive : {"education", "sex", "marriage"}, default="education"
        ``"education"``: ``"low"`` if EDUCATION is not 1 (graduate school) or
        2 (university), else ``"high"`` (Samadi et al. 2018). ``"sex"``:
        ``"male"`` (SEX = 1) / ``"female"`` (2). ``"marriage"``: ``"married"``
        (1), ``"single"`` (2), ``"other"`` (3), ``"unknown"`` (the undocumented
        code 0).
    data_home : str or path-like, default=None
        Directory holding ``default_credit/default_degree_with_label.csv``.
    download : bool, default=False
        Fetch the file if it is missing.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (30000, 23) DataFrame, ``target`` ``default payment next
        month`` (0/1), ``sensitive``, ``feature_names``, ``DESCR``, ``filenames``.
    """
    _check_choice(sensitive, "sensitive", {"education", "sex", "marriage"})
    path = fetch_file(
        "default_credit/default_degree_with_label.csv", data_home=data_home, download=download
    )
    frame = _read_csv(path, len(_CREDIT_COLUMNS), skiprows=1)
    if list(frame.columns) != _CREDIT_COLUMNS:
        raise ValueError(
            f"data file {path}: unexpected column names {list(frame.columns)[:6]}...; "
            "the file is not the expected version."
        )
    _check_complete(frame, _CREDIT_COLUMNS, path)
    _check_numeric(frame, _CREDIT_COLUMNS, path)
    frame = frame.set_index("ID")
    target = frame.pop("default payment next month")
    if sensitive == "education":
        s = np.where(frame["EDUCATION"].isin([1, 2]), "high", "low")
    elif sensitive == "sex":
        s = frame["SEX"].map({1: "male", 2: "female"}).to_numpy()
    else:
        s = frame["MARRIAGE"].map({1: "married", 2: "single", 3: "other", 0: "unknown"})
        s = s.to_numpy()
    s = _pandas().Series(s, index=frame.index, name=sensitive)
    if s.isna().any():
        raise ValueError(f"data file {path}: unknown codes in the {sensitive.upper()} column.")
    return _bunch(frame, s, target, _CREDIT_DESCR.format(licence=_UCI_LICENCE), [path])


# --------------------------------------------------------------------------
# LFW as preprocessed by Samadi et al.
# --------------------------------------------------------------------------

#: Image shape of Samadi et al.'s LFW vectors (1764 = 49 x 36, row-major).
LFW_IMAGE_SHAPE = (49, 36)
_LFW_N_IMAGES = 13232

_LFW_DESCR = """Labeled Faces in the Wild, as preprocessed for Samadi et al. (2018).

13232 grey-scale face images of 49 x 36 = 1764 pixels (not 42 x 42), values
0...255 (the mean of the three 8-bit colour channels; stored exactly as integers
times 3). Sex: female 2962 / male 10270. Also binary white / black / asian
flags (which overlap). No prediction target.

Source: Samadi et al.'s data folder (images/img<k>.txt, sex.txt), re-hosted by
github.com/mhli971/Fair-PCA (commit 0e2b4aa8), repacked losslessly into one
npz file. Original images: G. B. Huang, M. Ramesh, T. Berg and E.
Learned-Miller, "Labeled Faces in the Wild", UMass Amherst TR 07-49, 2007.
Licence: none stated (the photographs come from news web sites; the LFW pages
give no licence terms).
Citation: S. Samadi, U. Tantipongpipat, J. Morgenstern, M. Singh and S.
Vempala. "The Price of Fair PCA: One Extra Dimension." NeurIPS 2018.
"""


def load_lfw(
    *,
    sensitive: Literal["sex", "white", "black", "asian"] = "sex",
    data_home: str | os.PathLike[str] | None = None,
    download: bool = False,
) -> Bunch:
    """Load LFW as preprocessed by Samadi et al. (2018): 13232 faces of 49 x 36 pixels.

    Parameters
    ----------
    sensitive : {"sex", "white", "black", "asian"}, default="sex"
        ``"sex"``: ``"female"`` / ``"male"`` (Samadi et al.). The others:
        ``"<name>"`` / ``"not <name>"`` from the data's binary flags.
    data_home : str or path-like, default=None
        Directory holding ``lfw/lfw_samadi_1764px_grey_x3.npz``.
    download : bool, default=False
        Accepted for symmetry; the file has no public URL, so a missing file
        is an error either way.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` (13232, 1764) DataFrame of grey values 0...255 (float64;
        column ``px_<row>_<col>``), ``images`` (13232, 49, 36) view of the same
        values, ``sensitive``, ``target`` ``None``, ``feature_names``,
        ``DESCR``, ``filenames``.
    """
    _check_choice(sensitive, "sensitive", {"sex", "white", "black", "asian"})
    pd = _pandas()
    path = fetch_file("lfw/lfw_samadi_1764px_grey_x3.npz", data_home=data_home, download=download)
    n_pixels = LFW_IMAGE_SHAPE[0] * LFW_IMAGE_SHAPE[1]
    try:
        with np.load(path, allow_pickle=False) as archive:
            grey_x3 = archive["grey_x3"]
            flag = archive[sensitive]
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"could not read data file {path}: {exc}") from exc
    if grey_x3.shape != (_LFW_N_IMAGES, n_pixels) or flag.shape != (_LFW_N_IMAGES,):
        raise ValueError(
            f"data file {path}: arrays of shape {grey_x3.shape} and {flag.shape}, "
            f"expected ({_LFW_N_IMAGES}, {n_pixels}) and ({_LFW_N_IMAGES},)."
        )
    if grey_x3.max() > 765 or not set(np.unique(flag)) <= {0, 1}:
        raise ValueError(f"data file {path}: values out of range; the file is corrupted.")
    grey = grey_x3.astype(np.float64) / 3.0
    columns = [f"px_{r}_{c}" for r in range(LFW_IMAGE_SHAPE[0]) for c in range(LFW_IMAGE_SHAPE[1])]
    data = pd.DataFrame(grey, columns=columns, copy=False)
    if sensitive == "sex":
        labels = np.where(flag == 1, "male", "female")
    else:
        labels = np.where(flag == 1, sensitive, f"not {sensitive}")
    return _bunch(
        data,
        pd.Series(labels, name=sensitive),
        None,
        _LFW_DESCR,
        [path],
        images=grey.reshape(-1, *LFW_IMAGE_SHAPE),
    )


# --------------------------------------------------------------------------
# The FairML CSVs of Olfat & Aswani (used by Vu et al.)
# --------------------------------------------------------------------------

#: name -> (file key in FILES, rows, columns, UCI source name).
FAIRML_DATASETS = {
    "biodeg": ("biodeg/Biodeg_Data.csv", 1055, 42, "QSAR biodegradation"),
    "ecoli": ("ecoli/Ecoli_Data.csv", 333, 9, "Ecoli"),
    "energy": ("energy/Energy_Data.csv", 768, 10, "Energy efficiency"),
    "image_segmentation": (
        "image_segmentation/Image_Seg_Data.csv",
        660,
        21,
        "Image segmentation (path and grass rows)",
    ),
    "letter": ("letter/Letter_Rec_Data.csv", 20000, 18, "Letter recognition"),
    "magic": ("magic_gamma/Magic_Data.csv", 19020, 12, "MAGIC gamma telescope"),
    "parkinsons": (
        "parkinsons_telemonitoring/Parkinsons_Data.csv",
        5875,
        22,
        "Parkinsons telemonitoring",
    ),
    "skillcraft": ("skillcraft/SkillCraft_Data.csv", 3338, 20, "SkillCraft1 master table"),
    "statlog": (
        "statlog_landsat/Statlog_Data.csv",
        3071,
        38,
        "Statlog (Landsat satellite), classes 1, 3 and 7 of sat.trn",
    ),
    "steel": ("steel_plates/Steel_Data.csv", 1941, 28, "Steel plates faults"),
    "wine_quality": ("wine_quality/Wine_Quality_Data.csv", 6497, 13, "Wine quality (red+white)"),
    "german_credit": ("german_credit/German_Credit_Data.csv", 1000, 51, "Statlog German credit"),
    "taiwan_credit": (
        "default_credit/Taiwanese_Credit_Data.csv",
        29623,
        24,
        "Default of credit card clients (MARRIAGE in {1, 2})",
    ),
    "compas": ("compas/Recidivism_Data.csv", 5278, 8, "ProPublica COMPAS (filtered)"),
    "adult": ("adult/Adult_Income_Data.csv", 32561, 60, "Adult (training file)"),
    "pima_diabetes": ("pima_diabetes/Pima_Diabetes_Data.csv", 768, 9, "Pima Indians diabetes"),
}

_FAIRML_DESCR = """{name}: {source}, as prepared by Olfat & Aswani (FairML repository).

{rows} rows. FairML convention: the last column ({sensitive!r}) is the sensitive
attribute, the second-to-last ({label!r}) the label{dummy}; all others are
features ({n_features}). Header names are cleaned (quotes and stray spaces
removed).

Source: https://github.com/molfat66/FairML (commit 4198ab8a), data from the UCI
Machine Learning Repository.
Licence: FairML has no licence file; the UCI data are CC BY 4.0 (UCI donation
policy){pima}.
Citation: M. Olfat and A. Aswani. "Convex Formulations for Fair Principal
Component Analysis." AAAI 2019; used by H. Vu, T. Tran, M.-C. Yue and V. A.
Nguyen, "Distributionally Robust Fair Principal Components via Geodesic
Descents", ICLR 2022.
"""


def _clean_header(name):
    # Wine quality wraps names in literal triple quotes; Adult writes "V2_ Private".
    return str(name).strip().strip('"').strip().replace("_ ", "_")


def read_fairml_frame(path, n_columns, n_rows):
    """A FairML-layout CSV as a checked DataFrame (header cleaned, complete, numeric).

    Parameters
    ----------
    path : path-like
        A verified file (:func:`fetch_file`).
    n_columns, n_rows : int
        The shape the file must have.

    Returns
    -------
    frame : pandas.DataFrame
        Every column; the last is the group, the second-to-last the target.
    """
    frame = _read_csv(path, n_columns)
    frame.columns = [_clean_header(c) for c in frame.columns]
    if len(frame) != n_rows:
        raise ValueError(
            f"data file {path} has {len(frame)} rows, expected {n_rows}; the file is truncated "
            "or not the expected version."
        )
    _check_complete(frame, frame.columns, path)
    _check_numeric(frame, frame.columns, path)
    return frame


def load_fairml(
    name: str, *, data_home: str | os.PathLike[str] | None = None, download: bool = False
) -> Bunch:
    """Load one of Olfat & Aswani's preprocessed CSVs (FairML), as used by Vu et al. (2022).

    Parameters
    ----------
    name : str
        One of ``"biodeg"``, ``"ecoli"``, ``"energy"``, ``"image_segmentation"``,
        ``"letter"``, ``"magic"``, ``"parkinsons"``, ``"skillcraft"``,
        ``"statlog"``, ``"steel"``, ``"wine_quality"``, ``"german_credit"``,
        ``"taiwan_credit"``, and the extras ``"compas"``, ``"adult"``,
        ``"pima_diabetes"``.
    data_home : str or path-like, default=None
        Directory holding ``<folder>/<File>_Data.csv`` (see :data:`FAIRML_DATASETS`).
    download : bool, default=False
        Fetch the file from the FairML repository if it is missing.

    Returns
    -------
    bunch : sklearn.utils.Bunch
        ``data`` DataFrame of the feature columns (all but the last two),
        ``sensitive`` (the last column, int 0/1), ``target`` (the second-to-last
        column; ``None`` where FairML put a random ``DummyMain``), ``label_name``,
        ``feature_names``, ``DESCR``, ``filenames``. Note: Biodeg's "label"
        ``nX`` is really a count feature, not a class.
    """
    _check_choice(name, "name", set(FAIRML_DATASETS))
    key, n_rows, n_columns, source = FAIRML_DATASETS[name]
    path = fetch_file(key, data_home=data_home, download=download)
    frame = read_fairml_frame(path, n_columns, n_rows)
    sensitive_name, label_name = frame.columns[-1], frame.columns[-2]
    sensitive = frame.pop(sensitive_name)
    if not set(sensitive.unique()) <= {0, 1}:
        raise ValueError(f"data file {path}: the sensitive column {sensitive_name!r} is not 0/1.")
    label = frame.pop(label_name)
    dummy = label_name == "DummyMain"
    descr = _FAIRML_DESCR.format(
        name=name,
        source=source,
        rows=n_rows,
        sensitive=sensitive_name,
        label=label_name,
        dummy=" (a random dummy, returned as target=None)" if dummy else "",
        n_features=frame.shape[1],
        pima="; Pima comes from the NIDDK" if name == "pima_diabetes" else "",
    )
    return _bunch(
        frame,
        sensitive.astype("int64"),
        None if dummy else label,
        descr,
        [path],
        label_name=label_name,
    )

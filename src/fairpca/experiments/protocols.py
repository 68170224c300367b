"""The papers' data preparations: from a raw data set to train and test matrices.

Each protocol function returns a :class:`Split` prepared exactly as one paper
prepared its data (encoding, rows kept, subsample, train/test split,
standardisation), with every choice and its source in the function's
docstring. Where the original code had a bug, the protocol does the correct
thing and says so. Splits are seeded by the ``split`` index only, so the same
call returns identical arrays in every run.

References
----------
.. [Samadi2018] S. Samadi, U. Tantipongpipat, J. Morgenstern, M. Singh and
   S. Vempala. "The Price of Fair PCA: One Extra Dimension." NeurIPS 2018.
.. [Lee2022] J. Lee, G. Kim, M. Olfat, M. Hasegawa-Johnson and C. D. Yoo.
   "Fast and Efficient MMD-based Fair PCA via Optimization over Stiefel
   Manifold." AAAI 2022.
.. [Vu2022] H. Vu, T. Tran, M.-C. Yue and V. A. Nguyen. "Distributionally
   Robust Fair Principal Components via Geodesic Descents." ICLR 2022.
.. [Kamani] M. M. Kamani, F. Haddadpour, R. Forsati and M. Mahdavi.
   "Efficient Fair Principal Component Analysis." arXiv:1911.04931.
.. [OlfatAswani2019] M. Olfat and A. Aswani. "Convex Formulations for Fair
   Principal Component Analysis." AAAI 2019.
"""

import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import train_test_split

from fairpca.datasets._real import (
    load_adult,
    load_compas,
    load_default_credit,
    load_fairml,
    load_german_credit,
    load_lfw,
)

__all__ = [
    "KAMANI_DATASETS",
    "LEE2022_DATASETS",
    "N_SPLITS",
    "SAMADI2018_DATASETS",
    "VU2022_DATASETS",
    "Split",
    "kamani",
    "lee2022",
    "samadi2018",
    "vu2022",
]

#: Number of train/test splits Lee et al. and Vu et al. average over: ``split`` in
#: ``range(N_SPLITS)``. Any larger ``split`` draws a further split by the same rules (it is the
#: seed), for measuring how much a mean over N_SPLITS splits itself varies.
N_SPLITS = 10

#: Base seed of the COMPAS and Adult subsamples: split ``s`` draws its own subsample with
#: seed ``(LEE2022_SUBSAMPLE_SEED, s)`` (Lee et al.'s single subsample was unseeded).
LEE2022_SUBSAMPLE_SEED = 2022

LEE2022_DATASETS = ("german_credit", "compas", "adult")
VU2022_DATASETS = (
    "default_credit",
    "biodeg",
    "ecoli",
    "energy",
    "german_credit",
    "image_segmentation",
    "letter",
    "magic",
    "parkinsons",
    "skillcraft",
    "statlog",
    "steel",
    "taiwan_credit",
    "wine_quality",
)
SAMADI2018_DATASETS = ("default_credit", "lfw")
KAMANI_DATASETS = {"adult": ("sex", "race"), "default_credit": ("sex", "marriage")}


@dataclass(frozen=True, eq=False)
class Split:
    """A prepared train/test split.

    Attributes
    ----------
    X_train : ndarray of shape (n_train, n_features), float64
    X_test : ndarray of shape (n_test, n_features), float64
    s_train : ndarray of shape (n_train,)
        Group label of each training row.
    s_test : ndarray of shape (n_test,)
    y_train : ndarray of shape (n_train,) or None
        Binary target (1 = the positive class named in ``description``).
    y_test : ndarray of shape (n_test,) or None
    feature_names : list of str
        Names of the columns of ``X_train`` and ``X_test``.
    n_dropped : int
        Rows of the source data the protocol left out (filters, rows with
        missing values, subsampling); the breakdown is in ``description``.
    description : str
        What was done, in one paragraph.
    """

    X_train: np.ndarray
    X_test: np.ndarray
    s_train: np.ndarray
    s_test: np.ndarray
    y_train: np.ndarray | None
    y_test: np.ndarray | None
    feature_names: list
    n_dropped: int
    description: str

    def __repr__(self):
        labels, counts = np.unique(self.s_train, return_counts=True)
        groups = dict(zip(labels.tolist(), counts.tolist(), strict=True))
        return (
            f"Split(X_train={self.X_train.shape}, X_test={self.X_test.shape}, "
            f"train groups={groups}, target={'yes' if self.y_train is not None else 'no'}, "
            f"n_dropped={self.n_dropped})"
        )


# --------------------------------------------------------------------------
# shared steps
# --------------------------------------------------------------------------


def _check_dataset(dataset, allowed, protocol):
    if not isinstance(dataset, str) or dataset not in allowed:
        raise ValueError(f"{protocol}: dataset must be one of {list(allowed)}, got {dataset!r}.")


def _check_split(split):
    if isinstance(split, bool) or not isinstance(split, numbers.Integral):
        raise TypeError(f"split must be a non-negative int, got {split!r}.")
    if not 0 <= split < 2**32:
        raise ValueError(
            f"split must be a non-negative int below 2**32 (the papers use range({N_SPLITS})), "
            f"got {split}."
        )
    return int(split)


def _is_numeric(column):
    from pandas.api.types import is_numeric_dtype

    return is_numeric_dtype(column.dtype)


def _one_hot(frame, columns):
    """One indicator column ``name=level`` per level present (no level dropped, as AIF360)."""
    import pandas as pd

    return pd.get_dummies(frame, columns=columns, prefix_sep="=", dtype=np.float64)


def _standardise(X_train, X_test, ddof=0):
    """Centre and scale both parts with the training mean and standard deviation.

    A column that is constant on the training rows keeps scale 1 (as Lee et
    al.'s preprocessing scripts do) instead of producing NaN.
    """
    mean = X_train.mean(axis=0)
    scale = X_train.std(axis=0, ddof=ddof)
    scale[scale == 0] = 1.0
    return (X_train - mean) / scale, (X_test - mean) / scale


def _split(X, s, y, *, train_size, stratify, seed):
    """Shuffle-split rows; ``train_size`` is a fraction, the count is its floor."""
    index = np.arange(X.shape[0])
    train, test = train_test_split(
        index, train_size=train_size, stratify=s if stratify else None, random_state=seed
    )
    y_parts = (None, None) if y is None else (y[train], y[test])
    return X[train], X[test], s[train], s[test], *y_parts


def _finish(X, s, y, names, *, train_size, stratify, split, n_dropped, description, ddof=0):
    X = np.ascontiguousarray(X, dtype=np.float64)
    s = np.asarray(s)
    y = None if y is None else np.asarray(y, dtype=np.int64)
    X_tr, X_te, s_tr, s_te, y_tr, y_te = _split(
        X, s, y, train_size=train_size, stratify=stratify, seed=split
    )
    X_tr, X_te = _standardise(X_tr, X_te, ddof=ddof)
    return Split(X_tr, X_te, s_tr, s_te, y_tr, y_te, list(map(str, names)), n_dropped, description)


def _subsample(n_rows, fraction, seed):
    """Sorted indices of ``floor(fraction * n_rows)`` rows drawn without replacement.

    ``seed`` is anything :func:`numpy.random.default_rng` takes (an int or a tuple of ints).
    """
    n_keep = int(fraction * n_rows)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_rows, size=n_keep, replace=False))


# --------------------------------------------------------------------------
# Lee et al. (2022)
# --------------------------------------------------------------------------


def _lee_german(data_home):
    bunch = load_german_credit(sensitive="age", data_home=data_home)
    frame = bunch.data.drop(columns=["personal_status"])
    # AIF360 maps the protected attribute to 1 (privileged: age >= 25) / 0 and keeps it.
    frame["age"] = (bunch.sensitive == "25+").astype(np.float64)
    categorical = [c for c in frame.columns if not _is_numeric(frame[c])]
    frame = _one_hot(frame, categorical)
    y = (bunch.target == "bad").to_numpy()
    return frame, bunch.sensitive.to_numpy(), y, 0, None, "german_credit"


def _lee_compas(data_home):
    bunch = load_compas(sensitive="race", propublica_filter=True, data_home=data_home)
    keep = [
        "age",
        "age_cat",
        "race",
        "juv_fel_count",
        "juv_misd_count",
        "juv_other_count",
        "priors_count",
        "c_charge_degree",
    ]
    frame = bunch.data[keep].copy()
    caucasian = frame["race"] == "Caucasian"
    frame["race"] = caucasian.astype(np.float64)
    frame = _one_hot(frame, ["age_cat", "c_charge_degree"])
    s = np.where(caucasian, "Caucasian", "not Caucasian")
    return frame, s, bunch.target.to_numpy(), bunch.n_dropped, 0.4, "compas"


def _lee_adult(data_home):
    bunch = load_adult(subset="all", sensitive="sex", data_home=data_home)
    frame = bunch.data.drop(columns=["fnlwgt", "race"])
    complete = bunch.data.notna().all(axis=1).to_numpy()
    frame = frame[complete]
    s = bunch.sensitive.to_numpy()[complete]
    y = (bunch.target == ">50K").to_numpy()[complete]
    frame["sex"] = (s == "Male").astype(np.float64)
    categorical = [
        "workclass",
        "education",
        "marital-status",
        "occupation",
        "relationship",
        "native-country",
    ]
    frame = _one_hot(frame, categorical)
    return frame, s, y, int((~complete).sum()), 0.05, "adult"


def lee2022(dataset, *, split=0, data_home=None):
    """Prepare German credit, COMPAS or Adult as Lee et al. (2022) did.

    Lee et al. (section 8.2 and appendix I) prepared the three UCI sets with
    AI Fairness 360 (their scripts ``datasets/*/…-preprocess.py`` in
    ``nick-jhlee/fair-manifold-pca``). Reproduced here without AIF360:

    - **German credit** (1000 rows): AIF360 ``GermanDataset`` with protected
      attribute age, privileged ``age >= 25`` (Lee's threshold; AIF360's default
      is ``> 25``): groups ``"25+"`` 851 / ``"<25"`` 149. ``personal_status``
      (and the ``sex`` derived from it) dropped. The 12 other categorical
      attributes one-hot encoded with every level present (50 columns), the 6
      numeric ones kept, and age replaced by its 0/1 group: **57 features**
      (as in the paper). Target: 1 = bad credit (Lee's scripts save AIF360's
      1/2 class minus one).
    - **COMPAS** (ProPublica's two-year file): ProPublica's standard filter
      (6172 rows), then AIF360 ``CompasDataset`` columns: age, age_cat (3
      indicators), race as 1 = Caucasian / 0 = other, juv_fel_count,
      juv_misd_count, juv_other_count, priors_count, c_charge_degree (2
      indicators); ``sex`` and ``c_charge_desc`` dropped: **11 features**.
      Groups ``"Caucasian"`` / ``"not Caucasian"``. Then a random **40 %
      subsample** (``int(0.4 * 6172) = 2468`` rows, as in the paper). Target:
      ``two_year_recid``.
    - **Adult** (``adult.data`` and ``adult.test`` together, 48842 rows): rows
      with a missing value dropped (3620; 45222 left), ``fnlwgt`` and ``race``
      dropped, sex as 1 = Male / 0 = Female, workclass, education,
      marital-status, occupation, relationship and native-country one-hot
      encoded over the 45222 rows: **97 features** (the paper's table says 97,
      its appendix 99). Then a random **5 % subsample** (2261 rows, as in the
      paper). Groups ``"Male"`` / ``"Female"``. Target: 1 = income > 50K.

    In every case the protected attribute stays among the features (AIF360
    keeps it). Lee et al. drew one unseeded subsample and split it ten times;
    here **each split draws its own subsample** (seed
    ``(LEE2022_SUBSAMPLE_SEED, split)``) before splitting it. Their draw cannot
    be reproduced, and their table is one draw from the distribution over
    subsamples: a mean over splits that share one fixed subsample estimates
    that draw's value, not the expected one, and on COMPAS it depends on the
    draw. MbF-PCA's (tau = 1e-3, d = 2) test MMD² averaged over ten splits was
    0.0085 with one fixed subsample and 0.0036-0.0048 with four others (paper:
    0.005 ± 0.002); fresh subsamples per split average that variation out.
    Each split is a random,
    unstratified 70/30 split (AIF360 ``split([0.7], shuffle=True)``: the first
    ``floor(0.7 n)`` shuffled rows train) seeded by ``split``. Features are
    standardised with the training mean and population standard deviation; a
    column constant on the training rows keeps scale 1 (as Lee's scripts).

    Corrections of the original code: evaluate downstream classifiers on
    ``X_test`` (Lee's evaluation scored the SVM on its own training data), and
    every row of the training file is used (the FPCA baseline's loader,
    ``problem.py`` from FairML, took the first row of these header-less files
    for a header and dropped it).

    Parameters
    ----------
    dataset : {"german_credit", "compas", "adult"}
    split : int, default=0
        Which train/test split, and its seed: the paper averages over
        ``range(10)``; larger values draw further splits by the same rules.
    data_home : str or path-like, default=None
        Where the raw files are (see :func:`fairpca.datasets.get_data_home`).

    Returns
    -------
    split : Split
    """
    _check_dataset(dataset, LEE2022_DATASETS, "lee2022")
    split = _check_split(split)
    prepare = {"german_credit": _lee_german, "compas": _lee_compas, "adult": _lee_adult}
    frame, s, y, n_dropped, fraction, name = prepare[dataset](data_home)
    X = frame.to_numpy(dtype=np.float64)
    note = ""
    if fraction is not None:
        rows = _subsample(X.shape[0], fraction, (LEE2022_SUBSAMPLE_SEED, split))
        note = (
            f" {X.shape[0]} rows after the filter, of which a {fraction:.0%} subsample of "
            f"{rows.size} (seed ({LEE2022_SUBSAMPLE_SEED}, {split})) is used."
        )
        n_dropped += X.shape[0] - rows.size
        X, s, y = X[rows], s[rows], y[rows]
    description = (
        f"Lee et al. (2022) preparation of {name}: {X.shape[1]} features (protected "
        f"attribute included), {n_dropped} source rows left out.{note} Unstratified 70/30 "
        f"split {split}; standardised with training mean and population SD."
    )
    return _finish(
        X,
        s,
        y,
        frame.columns,
        train_size=0.7,
        stratify=False,
        split=split,
        n_dropped=n_dropped,
        description=description,
    )


# --------------------------------------------------------------------------
# Vu et al. (2022)
# --------------------------------------------------------------------------

#: Columns whose standard deviation (over all rows) is at most this are dropped (Vu et al.).
VU2022_MIN_SD = 1e-5


def vu2022(dataset, *, split=0, data_home=None):
    """Prepare a data set of Vu et al. (2022), table 1 and appendix C.

    - **Data**: Default credit as Samadi et al. prepared it (all 22 attributes
      but EDUCATION; groups ``"low"`` = EDUCATION not in {1, 2} / ``"high"``;
      target: default next month), and the other 13 sets from Olfat & Aswani's
      FairML CSVs (Vu et al. point to that repository for "preprocessed data"):
      features are all columns but the last two, the group is the last column
      (0/1 as in the file) and the target the second-to-last (``None`` where
      FairML put a random ``DummyMain``; Biodeg's ``nX`` is a count, not a
      class). ``"german_credit"`` and ``"taiwan_credit"`` are the FairML
      versions. Vu et al.'s LFW (4000 x 576) is not this library's LFW and is
      not offered.
    - **Columns**: those with standard deviation at most :data:`VU2022_MIN_SD`
      over all rows are dropped (appendix C): German's ``A4_7`` and Image
      segmentation's ``regionpixcount``, which gives the dimensions of their
      table 2 for 12 of the 14 sets. Appendix C also removes columns with
      SD >= 1000; that rule is *not* applied, because it contradicts their
      table 2 (it would leave 9 of Taiwan credit's 22 features and 47 of
      German's 49, where the table lists 22 and 48). SkillCraft keeps 18
      features and Steel 26 (table 2: 17 and 24).
    - **Rows**: all of them (FairML's own loader reads the header correctly on
      these files; SkillCraft's 3337 rows in table 2 look like one row lost).
    - **Split**: stratified by group, 30 % train / 70 % test (section 5),
      seeded by ``split``; 10 splits.
    - **Scaling**: training mean and population standard deviation (section 5
      "train-statistics standardisation"; the SD convention is not stated).
      The per-group centring of ABDiff is an evaluation step, not done here.

    Parameters
    ----------
    dataset : str
        One of :data:`VU2022_DATASETS`.
    split : int, default=0
        Split and its seed; the paper averages over ``range(10)``.
    data_home : str or path-like, default=None

    Returns
    -------
    split : Split
    """
    _check_dataset(dataset, VU2022_DATASETS, "vu2022")
    split = _check_split(split)
    if dataset == "default_credit":
        bunch = load_default_credit(sensitive="education", data_home=data_home)
        frame = bunch.data.drop(columns=["EDUCATION"])
        source = "Default credit (Samadi et al.'s file), groups education low/high"
    else:
        bunch = load_fairml(dataset, data_home=data_home)
        frame = bunch.data
        source = f"FairML {dataset}, groups = column {bunch.sensitive.name!r} (0/1)"
    sd = frame.std(axis=0, ddof=0)
    constant = [str(c) for c in frame.columns[(sd <= VU2022_MIN_SD).to_numpy()]]
    frame = frame.drop(columns=constant)
    y = None if bunch.target is None else bunch.target.to_numpy()
    dropped = f"; dropped near-constant column(s) {constant}" if constant else ""
    description = (
        f"Vu et al. (2022) preparation of {source}: {frame.shape[1]} features{dropped}. "
        f"Stratified 30/70 train/test split {split}; standardised with training mean and "
        "population SD."
    )
    return _finish(
        frame.to_numpy(dtype=np.float64),
        bunch.sensitive.to_numpy(),
        y,
        frame.columns,
        train_size=0.3,
        stratify=True,
        split=split,
        n_dropped=0,
        description=description,
    )


# --------------------------------------------------------------------------
# Samadi et al. (2018)
# --------------------------------------------------------------------------


def samadi2018(dataset, *, data_home=None):
    """Prepare Default credit or LFW as Samadi et al. (2018) did.

    From their ``creditProcess.m`` and ``LFWProcess.m`` (``samirasamadi/Fair-PCA``).
    The methods are fitted and evaluated on all rows, so ``X_test`` is
    ``X_train`` (the same array) and there is no target.

    - **Default credit** (30000 rows): groups by education, ``"low"`` if
      EDUCATION is not 1 (graduate school) or 2 (university), else ``"high"``
      (5385 / 24615). Features: the 21 columns SEX ... PAY_AMT5 (their
      ``data(:, 2:22)``: EDUCATION and PAY_AMT6 are not used). Each column is
      z-scored over all rows with MATLAB's ``std``, i.e. the sample SD
      (``ddof=1``).
    - **LFW** (13232 images of 49 x 36 pixels): grey values divided by 255;
      groups ``"female"`` 2962 / ``"male"`` 10270. Not centred here: fair-PCA
      estimators (and scikit-learn's PCA) centre on the pooled mean, which is
      Samadi's ``M``.

    Correction of the original code: ``creditProcess.m`` means to centre each
    group's rows on the group's own mean, but its loop runs over the 21
    columns instead of the rows, so only the first 21 rows of each group are
    centred. Nothing of that is reproduced: the data are centred on the pooled
    mean only (DESIGN §4: group means are part of what fairness is about), and
    a method wanting group-centred matrices computes them itself.

    Parameters
    ----------
    dataset : {"default_credit", "lfw"}
    data_home : str or path-like, default=None

    Returns
    -------
    split : Split
        ``X_test is X_train``, ``y_train`` and ``y_test`` are ``None``.
    """
    _check_dataset(dataset, SAMADI2018_DATASETS, "samadi2018")
    if dataset == "default_credit":
        bunch = load_default_credit(sensitive="education", data_home=data_home)
        frame = bunch.data.drop(columns=["EDUCATION", "PAY_AMT6"])
        X = frame.to_numpy(dtype=np.float64)
        X = (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
        names = list(frame.columns)
        what = "Default credit, 21 features (SEX..PAY_AMT5) z-scored with sample SD"
    else:
        bunch = load_lfw(sensitive="sex", data_home=data_home)
        X = bunch.data.to_numpy(dtype=np.float64) / 255.0
        names = bunch.feature_names
        what = "LFW, 1764 pixels (49 x 36) / 255"
    s = bunch.sensitive.to_numpy()
    description = (
        f"Samadi et al. (2018) preparation of {what}; all {X.shape[0]} rows, fitted and "
        "evaluated on the same data."
    )
    return Split(X, X, s, s, None, None, [str(n) for n in names], 0, description)


# --------------------------------------------------------------------------
# Kamani et al.
# --------------------------------------------------------------------------


def kamani(dataset, attribute, *, split=0, data_home=None):
    """Prepare Adult or Default credit as Kamani et al. describe (section 5).

    Kamani et al. published no code; what the paper states is followed and
    the rest is chosen here (marked *our choice*).

    - **Adult**: the training file only (32561 rows); "we omit the label and
      work with the rest, which contains 14 features, including gender and
      race": the 14 attributes, with each categorical one coded as integers
      (levels in sorted order; a missing ``?`` is a level of its own; *our
      choice*, the only reading that gives 14 features). Groups: ``"sex"``
      (Male / Female) or ``"race"`` (5 groups: White, Black,
      Asian-Pac-Islander, Amer-Indian-Eskimo, Other). The group counts the
      paper prints (e.g. Female 10548) do not match the file (Female 10771);
      the file's are used. Target: 1 = income > 50K.
    - **Default credit**: all 23 attributes, sensitive ones included ("23
      features"). Groups: ``"sex"`` (male / female, 30000 rows) or
      ``"marriage"`` (married / single / other). For marriage the 54 rows with
      the undocumented code 0 are dropped (``n_dropped``): the paper's counts
      13659 + 15964 + 323 leave them out. Target: 1 = default next month.
    - **Split** (*our choice*; the paper reports the downstream SVM "on the
      test dataset" without saying how it was split): stratified by group,
      70 % train / 30 % test, seeded by ``split``. **Scaling** (*our choice*;
      needed because the raw scales differ by orders of magnitude):
      training mean and population SD.

    Parameters
    ----------
    dataset : {"adult", "default_credit"}
    attribute : str
        ``"sex"`` or ``"race"`` for Adult, ``"sex"`` or ``"marriage"`` for
        Default credit.
    split : int, default=0
        Split and its seed; the paper averages over ``range(10)``.
    data_home : str or path-like, default=None

    Returns
    -------
    split : Split
    """
    _check_dataset(dataset, tuple(KAMANI_DATASETS), "kamani")
    if attribute not in KAMANI_DATASETS[dataset]:
        raise ValueError(
            f"kamani: attribute for {dataset} must be one of {list(KAMANI_DATASETS[dataset])}, "
            f"got {attribute!r}."
        )
    split = _check_split(split)
    n_dropped = 0
    if dataset == "adult":
        bunch = load_adult(subset="train", sensitive=attribute, data_home=data_home)
        frame = bunch.data.copy()
        for column in frame.columns:
            if not _is_numeric(frame[column]):
                levels = frame[column].fillna("?").astype(str)
                frame[column] = np.unique(levels, return_inverse=True)[1].astype(np.float64)
        s = bunch.sensitive.to_numpy()
        y = (bunch.target == ">50K").to_numpy()
        what = "Adult training file, 14 attributes (categorical ones integer-coded)"
    else:
        bunch = load_default_credit(sensitive=attribute, data_home=data_home)
        keep = (bunch.sensitive != "unknown").to_numpy()
        n_dropped = int((~keep).sum())
        frame = bunch.data[keep]
        s = bunch.sensitive.to_numpy()[keep]
        y = bunch.target.to_numpy()[keep]
        what = "Default credit, 23 attributes"
    dropped = f"; {n_dropped} rows with MARRIAGE = 0 dropped" if n_dropped else ""
    description = (
        f"Kamani et al. preparation of {what}, groups by {attribute}{dropped}. Stratified "
        f"70/30 split {split}; standardised with training mean and population SD."
    )
    return _finish(
        frame.to_numpy(dtype=np.float64),
        s,
        y,
        frame.columns,
        train_size=0.7,
        stratify=True,
        split=split,
        n_dropped=n_dropped,
        description=description,
    )

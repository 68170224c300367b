"""The data a command reads: a paper's real data set, a user's CSV, or the synthetic set.

:func:`load_split` turns the data options of ``fairpca compare`` and ``fairpca
tradeoff`` into a train/test :class:`~fairpca.datasets.Split` and the words that
describe it; the command line checks the options' combinations and calls it.
:data:`DATASETS` names the real data sets (``--dataset``) and
:func:`dataset_help` describes them. A data set that cannot be loaded (a missing
or corrupt file, a missing extra) is a :class:`SourceError`; options that do not
fit the data (a column that is not there, a group too small) a ``ValueError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import fairpca.experiments as experiments
from fairpca.datasets import make_gaussian_groups, make_split, read_table
from fairpca.datasets._table import MAX_ENCODED_FEATURES
from fairpca.experiments import LEE2022_DATASETS, VU2022_DATASETS

if TYPE_CHECKING:
    from fairpca.datasets import Split

__all__ = ["DATASETS", "Loaded", "SourceError", "dataset_help", "load_dataset", "load_split"]

#: ``--dataset`` name -> (protocol, its dataset argument): a paper that used the set.
#: Lee et al.'s preparation wins for the sets both papers used (German credit).
DATASETS = {
    **{name: ("vu2022", name) for name in VU2022_DATASETS},
    **{name: ("lee2022", name) for name in LEE2022_DATASETS},
    "german": ("lee2022", "german_credit"),
}


def dataset_help():
    """The help text of ``--dataset``: what each protocol prepares, and where files are read."""
    fairml = ", ".join(
        name
        for name, (protocol, _) in DATASETS.items()
        if protocol == "vu2022" and name != "default_credit"
    )
    return (
        "A real data set, prepared by a paper's protocol (fairpca.experiments): "
        "german or german_credit (groups: age >= 25), compas (Caucasian or not) and adult "
        "(sex) as Lee et al. 2022 (70/30 split, 57 / 11 / 97 features); default_credit "
        f"(education low/high, 9000 training rows) and the FairML sets {fairml}"
        " (groups: the file's last column) as Vu et al. 2022 (stratified 30/70 "
        "split). Files are read from $FAIRPCA_DATA (else ~/scikit_learn_data/fairpca). "
        "Not with --data."
    )


class SourceError(Exception):
    """A data set could not be loaded: a missing or corrupt file, a missing extra."""


@dataclass
class Loaded:
    """A split with the words that describe it.

    Attributes
    ----------
    split : fairpca.datasets.Split
    label : str
        What the data are, for the terminal's ``data:`` line.
    source : str
        What the data are, for the reports (with the split's description).
    """

    split: Split
    label: str
    source: str

    def data_line(self, n_components):
        """``data: <label>; <rows> rows, <features> features; d = <d>``."""
        split = self.split
        n_rows, n_features = split.X_train.shape[0] + split.X_test.shape[0], split.X_train.shape[1]
        return f"data: {self.label}; {n_rows} rows, {n_features} features; d = {n_components}"


def load_dataset(name, split_index=0, data_home=None, download=False):
    """The protocol's split of the real data set ``name`` (a key of :data:`DATASETS`).

    Raises
    ------
    SourceError
        A missing extra (the message is the ``ImportError``'s), or a file that
        is missing or corrupt (``cannot load data set '<name>': ...``).
    """
    protocol, dataset = DATASETS[name]
    try:
        return getattr(experiments, protocol)(
            dataset, split=split_index, data_home=data_home, download=download
        )
    except ImportError as exc:
        raise SourceError(str(exc)) from exc
    except (OSError, ValueError) as exc:
        raise SourceError(f"cannot load data set {name!r}: {exc}") from exc


def load_split(
    *,
    data=None,
    dataset=None,
    split_index=None,
    sensitive=None,
    target=None,
    test_size=None,
    random_state=0,
    features=None,
    drop=None,
    impute=None,
    bins=None,
    column_names=None,
    max_encoded_features=None,
    data_home=None,
    download=False,
    notify=None,
):
    """The train/test split the data options name.

    ``dataset``: the paper protocol's split number ``split_index`` (default 0);
    ``data``: the CSV read by :func:`fairpca.datasets.read_table` (its notes go
    to ``notify``), split by :func:`fairpca.datasets.make_split` (``test_size``,
    default 0.3; ``impute``, default ``"none"``); neither: the built-in
    synthetic set, split likewise. The combinations of options are the
    caller's to check.

    Returns
    -------
    Loaded

    Raises
    ------
    SourceError
        The data set could not be loaded.
    ValueError, TypeError
        The options do not fit the data.
    """
    if dataset is not None:
        split = load_dataset(dataset, split_index or 0, data_home, download)
        label = f"{dataset} ({split.description})"
        return Loaded(split, label, label)
    if data is None:
        X, s, y = make_gaussian_groups(random_state=random_state, return_target=True)
        label = "built-in synthetic data (make_gaussian_groups)"
    else:
        table = read_table(
            data,
            sensitive,
            target,
            features=features,
            drop=drop,
            bins=bins,
            column_names=column_names,
            max_encoded_features=max_encoded_features or MAX_ENCODED_FEATURES,
        )
        for note in table.notes:
            if notify is not None:
                notify(note)
        X, s, y = table.features, table.groups, table.target
        label = str(data)
    split = make_split(
        X,
        s,
        y,
        test_size=0.3 if test_size is None else test_size,
        random_state=random_state,
        impute=impute or "none",
    )
    return Loaded(split, label, f"{label}; {split.description}")

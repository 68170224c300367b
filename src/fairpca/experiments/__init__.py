"""The papers' experimental protocols and the reproductions of their experiments.

``lee2022``, ``vu2022``, ``samadi2018`` and ``kamani`` turn a raw data set
(see :mod:`fairpca.datasets`) into a :class:`Split` prepared as the paper did
(encoding, rows kept, subsample, train/test split, standardisation); each
paper's module in :mod:`fairpca.experiments.papers` lists every choice and
where it came from. Where the original code had a bug, the protocol does the
correct thing and says so. Splits are seeded by the ``split`` index only, so
the same call returns identical arrays in every run. Requires pandas
(``pip install 'fairpca[datasets]'``).

:data:`TARGETS` is the registry of the experiments ``fairpca reproduce`` re-runs,
assembled from the paper modules (``fairpca reproduce --list``):

- ``lee2022-table1``, ``lee2022-synthetic1``, ``lee2022-synthetic2``: Lee et al.
  (AAAI 2022), Table 1 and Figures 1-3
  (:mod:`~fairpca.experiments.papers.lee2022`).
- ``vu2022-table1``, ``vu2022-radius``: Vu et al. (ICLR 2022), Tables 1 and 3 and
  Figure 4 (:mod:`~fairpca.experiments.papers.vu2022`).
- ``samadi2018-figures``: Samadi et al. (NeurIPS 2018), Figures 3 and 4
  (:mod:`~fairpca.experiments.papers.samadi2018`).
- ``kamani-figures``: Kamani et al. (arXiv 1911.04931), Figures 2, 3, 6, 8 and 9
  (:mod:`~fairpca.experiments.papers.kamani`).
- ``matakos2025-nested``: Matakos et al. (arXiv 2503.21563), nested min-max
  components against the joint min-max subspace
  (:mod:`~fairpca.experiments.papers.matakos2025`).
- ``dediego2025-pls``: De-Diego et al. (arXiv 2502.16263), a classifier on fair PLS
  components against fair PCA's (:mod:`~fairpca.experiments.papers.dediego2025`).
- ``babu2025-sparse``: Babu & Stoica (TMLR 2025), fair sparse PCA's worst-group
  variance against sparsity (:mod:`~fairpca.experiments.papers.babu2025`).

:mod:`fairpca.experiments.held_out` checks the linear guarantee of the
mean-matching methods on held-out Adult rows (sex x race groups).

:func:`plan`, :func:`execute`, :func:`run`, :func:`summarise`,
:func:`to_markdown`, :func:`write_report` and :func:`reference` run them and
compare with the papers' numbers (the engine, ``fairpca.experiments._engine``).
"""

from fairpca.experiments._engine import (
    Reproduction,
    Reproductions,
    Target,
    execute,
    printed_half_unit,
)
from fairpca.experiments._split import N_SPLITS, Split, make_split  # noqa: F401 (old path)
from fairpca.experiments.papers import babu2025 as _babu2025
from fairpca.experiments.papers import dediego2025 as _dediego2025
from fairpca.experiments.papers import kamani as _kamani
from fairpca.experiments.papers import lee2022 as _lee2022
from fairpca.experiments.papers import matakos2025 as _matakos2025
from fairpca.experiments.papers import samadi2018 as _samadi2018
from fairpca.experiments.papers import vu2022 as _vu2022
from fairpca.experiments.papers.kamani import KAMANI_DATASETS, kamani
from fairpca.experiments.papers.lee2022 import LEE2022_DATASETS, lee2022, lee2022_downstream
from fairpca.experiments.papers.samadi2018 import SAMADI2018_DATASETS, samadi2018
from fairpca.experiments.papers.vu2022 import (
    VU2022_ALPHAS,
    VU2022_DATASETS,
    VU2022_LAMS,
    robust_fair_pca_cv,
    vu2022,
    vu2022_errors,
    vu2022_selection,
)

__all__ = [
    "KAMANI_DATASETS",
    "LEE2022_DATASETS",
    "N_SPLITS",
    "SAMADI2018_DATASETS",
    "TARGETS",
    "VU2022_ALPHAS",
    "VU2022_DATASETS",
    "VU2022_LAMS",
    "Reproduction",
    "Reproductions",
    "Split",
    "Target",
    "execute",
    "kamani",
    "lee2022",
    "lee2022_downstream",
    "plan",
    "printed_half_unit",
    "reference",
    "robust_fair_pca_cv",
    "run",
    "samadi2018",
    "summarise",
    "to_markdown",
    "vu2022",
    "vu2022_errors",
    "vu2022_selection",
    "write_report",
]

#: Target name → :class:`Target`, in the order ``fairpca reproduce --list`` shows them.
TARGETS = {
    "lee2022-table1": _lee2022.TABLE1,
    "vu2022-table1": _vu2022.TABLE1,
    "samadi2018-figures": _samadi2018.FIGURES,
    "kamani-figures": _kamani.FIGURES,
    "lee2022-synthetic1": _lee2022.SYNTHETIC1,
    "lee2022-synthetic2": _lee2022.SYNTHETIC2,
    "vu2022-radius": _vu2022.RADIUS,
    "matakos2025-nested": _matakos2025.NESTED,
    "dediego2025-pls": _dediego2025.PLS,
    "babu2025-sparse": _babu2025.SPARSE,
}

_REPRODUCTIONS = Reproductions(TARGETS)
reference = _REPRODUCTIONS.reference
plan = _REPRODUCTIONS.plan
run = _REPRODUCTIONS.run
summarise = _REPRODUCTIONS.summarise
to_markdown = _REPRODUCTIONS.to_markdown
write_report = _REPRODUCTIONS.write_report

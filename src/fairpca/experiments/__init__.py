"""The papers' experimental protocols: data preparation and train/test splits.

``lee2022``, ``vu2022``, ``samadi2018`` and ``kamani`` turn a raw data set
(see :mod:`fairpca.datasets`) into a :class:`Split` prepared as the paper did;
each function's docstring lists every choice and where it came from. Requires
pandas (``pip install 'fairpca[datasets]'``).
"""

from fairpca.experiments.protocols import Split, kamani, lee2022, samadi2018, vu2022

__all__ = ["Split", "kamani", "lee2022", "samadi2018", "vu2022"]

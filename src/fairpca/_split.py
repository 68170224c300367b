"""Former home of :class:`Split`, kept as an alias: it is :class:`fairpca.datasets.Split`."""

from fairpca.datasets._split import Split

__all__ = ["Split"]

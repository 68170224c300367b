"""One module per paper: its data protocol, its reproduction targets, their checks and figures.

:mod:`~fairpca.experiments.papers.lee2022`, :mod:`~fairpca.experiments.papers.vu2022`,
:mod:`~fairpca.experiments.papers.samadi2018` and :mod:`~fairpca.experiments.papers.kamani`;
each begins with the paper's citation and the protocol's choices with their sources. The
protocol functions are re-exported by :mod:`fairpca.experiments`.
"""

"""Helpers of the documentation build, named by string in ``docs/conf.py``.

sphinx-gallery imports them by their qualified names, so that the configuration
stays picklable (Sphinx caches it between builds).
"""

from __future__ import annotations

import weakref

#: Gallery examples that read a real data set: file name -> the data-home folders they
#: need. ``docs/conf.py`` shows them without running them when a folder's files are
#: absent; ``tests/test_docs.py`` then does not look for their figures.
DATA_EXAMPLES = {"plot_01_pca_unfairness_default_credit.py": ("default_credit",)}

#: Figures already shown in the gallery (a figure kept in a variable is shown once).
_SHOWN: weakref.WeakSet = weakref.WeakSet()


def figure_scraper(block, block_vars, gallery_conf):
    """Show the figures of :mod:`fairpca.plotting` that an example holds in a variable.

    ``fairpca.plotting`` builds its figures without pyplot, so sphinx-gallery's
    matplotlib scraper, which asks pyplot for the open figures, does not see them.
    This scraper saves every :class:`matplotlib.figure.Figure` that is a global
    variable of the example, is not managed by pyplot and was not shown before. It
    runs before the matplotlib scraper (``docs/conf.py``), so that a pyplot figure
    still has its manager here: it is then only marked as shown (the matplotlib
    scraper shows it and closes it), and not taken for one of ours in a later block.
    """
    from matplotlib.figure import Figure
    from sphinx_gallery.scrapers import figure_rst

    figures = []
    for value in list(block_vars["example_globals"].values()):
        if not isinstance(value, Figure) or value in _SHOWN:
            continue
        if value.canvas.manager is None:
            figures.append(value)
        else:
            _SHOWN.add(value)
    paths = []
    for figure, path in zip(figures, block_vars["image_path_iterator"], strict=False):
        figure.savefig(path)
        _SHOWN.add(figure)
        paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"])


def reset_sklearn(gallery_conf, fname, when=None):
    """Restore scikit-learn's default configuration around each example.

    An example that enables metadata routing with ``sklearn.set_config`` would
    otherwise leave it enabled for the examples run after it.
    """
    import sklearn

    sklearn.set_config(enable_metadata_routing=False, transform_output="default")

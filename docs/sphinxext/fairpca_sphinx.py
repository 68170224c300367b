"""Helpers of the documentation build, named by string in ``docs/conf.py``.

sphinx-gallery imports them by their qualified names, so that the configuration
stays picklable (Sphinx caches it between builds).
"""

from __future__ import annotations

import re
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


def viewcode_backlinks(app, *args):
    """Point the "[docs]" links of the source pages at pages that have their anchor.

    ``sphinx.ext.viewcode`` keeps, for each source module, one module name (the first
    under which one of its objects was documented) and, for each object, the last page
    that documented it; the link is that page plus ``#<module name>.<object>``. An
    object of ``fairpca.tradeoff`` documented under ``fairpca`` on one page and under
    ``fairpca.tradeoff`` on another then links to a page without the anchor. Runs
    before viewcode writes the pages (``html-collect-pages``): each link goes to the
    page that documents ``<module name>.<object>``, or to the object's own page under
    another name (the anchor viewcode writes is then replaced in ``html-page-context``).
    """
    objects = app.env.get_domain("py").objects
    fixes = {}
    for modname, entry in getattr(app.env, "_viewcode_modules", {}).items():
        if not entry:
            continue
        _code, _tags, used, refname = entry
        for name, docname in list(used.items()):
            documented = objects.get(f"{refname}.{name}")
            if documented is not None:
                used[name] = documented.docname
                continue
            # Documented under another module name: that page and its anchor.
            for object_id, other in objects.items():
                if object_id.endswith("." + name) and other.docname == docname:
                    fixes[(modname, name)] = (f"{refname}.{name}", object_id)
                    break
    app.env._fairpca_viewcode_fixes = fixes
    return []


def viewcode_anchors(app, pagename, templatename, context, doctree):
    """Replace the anchors that :func:`viewcode_backlinks` could not make right."""
    if not pagename.startswith("_modules/") or "body" not in context:
        return
    modname = pagename[len("_modules/") :].replace("/", ".")
    fixes = getattr(app.env, "_fairpca_viewcode_fixes", {})
    body = context["body"]
    for (module, name), (wrong, right) in fixes.items():
        if module == modname:
            body = body.replace(
                f'<div class="viewcode-block" id="{name}">\n<a class="viewcode-back" href="',
                f'<div class="viewcode-block" id="{name}">\n'
                f'<a class="viewcode-back" data-fix="{wrong}|{right}" href="',
            )
    body = re.sub(
        r'data-fix="([^"|]+)\|([^"]+)" href="([^"#]*)#\1"',
        r'href="\3#\2"',
        body,
    )
    context["body"] = body


#: The note put on the page of an example that was not run for want of its data.
NO_DATA_NOTE = (
    ".. note::\n\n"
    "   The data sets were not found when this page was built (set ``FAIRPCA_DATA``\n"
    "   to the folder that holds them; see the README's data sets table): the\n"
    "   example was not run, and the figures and output described below are absent.\n"
)


def add_no_data_note(source):
    """Put :data:`NO_DATA_NOTE` under the title of a gallery page's reST source."""
    lines = source.split("\n")
    for i in range(1, len(lines)):
        underline = lines[i].strip()
        if underline and set(underline) == {"="} and lines[i - 1].strip():
            return "\n".join([*lines[: i + 1], "", NO_DATA_NOTE, *lines[i + 1 :]])
    return NO_DATA_NOTE + "\n" + source

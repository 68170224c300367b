"""Sphinx configuration of the fairpca documentation.

Build the site (warnings are errors) from the repository root with::

    python -m sphinx -W -b html docs docs/_build/html

It needs the ``docs`` extra (``pip install -e ".[docs]"``). The gallery in
``examples/`` is executed during the build; an example that needs a real data
set that is not installed is shown without being run (``DATA_EXAMPLES`` in
``sphinxext/fairpca_sphinx.py``), under a note that its figures are absent.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import fairpca
from fairpca.datasets._fetch import FILES

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "sphinxext"))

from fairpca_sphinx import (  # noqa: E402 (found through the line above)
    DATA_EXAMPLES,
    add_no_data_note,
    viewcode_anchors,
    viewcode_backlinks,
)

# The real data sets: $FAIRPCA_DATA, else (as the test suite does) ../shared/data beside
# the checkout when it exists, else the loaders' default (~/scikit_learn_data/fairpca).
_SHARED_DATA = ROOT.parent / "shared" / "data"
if not os.environ.get("FAIRPCA_DATA") and _SHARED_DATA.is_dir():
    os.environ["FAIRPCA_DATA"] = str(_SHARED_DATA)

# -- Project ---------------------------------------------------------------------------

project = "fairpca"
author = "fairpca developers"
copyright = "fairpca developers"
version = release = fairpca.__version__

# -- General ---------------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # serves MathJax from the site itself, not from a CDN
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "**.ipynb_checkpoints",
    # sphinx-gallery writes these next to the sources; they are not pages of the site.
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.json",
    "auto_examples/*.md5",
    "sg_execution_times.rst",
]
default_role = "literal"
pygments_style = "sphinx"

# -- autodoc / autosummary / numpydoc ---------------------------------------------------

autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # the numpydoc sections already give every type
autodoc_member_order = "groupwise"

numpydoc_show_class_members = False  # the class template lists the methods
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- MyST (docs/reproduction.md) -------------------------------------------------------

myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# -- sphinx-gallery ---------------------------------------------------------------------


def _missing(folders: tuple[str, ...]) -> bool:
    """Whether a pinned file of these real data sets' folders is absent."""
    from fairpca.datasets import get_data_home

    home = get_data_home()
    return any(not (home / path).is_file() for path in FILES if path.split("/", 1)[0] in folders)


_not_run = sorted(name for name, folders in DATA_EXAMPLES.items() if _missing(folders))
if _not_run:
    print(
        "fairpca docs: the real data for "
        + ", ".join(_not_run)
        + " is not installed (set FAIRPCA_DATA, see the README's data sets table); "
        "shown without being run, with a note that the data was not found."
    )


def _note_missing_data(app, docname, source):
    """Say on the page of an example not run for want of its data that its figures are absent."""
    if docname in {f"auto_examples/{name[:-3]}" for name in _not_run}:
        source[0] = add_no_data_note(source[0])


sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    # Run every example except those whose data is absent.
    "filename_pattern": (
        "/plot_" if not _not_run else r"/plot_(?!(" + "|".join(n[5:-3] for n in _not_run) + "))"
    ),
    "within_subsection_order": "FileNameSortKey",
    # fairpca.plotting's figures (not pyplot's) first: see fairpca_sphinx.figure_scraper.
    "image_scrapers": ("fairpca_sphinx.figure_scraper", "matplotlib"),
    # Show what the examples print, not the value of a block's last expression.
    "capture_repr": (),
    "reset_modules": ("matplotlib", "fairpca_sphinx.reset_sklearn"),
    "backreferences_dir": "gen_modules/backreferences",
    "doc_module": ("fairpca",),
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "abort_on_example_error": True,
    "plot_gallery": "True",
}

# -- HTML -------------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"fairpca {release}"
html_static_path = ["_static"]
html_css_files = ["fairpca.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 4,
    # An API page documents one object: its table of contents would be that one name.
    "secondary_sidebar_items": {
        "api/generated/*": [],
        "api/index": ["page-toc"],
        "auto_examples/*": ["page-toc"],
        "user_guide/*": ["page-toc"],
        "index": ["page-toc"],
        "reproduction": ["page-toc"],
        "references": ["page-toc"],
        "glossary": ["page-toc"],
    },
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": [], "reproduction": []}
html_show_sourcelink = False
html_copy_source = False

# -- Build-time touches -----------------------------------------------------------------

# "Citation [X] is not referenced": numpydoc gives every docstring's own reference list
# unique labels, and a module's list (e.g. fairpca.metrics) is cited by its functions'
# docstrings, which resolve to the site-wide bibliography (references.rst) instead.
suppress_warnings = ["ref.citation"]

_SHAPE = re.compile(r"shape \(([^()]*)\)")
_TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=[,)\s]|$)")


def _escape_shapes(app, what, name, obj, options, lines):
    """Escape the trailing underscores in ``of shape (n_components_, n_features)``.

    Docstrings give array shapes in plain text, where reST would read
    ``n_components_`` as a link to a target named "n_components".
    """
    for i, line in enumerate(lines):
        lines[i] = _SHAPE.sub(
            lambda m: "shape (" + _TRAILING_UNDERSCORE.sub(r"\\_", m.group(1)) + ")", line
        )


# reST cannot nest a literal in bold: ``**exactly ``d`` for two groups**`` shows the
# backquotes. Split the bold around the literal instead.
_BOLD_AROUND_LITERAL = re.compile(
    r"(?<![\w*`])\*\*(\w[^*`\n]*?) ``([^`\n]+)`` ([^*`\n]*(?:\n[^*`\n]*)?\w)\*\*(?![\w*`])"
)


def _split_bold_around_literals(app, what, name, obj, options, lines):
    """Turn ``**a ``x`` b**`` into ``**a** ``x`` **b**`` in docstrings (across lines too)."""
    text = "\n".join(lines)
    fixed = _BOLD_AROUND_LITERAL.sub(r"**\1** ``\2`` **\3**", text)
    if fixed != text:
        lines[:] = fixed.split("\n")


# Methods inherited from scikit-learn (get_params, set_output, set_fit_request, ...) link to
# pages of scikit-learn's own site by label; this site has no copy of them (and the build
# has no network for intersphinx), so those references become plain text.
_SKLEARN_ROLE = re.compile(r":(?:ref|term):`(?:([^`<]*?)\s*<[^`>]+>|([^`<]+))`")


def _unlink_sklearn_references(app, what, name, obj, options, lines):
    """Turn ``:ref:`` and ``:term:`` roles of scikit-learn's docstrings into plain text."""
    if not getattr(obj, "__module__", "").startswith("sklearn"):
        return
    for i, line in enumerate(lines):
        lines[i] = _SKLEARN_ROLE.sub(lambda m: m.group(1) or m.group(2), line)


# numpydoc gives each docstring's citations unique labels ("R3be2eebb4875-Samadi2018")
# and shows the original one on the docstring's own page; a summary line quoted in an
# autosummary table would show the unique label. Show the original there too.
_UNIQUE_CITATION = re.compile(r"\[R[0-9a-f]+-([^\]]+)\]")


def _relabel_citations(app, doctree, docname):
    """Show ``[Samadi2018]`` instead of ``[R3be2eebb4875-Samadi2018]`` in links."""
    from docutils import nodes

    for reference in doctree.findall(nodes.reference):
        for text in list(reference.findall(nodes.Text)):
            relabelled = _UNIQUE_CITATION.sub(r"[\1]", text.astext())
            if relabelled != text.astext():
                text.parent.replace(text, nodes.Text(relabelled))


def setup(app):
    """Register the docstring touches after numpydoc's own processing."""
    app.connect("doctree-resolved", _relabel_citations)
    app.connect("source-read", _note_missing_data)
    # Before viewcode's own handler (priority 500) writes the source pages.
    app.connect("html-collect-pages", viewcode_backlinks, priority=400)
    app.connect("html-page-context", viewcode_anchors)
    app.connect("autodoc-process-docstring", _escape_shapes, priority=600)
    app.connect("autodoc-process-docstring", _split_bold_around_literals, priority=600)
    app.connect("autodoc-process-docstring", _unlink_sklearn_references, priority=600)

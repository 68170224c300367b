"""The documentation site: every public name is in the API reference, and the site builds.

The build (``python -m sphinx -W -b html docs <tmp>``, warnings as errors, the gallery
executed) is marked ``slow``; it needs the ``docs`` extra and is skipped without it. An
example that reads a real data set is checked for its figures when that data is
installed; without it the site shows the example without running it, and
``FAIRPCA_REQUIRE_DATA=1`` makes the missing data an error, as for the other real-data
tests.
"""

import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from sklearn.base import BaseEstimator

import fairpca
from conftest import REQUIRE_DATA, missing_data, missing_data_message
from test_typing import PUBLIC_MODULES  # the public API: what the reference documents

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
API_INDEX = DOCS / "api" / "index.rst"


sys.path.insert(0, str(DOCS / "sphinxext"))
from fairpca_sphinx import (  # noqa: E402 (the examples that read real data)
    DATA_EXAMPLES,
    NO_DATA_NOTE,
    add_no_data_note,
)

#: Import names of the ``docs`` extra (pyproject.toml).
DOCS_EXTRA = [
    "sphinx",
    "numpydoc",
    "sphinx_gallery",
    "myst_parser",
    "pydata_sphinx_theme",
    "sphinx-mathjax-offline",
]


def estimator_classes():
    """Every estimator class the package exports (``all_estimators`` and the transformers)."""
    exported = [getattr(fairpca, name) for name in fairpca.__all__]
    classes = {obj for obj in exported if inspect.isclass(obj) and issubclass(obj, BaseEstimator)}
    return sorted(classes | set(fairpca.all_estimators()), key=lambda cls: cls.__name__)


def documented_names(module_name, name):
    """The names under which ``module_name.name`` may be documented (re-exports once).

    An object public in several modules (``fairpca.datasets.Split`` is also
    ``fairpca.experiments.Split``) is documented once, under any of them: Sphinx
    refuses two descriptions of one class.
    """
    obj = getattr(importlib.import_module(module_name), name)
    names = {f"{module_name}.{name}"}
    for other in ("fairpca", *PUBLIC_MODULES):
        if getattr(importlib.import_module(other), name, None) is obj:
            names.add(f"{other}.{name}")
    return names


def public_names():
    return [
        (module_name, name)
        for module_name in PUBLIC_MODULES
        for name in importlib.import_module(module_name).__all__
    ]


@pytest.mark.parametrize(("module_name", "name"), public_names())
def test_api_reference_lists_every_public_name(module_name, name):
    # Fast: reads the API reference's source, so that a new public name without an
    # entry fails here rather than only in the slow build.
    source = API_INDEX.read_text()
    listed = set()
    current = None
    for line in source.splitlines():
        if match := re.match(r"\.\. currentmodule:: (\S+)", line):
            current = match.group(1)
        elif match := re.match(r"\.\. (?:py:data|autodata)::\s+(\S+)", line):
            listed.add(f"{current}.{match.group(1)}")
        elif match := re.match(r"   ([A-Za-z_][\w.]*)$", line):
            entry = match.group(1)
            listed.add(entry if entry.startswith("fairpca.") else f"{current}.{entry}")
    assert documented_names(module_name, name) & listed, (
        f"{module_name}.{name} is public but not in docs/api/index.rst"
    )


def test_every_example_is_a_gallery_script():
    scripts = sorted(EXAMPLES.glob("*.py"))
    assert len(scripts) >= 8
    for script in scripts:
        assert script.name.startswith("plot_"), script  # sphinx-gallery runs plot_* only
        text = script.read_text()
        assert re.match(r'"""\n.+\n=+\n', text), f"{script.name} needs a titled docstring"


def _docs_extra_missing():
    return [name for name in DOCS_EXTRA if importlib.util.find_spec(name) is None]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built into a temporary folder, warnings as errors, every example run."""
    missing = _docs_extra_missing()
    if missing:
        pytest.skip(
            f"the docs extra is not installed ({', '.join(missing)} missing): "
            'pip install -e ".[docs]"'
        )
    out = tmp_path_factory.mktemp("site")
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-b",
        "html",
        # Run every example even if an earlier build in docs/ left its output.
        "-D",
        "sphinx_gallery_conf.run_stale_examples=1",
        str(DOCS),
        str(out),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=1500, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return out


@pytest.mark.slow
def test_site_has_an_api_page_per_estimator(site):
    for cls in estimator_classes():
        page = site / "api" / "generated" / f"fairpca.{cls.__name__}.html"
        assert page.is_file(), f"no API page for {cls.__name__}"
        html = page.read_text()
        assert f'id="fairpca.{cls.__name__}"' in html
        assert f'id="fairpca.{cls.__name__}.fit"' in html  # the methods are documented
        assert "Parameters" in html


@pytest.mark.slow
def test_site_documents_every_public_name(site):
    html = "".join(page.read_text() for page in (site / "api").rglob("*.html"))
    for module_name, name in public_names():
        ids = documented_names(module_name, name)
        assert any(f'id="{i}"' in html for i in ids), f"{module_name}.{name} not documented"


@pytest.mark.slow
def test_site_gallery_pages_show_their_figures(site):
    scripts = sorted(EXAMPLES.glob("plot_*.py"))
    for script in scripts:
        page = site / "auto_examples" / f"{script.stem}.html"
        assert page.is_file(), f"no gallery page for {script.name}"
        html = page.read_text()
        missing = missing_data(DATA_EXAMPLES.get(script.name, ()))
        if script.name in DATA_EXAMPLES and missing:
            if REQUIRE_DATA:
                pytest.fail("FAIRPCA_REQUIRE_DATA=1 but " + missing_data_message(missing))
            # Shown without being run (docs/conf.py), saying that its figures are absent.
            assert "were not found when this page was built" in html, script.name
            continue
        images = re.findall(r'<img [^>]*src="([^"]+)"', html)
        figures = [src for src in images if "sphx_glr_" in src and "thumb" not in src]
        assert figures, f"{script.name}: no figure on its gallery page"
        contents = [(page.parent / src).read_bytes() for src in figures]
        # Each figure once (the fairpca.plotting scraper must not repeat pyplot's).
        assert len(set(contents)) == len(contents), f"{script.name}: a figure is repeated"
        assert "Traceback" not in html, f"{script.name} raised"


@pytest.mark.slow
def test_site_pages_link_the_guide_reproduction_and_references(site):
    for page in [
        "index.html",
        "user_guide/unfairness.html",
        "user_guide/notions.html",
        "user_guide/choosing.html",
        "user_guide/groups.html",
        "user_guide/scale.html",
        "user_guide/reproducing.html",
        "reproduction.html",
        "references.html",
        "auto_examples/index.html",
        "api/index.html",
    ]:
        assert (site / page).is_file(), page
    guide = (site / "user_guide" / "unfairness.html").read_text()
    assert "sphx_glr_plot_00_what_unfairness_looks_like_001.png" in guide
    # MathJax is served with the site, not from a CDN: the math renders offline.
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()


#: What an example that needs real data says when they are absent (script and page).
NO_DATA_WORDS = "were not found when this page was built"


@pytest.mark.parametrize("script", sorted(DATA_EXAMPLES))
def test_example_without_data_says_its_figures_are_absent(script, tmp_path):
    # Run as sphinx-gallery would find it without data: FAIRPCA_DATA an empty folder.
    env = {**os.environ, "FAIRPCA_DATA": str(tmp_path), "MPLBACKEND": "Agg"}
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert NO_DATA_WORDS in result.stdout
    assert "FAIRPCA_DATA" in result.stdout
    assert "figures below are absent" in result.stdout


def test_gallery_page_without_data_gets_the_note_under_its_title():
    source = ".. _sphx_glr_auto_examples_plot_01.py:\n\n\nA title\n=======\n\nText.\n"
    noted = add_no_data_note(source)
    assert NO_DATA_WORDS in NO_DATA_NOTE
    assert noted.index("=======") < noted.index(NO_DATA_WORDS) < noted.index("Text.")
    assert noted.replace(NO_DATA_NOTE, "").split() == source.split()  # nothing else


def test_css_lets_wide_code_scroll_within_the_column():
    conf = (DOCS / "conf.py").read_text()
    assert re.search(r'^html_static_path = \["_static"\]$', conf, re.M)
    css_files = re.search(r"^html_css_files = \[(.*)\]$", conf, re.M)
    assert css_files and '"fairpca.css"' in css_files.group(1)
    css = (DOCS / "_static" / "fairpca.css").read_text()
    rules = dict(re.findall(r"([^{}]+)\{([^{}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S)))
    rules = {" ".join(sel.split()): body for sel, body in rules.items()}
    pre_rules = [body for sel, body in rules.items() if ".bd-article pre" in sel]
    assert any("overflow-x: auto" in body for body in pre_rules), css
    # The column itself may shrink below its widest line (a flex item's default).
    assert any(
        "bd-article-container" in sel and "min-width: 0" in body for sel, body in rules.items()
    )


class _Anchors(HTMLParser):
    """The ids of a page and the targets of its links."""

    def __init__(self):
        super().__init__()
        self.ids = set()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        if tag == "a" and attrs.get("href"):
            self.hrefs.append(attrs["href"])


def broken_anchors(site):
    """``(page, href)`` of every link to a ``#fragment`` missing from a page of the site."""
    pages = {}
    for path in site.rglob("*.html"):
        parser = _Anchors()
        parser.feed(path.read_text(errors="replace"))
        pages[path.resolve()] = parser
    broken = []
    for path, parser in pages.items():
        for href in parser.hrefs:
            url = urlsplit(href)
            if url.scheme or url.netloc or not url.fragment:
                continue
            target = (path.parent / unquote(url.path)).resolve() if url.path else path
            if target in pages and unquote(url.fragment) not in pages[target].ids:
                broken.append((str(path.relative_to(site.resolve())), href))
    return broken


@pytest.mark.slow
def test_site_links_have_their_anchors(site):
    # The source pages' "[docs]" links above all (sphinx.ext.viewcode, fixed in
    # docs/sphinxext/fairpca_sphinx.py): every #fragment exists on the page linked.
    broken = broken_anchors(site)
    assert not broken, "\n".join(f"{page}: {href}" for page, href in broken[:20])
    assert list((site / "_modules").rglob("*.html")), "no source pages"

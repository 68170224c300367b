"""The HTML report's layout: wide tables scroll in their own box, the page never does.

The report is parsed (no browser): every ``<table>`` must sit inside the scroll box,
whose CSS rules (``overflow-x: auto``; a sticky first column) must be in the page.
``benchmarks/report_screenshots.py`` checks the rendered width with a headless browser.
"""

from html.parser import HTMLParser

import numpy as np
import pandas as pd

from fairpca._html import SCROLL_CLASS, Markup, group_panel, html_report, legend_list


class _Tables(HTMLParser):
    """Each ``<table>``'s open ancestors' classes, and the text of ``<style>``."""

    def __init__(self):
        super().__init__()
        self.stack = []
        self.tables = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        if tag in {"br", "wbr", "img", "meta"}:  # void elements: never closed
            return
        classes = (dict(attrs).get("class") or "").split()
        if tag == "table":
            self.tables.append([c for _, cs in self.stack for c in cs])
        self.stack.append((tag, classes))
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.style += data


def _parse(document):
    parser = _Tables()
    parser.feed(document)
    return parser


def _rules(style):
    """``{selector: declarations}`` of a flat style sheet, whitespace normalised."""
    rules = {}
    for chunk in style.split("}"):
        if "{" in chunk:
            selector, body = chunk.split("{", 1)
            rules[" ".join(selector.split())] = " ".join(body.split())
    return rules


def _assert_layout(document, n_tables):
    parsed = _parse(document)
    assert len(parsed.tables) == n_tables
    for ancestors in parsed.tables:
        assert SCROLL_CLASS in ancestors
    rules = _rules(parsed.style)
    assert "overflow-x: auto" in rules[f".{SCROLL_CLASS}"]
    sticky = rules[f".{SCROLL_CLASS} tr > :first-child"]
    assert "position: sticky" in sticky and "left: 0" in sticky
    assert "background" in sticky  # scrolled cells do not show through
    assert "max-width: 100%" in rules["img"]


def _wide_table(n_columns=40):
    columns = [f"reconstruction_error[group number {j}]" for j in range(n_columns)]
    return pd.DataFrame(
        np.arange(3 * n_columns, dtype=float).reshape(3, n_columns),
        index=["PCA", "MeanMatchingFairPCA", "<b>odd</b>"],
        columns=columns,
    )


def test_every_table_scrolls_in_its_box_with_a_sticky_first_column():
    outcomes = pd.DataFrame(
        {
            "method": ["PCA", "PCA", "Fair", "Fair"],
            "group": ["a", "b", "a", "b"],
            "marginal_loss": [0.1, 0.2, 0.15, 0.1],
            "ratio": [1.0, 1.0, 1.5, 0.5],
            "worse_off": [None, None, False, False],
            "reconstruction_error": [1.0, 2.0, 1.1, 1.9],
            "pca_reconstruction_error": [1.0, 2.0, 1.0, 2.0],
        }
    )
    document = html_report(
        "t",
        {"data": "x"},
        [
            ("Comparison", ["a note", _wide_table()]),
            ("Groups", [group_panel(outcomes)]),
            ("Boxed", [Markup(f'<div class="{SCROLL_CLASS}"><table></table></div>')]),
        ],
        legend=["mmd2: largest squared MMD (lower is fairer; 0 for equal distributions)"],
    )
    _assert_layout(document, 3)
    assert document.count(f'class="{SCROLL_CLASS}"') == 3  # one box per table, not nested
    # Long column names may break after "_" and "[" (an invisible <wbr>)...
    assert "reconstruction_<wbr>error[<wbr>group number 0]" in document
    # ...while the row labels stay escaped.
    assert "&lt;b&gt;odd&lt;/b&gt;" in document and "<b>odd" not in document


def test_legend_is_shown_before_the_tables_with_its_directions():
    document = html_report(
        "t",
        {},
        [("Table", [_wide_table(2)])],
        legend=[
            "mmd2: largest squared MMD (RBF) (lower is fairer; 0 for equal distributions)",
            "accuracy: <i>cv</i> accuracy (higher is better; fraction)",
            "a line without a name",
        ],
    )
    assert document.index("What the columns mean") < document.index("<table")
    assert (
        '<dt>mmd2</dt><dd>largest squared MMD (RBF) <span class="direction">(lower is fairer;'
        in (document)
    )
    assert "&lt;i&gt;cv&lt;/i&gt;" in document and "<i>" not in document
    assert "<dd>a line without a name</dd>" in document
    assert str(legend_list([])) == '<dl class="legend">\n\n</dl>'
    assert "What the columns mean" not in html_report("t", {}, [])


def test_tradeoff_report_tables_scroll_and_it_has_a_legend(tmp_path):
    from sklearn.decomposition import PCA

    from fairpca import MeanMatchingFairPCA, tradeoff
    from fairpca.datasets import make_gaussian_groups, make_split

    X, s = make_gaussian_groups(n_samples=200, n_features=4, random_state=0)
    split = make_split(pd.DataFrame(X, columns=[f"x{j}" for j in range(4)]), pd.Series(s))
    curve = tradeoff.tradeoff_curve_split(
        split,
        estimators={"PCA": PCA(1), "MeanMatchingFairPCA": MeanMatchingFairPCA(n_components=1)},
        param_grids={"MeanMatchingFairPCA": {"mean_penalty": [0.0, np.inf]}},
        metrics=["reconstruction_error_gap"],
        n_components=1,
        n_bootstrap=3,
    )
    tradeoff.write_report(curve, tmp_path / "out", source="synthetic")
    document = (tmp_path / "out" / "report.html").read_text()
    n_tables = document.count("<table")
    assert n_tables >= 3  # frontier, groups, every setting
    _assert_layout(document, n_tables)
    assert "lower is fairer" in document  # the legend with its directions


def test_a_figure_is_scaled_to_the_page():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(30, 2))  # far wider than a page
    fig.subplots().plot([0, 1])
    document = html_report("t", {}, [("wide", [fig])])
    assert '<img alt="wide"' in document
    assert "max-width: 100%" in _rules(_parse(document).style)["img"]

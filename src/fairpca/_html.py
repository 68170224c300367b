"""One self-contained HTML report: tables and figures embedded in a single file.

The command line writes one next to its CSV and Markdown files, so that a
result can be mailed or archived as one file that opens in any browser. The
report states what a reader needs to rerun it: the data, the split, the seed
and the software versions.
"""

import base64
import io
import platform
import re
from importlib import metadata

from fairpca._output import escape_html, html_safe

__all__ = [
    "Markup",
    "SCROLL_CLASS",
    "WORSE_OFF_MARK",
    "group_panel",
    "html_report",
    "legend_list",
    "software_versions",
]

#: The mark of a cell whose group is served worse than under PCA (with a CSS class:
#: the mark is text, so the panel does not rely on colour alone).
WORSE_OFF_MARK = "\u25b2"

#: The class of the box around every table: the table scrolls sideways inside it, with
#: its first column held in place, so that a wide table never widens the page.
SCROLL_CLASS = "table-scroll"

_STYLE = """
body { font-family: sans-serif; max-width: 75em; margin: 2em auto; padding: 0 1em;
  color: #222; overflow-wrap: break-word; }
.table-scroll { overflow-x: auto; max-width: 100%; margin: 1em 0; }
table { border-collapse: separate; border-spacing: 0; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: right; }
th { background: #eee; }
thead th { vertical-align: bottom; min-width: 4em; }
.table-scroll tr > :first-child { position: sticky; left: 0; z-index: 1;
  text-align: left; background: #f6f6f6; }
.table-scroll thead tr > :first-child { background: #eee; z-index: 2; }
dt { font-weight: bold; } dd { margin: 0 0 0.4em 1.5em; }
dl.legend dd .direction { font-style: italic; }
img { max-width: 100%; height: auto; }
td.worse-off { background: #fbe3e0; font-weight: bold; }
td.not-judged { color: #666; text-align: center; }
td small { font-weight: normal; color: #555; }
"""


def software_versions():
    """Versions of Python and of the packages behind a result, as ``{name: version}``."""
    versions = {"python": platform.python_version()}
    for name in ("fairpca", "numpy", "scipy", "scikit-learn", "pandas", "matplotlib"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def _figure_html(figure, alt):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="{escape_html(alt)}" src="data:image/png;base64,{encoded}">'


class Markup(str):
    """HTML made by this module, every text in it already escaped: inserted as it is."""


def _number(value):
    return "nan" if value != value else f"{value:.4g}"


def group_panel(outcomes, by=("method",), others=None):
    """The per-group panel: one row per method (or setting), one column per group.

    Parameters
    ----------
    outcomes : pandas.DataFrame
        :func:`fairpca.compare.group_outcomes` (or the trade-off's): a row per
        (``by``..., ``group``).
    by : sequence of str, default=("method",)
        The columns naming a row of the panel (their texts joined by a space).
    others : dict of str to str, default=None
        Rows without per-group values (a method that is not a linear
        projection): label -> why, shown across the group columns.

    Returns
    -------
    Markup
        An HTML table. Each cell holds the group's per-row marginal loss, its
        ratio to the reference (``x``) and, below, the per-row reconstruction
        error with PCA's; a group worse off than under PCA has the class
        ``worse-off`` and the mark :data:`WORSE_OFF_MARK`. Every label is escaped.
    """
    by = list(by)
    groups = list(dict.fromkeys(outcomes["group"]))
    header = "".join(f"<th>{escape_html(g)}</th>" for g in groups)
    lines = [
        '<table class="group-panel">',
        f"<thead><tr><th>{escape_html(' / '.join(by))}</th>{header}</tr></thead><tbody>",
    ]
    for key, rows in outcomes.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        label = " ".join(str(part) for part in key if str(part)).strip()
        cells = dict(zip(rows["group"], rows.itertuples(index=False), strict=True))
        tds = []
        for g in groups:
            row = cells.get(g)
            if row is None:
                tds.append("<td></td>")
                continue
            worse = bool(row.worse_off == True)  # noqa: E712 - None (not judged) or a bool
            ratio = "" if row.ratio != row.ratio else f" (\u00d7{row.ratio:.2f})"
            mark = f" {WORSE_OFF_MARK}" if worse else ""
            context = (
                f"error {_number(row.reconstruction_error)} "
                f"(PCA {_number(row.pca_reconstruction_error)})"
            )
            tds.append(
                ('<td class="worse-off">' if worse else "<td>")
                + escape_html(f"{_number(row.marginal_loss)}{ratio}{mark}")
                + f"<br><small>{escape_html(context)}</small></td>"
            )
        lines.append(f"<tr><th>{escape_html(label)}</th>{''.join(tds)}</tr>")
    for label, why in (others or {}).items():
        lines.append(
            f"<tr><th>{escape_html(label)}</th>"
            f'<td class="not-judged" colspan="{max(len(groups), 1)}">{escape_html(why)}</td></tr>'
        )
    lines.append("</tbody></table>")
    return Markup("\n".join(lines))


def _scrollable(html):
    """``html`` (one or more tables) in the box that scrolls sideways."""
    return f'<div class="{SCROLL_CLASS}">\n{html}\n</div>'


_HEADER_CELL = re.compile(r"(<th\b[^>]*>)(.*?)(</th>)", re.DOTALL)


def _breakable_headers(html):
    """Let long column names (``reconstruction_error[group]``) break after ``_`` and ``[``.

    Only the escaped text between ``<th ...>`` and ``</th>`` changes (pandas writes
    no markup inside a header cell); ``<wbr>`` shows nothing where a line does not break.
    """

    def breakable(match):
        opening, text, closing = match.groups()
        return opening + re.sub(r"([_\[])", r"\1<wbr>", text) + closing

    return _HEADER_CELL.sub(breakable, html)


def legend_list(lines):
    """The metric legend as a definition list: one ``name: what it measures (direction)``.

    Parameters
    ----------
    lines : sequence of str
        :func:`fairpca.metrics._registry.legend`'s lines (``"column: text"``); a
        line without ``": "`` is shown whole.

    Returns
    -------
    Markup
        ``<dl class="legend">``; every text escaped, the bracketed direction
        ("lower is fairer", ...) set in italics.
    """
    items = []
    for line in lines:
        name, sep, text = str(line).partition(": ")
        if not sep:
            items.append(f"<dd>{escape_html(str(line))}</dd>")
            continue
        body = escape_html(text)
        match = re.search(r"\(([^()]*)\)\s*$", text)
        if match:
            head = escape_html(text[: match.start()])
            body = f'{head}<span class="direction">({escape_html(match.group(1))})</span>'
        items.append(f"<dt>{escape_html(name)}</dt><dd>{body}</dd>")
    return Markup('<dl class="legend">\n' + "\n".join(items) + "\n</dl>")


def _block_html(block, heading):
    html = _block_inner_html(block, heading)
    if "<table" in html and SCROLL_CLASS not in html:
        return _scrollable(html)
    return html


def _block_inner_html(block, heading):
    if isinstance(block, Markup):
        return str(block)
    if isinstance(block, str):
        return f"<p>{escape_html(block)}</p>"
    if hasattr(block, "savefig"):
        return _figure_html(block, heading)
    if hasattr(block, "to_html"):
        # escape=True (the default, stated): cells and labels hold the user's text.
        return _breakable_headers(
            html_safe(block).to_html(
                float_format=lambda v: f"{v:.4g}", na_rep="", border=0, escape=True
            )
        )
    raise TypeError(f"cannot put a {type(block).__name__} in an HTML report.")


def html_report(title, facts, sections, legend=None):
    """The report as one HTML document (a string).

    Parameters
    ----------
    title : str
    facts : dict of str to object
        Shown first, as a definition list (data, split, seed, ...); the
        software versions are appended.
    sections : list of (str, list)
        ``(heading, blocks)``; a block is a string (a paragraph), a
        :class:`Markup` (HTML this module made, e.g. :func:`group_panel`), a
        pandas DataFrame (a table) or a matplotlib Figure (embedded as a PNG
        data URI). Every table is put in a box that scrolls sideways with its
        first column held (:data:`SCROLL_CLASS`): the page never grows wider
        than the window.
    legend : sequence of str, default=None
        The metric legend (``"column: definition (direction; scale)"`` lines,
        :func:`fairpca.metrics._registry.legend`), shown after the facts and
        before any table as "What the columns mean" (:func:`legend_list`).

    Returns
    -------
    document : str
    """
    facts = {**facts, "software": ", ".join(f"{k} {v}" for k, v in software_versions().items())}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape_html(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape_html(title)}</h1>",
        "<dl>",
        *(
            f"<dt>{escape_html(str(key))}</dt><dd>{escape_html(str(value))}</dd>"
            for key, value in facts.items()
        ),
        "</dl>",
    ]
    if legend:
        parts += ["<h2>What the columns mean</h2>", str(legend_list(legend))]
    for heading, blocks in sections:
        parts.append(f"<h2>{escape_html(heading)}</h2>")
        parts.extend(_block_html(block, heading) for block in blocks)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"

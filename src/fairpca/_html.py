"""One self-contained HTML report: tables and figures embedded in a single file.

The command line writes one next to its CSV and Markdown files, so that a
result can be mailed or archived as one file that opens in any browser. The
report states what a reader needs to rerun it: the data, the split, the seed
and the software versions.
"""

import base64
import io
import platform
from importlib import metadata

from fairpca._output import escape_html, html_safe

__all__ = ["Markup", "WORSE_OFF_MARK", "group_panel", "html_report", "software_versions"]

#: The mark of a cell whose group is served worse than under PCA (with a CSS class:
#: the mark is text, so the panel does not rely on colour alone).
WORSE_OFF_MARK = "\u25b2"

_STYLE = """
body { font-family: sans-serif; max-width: 75em; margin: 2em auto; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: right; }
th { background: #eee; }
dt { font-weight: bold; } dd { margin: 0 0 0.4em 1.5em; }
img { max-width: 100%; }
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
    figure.savefig(buffer, format="png", dpi=110)
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


def _block_html(block, heading):
    if isinstance(block, Markup):
        return str(block)
    if isinstance(block, str):
        return f"<p>{escape_html(block)}</p>"
    if hasattr(block, "savefig"):
        return _figure_html(block, heading)
    if hasattr(block, "to_html"):
        # escape=True (the default, stated): cells and labels hold the user's text.
        return html_safe(block).to_html(
            float_format=lambda v: f"{v:.4g}", na_rep="", border=0, escape=True
        )
    raise TypeError(f"cannot put a {type(block).__name__} in an HTML report.")


def html_report(title, facts, sections):
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
        data URI).

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
    for heading, blocks in sections:
        parts.append(f"<h2>{escape_html(heading)}</h2>")
        parts.extend(_block_html(block, heading) for block in blocks)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"

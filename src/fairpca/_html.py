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

__all__ = ["html_report", "software_versions"]

_STYLE = """
body { font-family: sans-serif; max-width: 75em; margin: 2em auto; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: right; }
th { background: #eee; }
dt { font-weight: bold; } dd { margin: 0 0 0.4em 1.5em; }
img { max-width: 100%; }
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


def _block_html(block, heading):
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
        ``(heading, blocks)``; a block is a string (a paragraph), a pandas
        DataFrame (a table) or a matplotlib Figure (embedded as a PNG data URI).

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

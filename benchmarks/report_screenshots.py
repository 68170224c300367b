"""Screenshots of ``report.html`` at 1,280 px, and whether the page overflows sideways.

Writes the reports of a small ``compare`` and a small ``tradeoff`` run (synthetic data,
a few seconds), or takes the reports given with ``--report``, and renders each with
headless Chromium at a window 1,280 px wide:

- ``<name>.png``: the screenshot (``--screenshot``, window 1280x2000);
- the page's width: a copy of the report with a one-line script that, on load, writes
  ``document.documentElement.scrollWidth`` into an attribute of ``<body>``, read back
  from ``--dump-dom``. The page does not overflow when it is at most 1,280.

Chromium is looked for on PATH (``chromium``, ``chromium-browser``, ``google-chrome``,
``headless_shell``, or ``$CHROMIUM``); without it the script says so and exits 0
after writing the reports (nothing is installed). To do it by hand::

    chromium --headless --no-sandbox --disable-gpu --window-size=1280,2000 \\
        --screenshot=out.png file:///path/to/report.html
    chromium --headless --no-sandbox --disable-gpu --window-size=1280,2000 \\
        --virtual-time-budget=5000 --dump-dom file:///path/to/measured.html \\
        | grep -o 'data-scroll-width="[0-9]*"'

Run::

    python benchmarks/report_screenshots.py --out /tmp/report_screenshots
    python benchmarks/report_screenshots.py --report path/to/report.html --out shots

The tables are wide on purpose (many groups): each must scroll in its own box
(``fairpca._html.SCROLL_CLASS``), with the page at most 1,280 px wide.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

WIDTH = 1280
_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "headless_shell")
_MEASURE = (
    "<script>window.addEventListener('load', function () {"
    " document.body.setAttribute('data-scroll-width',"
    " String(document.documentElement.scrollWidth)); });</script>"
)


def find_browser():
    """The path of a headless-capable Chromium, or None."""
    named = os.environ.get("CHROMIUM")
    for name in ((named,) if named else ()) + _BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def write_reports(out):
    """The reports of a small compare and trade-off run (synthetic, 8 groups)."""
    import numpy as np
    import pandas as pd
    from sklearn.decomposition import PCA

    from fairpca import MeanMatchingFairPCA, tradeoff
    from fairpca.compare import compare_split
    from fairpca.datasets import make_split

    rng = np.random.default_rng(0)
    n, groups = 800, [f"group with a long name {g}" for g in range(8)]
    s = np.repeat(groups, n // len(groups))
    X = rng.normal(size=(n, 6)) + np.arange(len(s))[:, None] % 3
    y = (X[:, 0] + rng.normal(size=n) > 1).astype(int)
    frame = pd.DataFrame(X, columns=[f"feature_{j}" for j in range(6)])
    split = make_split(frame, pd.Series(s), y)
    comparison = compare_split(split, n_components=2, methods=["MeanMatchingFairPCA"])
    comparison.write_report(out / "compare", source="synthetic, 8 groups", force=True)
    curve = tradeoff.tradeoff_curve_split(
        split,
        estimators={"PCA": PCA(2), "MeanMatchingFairPCA": MeanMatchingFairPCA(n_components=2)},
        param_grids={"MeanMatchingFairPCA": {"mean_penalty": [0.0, 1.0, 10.0, np.inf]}},
        n_components=2,
        n_bootstrap=20,
    )
    tradeoff.write_report(curve, out / "tradeoff", source="synthetic, 8 groups", force=True)
    return {
        "compare": out / "compare" / "report.html",
        "tradeoff": out / "tradeoff" / "report.html",
    }


def _chromium(browser, *args):
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu"]
    command += [f"--window-size={WIDTH},2000", "--hide-scrollbars", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def shoot(browser, name, report, out):
    """Screenshot ``report`` into ``out/<name>.png``; return the page's scroll width."""
    report = Path(report).resolve()
    _chromium(browser, f"--screenshot={out / f'{name}.png'}", report.as_uri())
    measured = out / f"{name}.measured.html"
    text = report.read_text(encoding="utf-8")
    measured.write_text(text.replace("</body>", _MEASURE + "</body>", 1), encoding="utf-8")
    dom = _chromium(browser, "--virtual-time-budget=5000", "--dump-dom", measured.as_uri())
    match = re.search(r'data-scroll-width="(\d+)"', dom.stdout)
    return int(match.group(1)) if match else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("report_screenshots"))
    parser.add_argument("--report", type=Path, action="append", help="a report.html (repeat)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.report:
        reports = {f"report{i}": path for i, path in enumerate(args.report)}
    else:
        reports = write_reports(args.out)
    browser = find_browser()
    if browser is None:
        print(
            "No Chromium on PATH (chromium, chromium-browser, google-chrome, headless_shell "
            "or $CHROMIUM): no screenshots. Reports written: "
            + ", ".join(str(p) for p in reports.values())
        )
        return 0
    failed = False
    for name, report in reports.items():
        width = shoot(browser, name, report, args.out)
        fits = width is not None and width <= WIDTH
        failed |= not fits
        print(
            f"{name}: {args.out / f'{name}.png'}; document scrollWidth {width} "
            f"({'fits' if fits else 'OVERFLOWS'} {WIDTH} px)"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

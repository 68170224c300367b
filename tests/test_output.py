"""Outputs of the command line: escaping per language, staging, one rename, the lock."""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairpca import _output
from fairpca._output import (
    csv_safe,
    escape_csv_cell,
    escape_markdown,
    lock_path,
    markdown_table,
    plot_text,
)
from fairpca.cli import cli

#: Group labels a spreadsheet, a Markdown renderer or matplotlib would misread.
HOSTILE_LABELS = ["=1+1", "<script>alert(1)</script>", "a|b", "x\ny", r"$\frac{x}{$"]


@pytest.mark.parametrize("prefix", ["=", "+", "-", "@", "\t", "\r"])
def test_csv_cell_with_a_formula_prefix_gets_a_quote(prefix):
    assert escape_csv_cell(prefix + "1+1") == "'" + prefix + "1+1"


@pytest.mark.parametrize("value", [-1.5, -3, 0.0, np.float64(-2.0), np.int64(-7), True, None])
def test_csv_numbers_are_untouched(value):
    assert escape_csv_cell(value) is value


def test_csv_plain_text_is_untouched():
    for text in ["abc", "1+1", "a=b", "", "'=x"]:
        assert escape_csv_cell(text) == text


def test_csv_safe_escapes_cells_index_and_columns_not_numbers():
    frame = pd.DataFrame(
        {"error[=1+1]": [-1.0, 2.0], "group": ["=HYPERLINK(1)", "ok"], "-n": [-1, 2]},
        index=pd.Index(["@cmd", "PCA"], name="method"),
    )
    safe = csv_safe(frame)
    assert list(safe.columns) == ["error[=1+1]", "group", "'-n"]
    assert list(safe.index) == ["'@cmd", "PCA"]
    assert list(safe["group"]) == ["'=HYPERLINK(1)", "ok"]
    assert list(safe["error[=1+1]"]) == [-1.0, 2.0] and list(safe["'-n"]) == [-1, 2]
    assert frame.loc["@cmd", "group"] == "=HYPERLINK(1)"  # the original is unchanged
    multi = pd.DataFrame({"x": [1.0]}, index=pd.MultiIndex.from_tuples([("=a", "-b")]))
    assert csv_safe(multi).index[0] == ("'=a", "'-b")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a|b", r"a\|b"),
        ("<script>", "&lt;script&gt;"),
        ("a & b &lt;", "a &amp; b &amp;lt;"),
        ("$x$ ~y~", r"\$x\$ \~y\~"),
        ("\u202eab\x00c", r"\\u202eab\\x00c"),
        ("[x](y)", r"\[x\](y)"),
        ("*_`", r"\*\_\`"),
        ("back\\slash", r"back\\slash"),
        ("x\ny", "x y"),
        ("x\r\ny\rz\u2028w", "x y z w"),
        ("plain 1.5", "plain 1.5"),
    ],
)
def test_markdown_escapes_special_characters_and_line_breaks(text, expected):
    assert escape_markdown(text) == expected


def test_markdown_table_keeps_numbers_and_escapes_text():
    table = pd.DataFrame(
        {"error[a|b]": [0.123456, float("nan")], "reason": ["", "<b>x\ny</b>"]},
        index=["PCA", "M|1"],
    )
    lines = markdown_table(table).splitlines()
    assert lines[0] == r"| method | error\[a\|b\] | reason |"
    assert lines[2] == "| PCA | 0.1235 |  |"
    assert lines[3] == r"| M\|1 | nan | &lt;b&gt;x y&lt;/b&gt; |"
    assert all(line.count("|") - line.count(r"\|") == 4 for line in lines[2:])


def test_plot_text_has_no_mathtext():
    from matplotlib.figure import Figure

    assert plot_text("$x$ costs $3") == r"\$x\$ costs \$3"
    assert plot_text("a\nb\u202e") == r"a b\u202e"
    assert plot_text("L" * 10_000) == "L" * 59 + "…"
    figure = Figure()
    figure.subplots().set_title(plot_text(r"$\frac{x}{$"))
    figure.savefig(os.devnull, format="png")  # a malformed formula would raise here


def _hostile_csv(tmp_path):
    rng = np.random.default_rng(0)
    n = 160
    # More features than groups: mean matching removes one direction per extra group.
    frame = pd.DataFrame(rng.normal(size=(n, 8)), columns=[f"f{j}" for j in range(8)])
    frame["group"] = [HOSTILE_LABELS[i % len(HOSTILE_LABELS)] for i in range(n)]
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path


def test_compare_escapes_hostile_group_labels_in_every_output(tmp_path):
    path = _hostile_csv(tmp_path)
    out = tmp_path / "out"
    args = ["compare", "--data", str(path), "--sensitive", "group"]
    args += ["--methods", "MeanMatchingFairPCA", "-d", "1", "--output", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    by_d = (out / "group_errors_by_d.csv").read_text()
    assert "'=1+1" in by_d and "\n=1+1" not in by_d and ",=1+1" not in by_d
    comparison = (out / "comparison.csv").read_text()
    assert "reconstruction_error[=1+1]" in comparison  # not at the start of a cell
    for line in comparison.splitlines()[1:]:
        assert not line.split(",")[0].startswith(_output.CSV_FORMULA_PREFIXES)
    markdown = (out / "comparison.md").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown
    assert r"a\|b" in markdown
    table = [line for line in markdown.splitlines() if line.startswith("| ")]
    widths = {line.count("|") - line.count(r"\|") for line in table}
    assert len(widths) == 1  # no label splits or ends a row
    html = (out / "report.html").read_text()
    for text in (markdown, html):
        assert "<script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "fitted" in html  # the status column is in the HTML table


def test_html_report_escapes_status_and_reason():
    from fairpca._html import html_report

    table = pd.DataFrame(
        {"status": ["failed"], "reason": ["<img src=x onerror=alert(1)>"]}, index=["<M>"]
    )
    document = html_report("t", {"data": "<d>"}, [("s", [table, "<p>note"])])
    assert "<img src=x" not in document and "<M>" not in document and "<d>" not in document
    assert "&lt;img src=x onerror=alert(1)&gt;" in document


# Staging and the lock: the writing is replaced by a cheap fake, the mechanism is real.


def test_failure_while_writing_leaves_nothing(tmp_path):
    from fairpca._cli_output import check_output, staged

    out = tmp_path / "out"
    with CliRunner().isolation(), pytest.raises(Exception, match="injected"):  # noqa: PT012
        check_output(out, force=False)
        with staged(out) as staging:
            (staging / "a.csv").write_text("1")
            raise RuntimeError("injected")
    _release_all()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _release_all():
    from fairpca import _cli_output as cli_module

    for lock, _ in list(cli_module._RESERVED.values()):
        _output.release_lock(lock)
    cli_module._RESERVED.clear()


def _run_staged(out, force, files):
    """What a command does: check and lock --output, then write its files staged."""
    import click

    from fairpca._cli_output import check_output, staged

    @click.command()
    def command():
        check_output(out, force)
        with staged(out) as staging:
            for name in files:
                (staging / name).write_text(name)

    return CliRunner().invoke(command, [])


def test_force_replaces_the_whole_folder(tmp_path):
    out = tmp_path / "out"
    assert _run_staged(out, False, ["a.csv", "old_extra.png"]).exit_code == 0
    refused = _run_staged(out, False, ["a.csv"])
    assert refused.exit_code == 2 and "pass --force" in refused.output
    result = _run_staged(out, True, ["a.csv", "b.csv"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["a.csv", "b.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no lock, nothing aside


def test_publish_puts_the_old_folder_back_when_the_second_rename_fails(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.csv").write_text("old")
    staging = _output.stage(out)
    real_rename = os.rename

    def rename(src, dst):
        if str(src) == str(staging):
            raise OSError("injected between the renames")
        return real_rename(src, dst)

    monkeypatch.setattr(_output.os, "rename", rename)
    monkeypatch.setattr(_output, "_exchange", lambda first, second: False)
    with pytest.raises(OSError, match="injected"):
        _output.publish(staging, out, force=True)
    assert sorted(p.name for p in out.iterdir()) == ["old.csv"]


def test_force_swaps_the_folders_in_one_step_where_it_can(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.csv").write_text("old")
    staging = _output.stage(out)
    (staging / "new.csv").write_text("new")
    swapped = []
    real_exchange = _output._exchange

    def exchange(first, second):
        swapped.append(real_exchange(first, second))
        return swapped[-1]

    monkeypatch.setattr(_output, "_exchange", exchange)
    _output.publish(staging, out, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert sorted(p.name for p in out.iterdir()) == ["new.csv"]
    if sys.platform.startswith("linux"):
        assert swapped == [True]


@pytest.fixture
def other_process():
    """A live process that is not this one: the holder of a lock."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process.pid
    process.kill()
    process.wait()


def test_a_held_lock_makes_a_second_run_fail_clearly(tmp_path, other_process):
    import socket

    out = tmp_path / "out"
    lock = lock_path(out)
    lock.write_text(f"{other_process} {socket.gethostname()}\n")
    result = _run_staged(out, False, ["a.csv"])
    assert result.exit_code == 1
    assert f"pid {other_process}" in result.output and str(lock) in result.output
    assert not out.exists() and lock.read_text().startswith(str(other_process))


def test_stale_lock_and_leftovers_of_a_dead_run_are_cleaned(tmp_path):
    import socket

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "out"
    lock_path(out).write_text(f"{dead.pid} {socket.gethostname()}\n")
    staging = tmp_path / f".out.staging-{dead.pid}-abc"
    staging.mkdir()
    (staging / "half.csv").write_text("x")
    result = _run_staged(out, False, ["a.csv"])
    assert result.exit_code == 0, result.output
    assert "left by a killed run" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_old_folder_set_aside_by_a_killed_force_run_is_put_back(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "out"
    aside = tmp_path / f".out.old-{dead.pid}-abc"
    aside.mkdir()
    (aside / "earlier.csv").write_text("x")
    lock, notes = _output.reserve(out, force=True)
    _output.release_lock(lock)
    assert "restored" in notes[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert sorted(p.name for p in out.iterdir()) == ["earlier.csv"]


def test_text_files_with_undecodable_names_are_written(tmp_path):
    name = os.fsdecode(b"data-\xff.csv")  # a lone surrogate, as Python reads such a name
    _output.write_text(tmp_path / "report.md", f"Data: {name}")
    assert (tmp_path / "report.md").read_text() == "Data: data-\\udcff.csv"


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_compare_on_a_locked_output_fails_before_fitting(tmp_path, other_process):
    import socket

    path = _hostile_csv(tmp_path)
    out = tmp_path / "out"
    lock_path(out).write_text(f"{other_process} {socket.gethostname()}\n")
    args = ["compare", "--data", str(path), "--sensitive", "group", "--output", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and f"pid {other_process}" in result.output
    assert "MeanMatchingFairPCA" not in result.output  # refused before any fit
    assert not out.exists()


def test_tradeoff_escapes_hostile_group_labels(tmp_path):
    path = _hostile_csv(tmp_path)
    out = tmp_path / "out"
    args = ["tradeoff", "--data", str(path), "--sensitive", "group", "-d", "1"]
    args += ["--methods", "MeanMatchingFairPCA", "--n-bootstrap", "5"]
    args += ["--metric", "reconstruction_error_gap", "--output", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    for cell in (out / "tradeoff.csv").read_text().replace("\n", ",").split(","):
        if not _is_number(cell):
            assert not cell.startswith(_output.CSV_FORMULA_PREFIXES)
    assert "<script>" not in (out / "report.html").read_text()


# Every check of --output that can be made before the computation is made before it.


def _compare_args(tmp_path, out, *extra):
    path = _hostile_csv(tmp_path)
    return ["compare", "--data", str(path), "--sensitive", "group", "--output", str(out), *extra]


def _refused_before_fitting(tmp_path, out, *extra):
    result = CliRunner().invoke(cli, _compare_args(tmp_path, out, *extra))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "fitting" not in result.output
    return result.output


def test_a_dangling_output_link_is_refused(tmp_path):
    out = tmp_path / "out"
    out.symlink_to(tmp_path / "missing")
    assert "symbolic link" in _refused_before_fitting(tmp_path, out)


def test_a_mount_point_is_refused(tmp_path):
    assert "mount point" in _refused_before_fitting(tmp_path, "/", "--force")


def test_a_name_too_long_for_the_staging_folder_is_refused(tmp_path):
    assert "too long" in _refused_before_fitting(tmp_path, tmp_path / ("x" * 240))


def test_force_may_not_remove_the_current_folder_or_the_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "which holds" in _refused_before_fitting(tmp_path, tmp_path, "--force")
    data = tmp_path / "inner" / "data.csv"
    data.parent.mkdir()
    _hostile_csv(tmp_path).rename(data)
    monkeypatch.chdir("/")
    args = ["compare", "--data", str(data), "--sensitive", "group"]
    result = CliRunner().invoke(cli, [*args, "--output", str(data.parent), "--force"])
    assert result.exit_code == 2 and "which holds" in result.output


def test_an_unwritable_parent_is_a_usage_error(tmp_path, monkeypatch):
    import errno

    real_open = os.open

    def read_only(path, *args, **kwargs):
        if str(path).endswith(".fairpca-lock"):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(_output.os, "open", read_only)
    assert "Read-only file system" in _refused_before_fitting(tmp_path, tmp_path / "out")


def test_an_output_with_an_undecodable_name_is_written(tmp_path):
    out = tmp_path / os.fsdecode(b"out-\xff")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(80, 3)), columns=["a", "b", "c"])
    frame["group"] = ["x", "y"] * 40
    path = tmp_path / "two_groups.csv"
    frame.to_csv(path, index=False)
    args = ["compare", "--data", str(path), "--sensitive", "group", "-d", "1"]
    args += ["--methods", "MeanMatchingFairPCA", "--output", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert (out / "comparison.md").exists() and "wrote" in result.output


# The same reports as library calls (fairpca._reports): staged, locked, escaped.


def _hostile_comparison(tmp_path):
    from fairpca.compare import compare_split
    from fairpca.datasets import make_split, read_table

    table = read_table(_hostile_csv(tmp_path), "group")
    split = make_split(table.features, table.groups)
    return compare_split(split, n_components=1, methods=["MeanMatchingFairPCA"])


def test_comparison_write_report_from_python_is_escaped_and_appears_whole(tmp_path):
    comparison = _hostile_comparison(tmp_path)
    out = tmp_path / "report"
    written = comparison.write_report(out)
    assert {"comparison.csv", "comparison.md", "report.html", "group_errors_by_d.csv"} <= set(
        written
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(written)
    markdown = (out / "comparison.md").read_text()
    assert "<script>" not in markdown and "&lt;script&gt;" in markdown
    assert comparison.split.description.split(";")[0] in markdown  # the default source
    # Not empty: refused without force (nothing written); with force replaced whole.
    (out / "mine.txt").write_text("x")
    with pytest.raises(ValueError, match="pass --force"):
        comparison.write_report(out)
    assert comparison.write_report(out, force=True) == written
    assert "mine.txt" not in {p.name for p in out.iterdir()}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_tradeoff_write_report_from_python_is_escaped_and_appears_whole(tmp_path):
    from sklearn.decomposition import PCA

    from fairpca import MeanMatchingFairPCA, tradeoff
    from fairpca.datasets import make_split, read_table

    table = read_table(_hostile_csv(tmp_path), "group")
    split = make_split(table.features, table.groups)
    estimators = {"PCA": PCA(1), "MeanMatchingFairPCA": MeanMatchingFairPCA(n_components=1)}
    curve = tradeoff.tradeoff_curve_split(
        split,
        estimators=estimators,
        param_grids={"MeanMatchingFairPCA": {"mean_penalty": [0.0, np.inf]}},
        metrics=["reconstruction_error_gap"],
        n_components=1,
        n_bootstrap=3,
    )
    out = tmp_path / "curve"
    written = tradeoff.write_report(curve, out, source="<script>x</script>")
    assert sorted(p.name for p in out.iterdir()) == sorted(written)
    assert {"tradeoff.csv", "group_losses.csv", "tradeoff.png", "report.html"} <= set(written)
    html = (out / "report.html").read_text()
    assert "<script>x" not in html and "&lt;script&gt;x" in html
    with pytest.raises(ValueError, match="pass --force"):
        tradeoff.write_report(curve, out)
    assert tradeoff.write_report(curve, out, force=True) == written
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_output_folder_leaves_nothing_when_the_block_fails_and_releases_its_lock(tmp_path):
    from fairpca._reports import output_folder

    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="injected"), output_folder(out) as staging:  # noqa: PT012
        (staging / "a.csv").write_text("1")
        raise RuntimeError("injected")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with output_folder(out) as staging:
        (staging / "a.csv").write_text("1")
    assert [p.name for p in out.iterdir()] == ["a.csv"]
    assert not lock_path(out.resolve()).exists()


def test_comparison_notes_and_text_are_library_calls(tmp_path):
    from fairpca._reports import columns_text, comparison_notes, comparison_text, unfinished

    comparison = _hostile_comparison(tmp_path)
    assert comparison_text(comparison).splitlines()[-1].startswith("converged: PCA yes")
    assert "explained_variance_ratio" in columns_text(comparison)
    assert unfinished(comparison.outcomes) is None
    assert any(
        note.startswith("Noisy: groups with fewer than") for note in comparison_notes(comparison)
    )

"""``benchmarks/run.py --targets``: the table keeps every target's rows (issue 46).

The targets run in this process at tiny sizes (the child processes replaced
by direct calls, the trade-off's minutes by a stub), so that a change to the
estimators or to the script that breaks a row shows here, not at the next
full run. No timing is checked: only that every row is measured and printed.
"""

import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
#: Rows per target: 6 methods x 2 p; Convex at 2 p and on COMPAS at 2 d, each with its
#: floor; the pass and 6 methods x 2 p; one; two kinds of string labels; three data sets.
ROWS = {"memory": 12, "convex": 6, "dask": 14, "small": 1, "labels": 2, "tradeoff": 3}


@pytest.fixture
def run(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("benchmark_run_targets", BENCHMARKS / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tiny = {"memory": 3000, "dask": 3000, "small": 2000}
    monkeypatch.setattr(module, "TARGET_N", tiny)
    monkeypatch.setattr(module, "QUICK_N", tiny)
    monkeypatch.setattr(module, "TARGET_FEATURES", (4, 6))

    def in_process(kind, n, p, d, seed, timeout, extra_env=None):
        try:
            return json.loads(json.dumps(module._child(kind, n, p, d, seed)))
        except FileNotFoundError as exc:
            # Missing data, reported as the child process reports it (its last stderr
            # line); any other failure is a broken row and fails the test.
            return {"error": f"{type(exc).__name__}: {exc}"}

    monkeypatch.setattr(module, "_run_child", in_process)
    monkeypatch.setattr(module, "_tradeoff_seconds", lambda case, timeout: 1.0)
    return module


def _table_rows(text):
    return [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]


def _cells(row):
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def test_every_target_prints_all_its_rows(run, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["run.py", "--targets", "--repeats", "2", "-d", "2"])
    run.main()
    out = capsys.readouterr().out
    assert out.startswith("## Targets (issue 46)")
    assert "load average at start" in out and "Load average at end" in out
    rows = _table_rows(out)
    assert len(rows) == sum(ROWS.values())
    # The Dask child's peak resident memory, once per p, on the moment pass's row.
    assert sum("peak RSS of all" in row for row in rows) == 2
    for name, count in ROWS.items():
        mine = [row for row in rows if f"--targets {name} --repeats 2 -d 2`" in row]
        assert len(mine) == count, name
        assert all(run.TARGETS[name] in row for row in mine)
    for row in rows:
        cells = _cells(row)
        assert len(cells) == 8, row
        if cells[6] == "not run":
            # Only Lee et al.'s COMPAS or Adult may be missing here, not a fit that broke.
            assert "FileNotFoundError" in cells[2], row
            continue
        if cells[1].startswith("floor:"):
            assert cells[6] in ("floor: goal reachable", "floor: goal out of reach"), row
        else:
            assert cells[6] in ("PASS", "MISS"), row
        measured = float(cells[2].rstrip("×s "))
        low, high = (float(x) for x in cells[3].split(" (")[0].split("–"))
        assert 0 < low <= measured <= high, row
        assert cells[3].endswith("(2)"), row  # two rounds


def test_named_targets_only(run, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["run.py", "--targets", "small", "tradeoff", "--quick"])
    run.main()
    rows = _table_rows(capsys.readouterr().out)
    assert len(rows) == ROWS["small"] + ROWS["tradeoff"]
    assert all("--quick`" in row for row in rows)
    # The stub's 1 s is under every trade-off limit.
    assert [_cells(row)[6] for row in rows[1:]] == ["PASS"] * 3


def test_tradeoff_run_is_stopped_at_its_cpu_limit(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("benchmark_run_limit", BENCHMARKS / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # Importing the package and fitting the built-in curve take well over one CPU second.
    stopped = module._tradeoff_seconds("builtin", 1)
    assert stopped == {"error": "over the 1 s CPU limit", "over": True}
    row = {"target": "tradeoff", "case": "builtin", "goal": 20.0, "seconds": True, **stopped}
    line = module._target_line(row, "c")
    assert _cells(line)[5:7] == ["< 20 s", "MISS"]


def test_figures_are_stamped_with_the_imported_code_commit(monkeypatch, tmp_path):
    """The stamp follows the package's directory (a PYTHONPATH checkout), not the cwd."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    timing = importlib.import_module("_timing")
    inside = tmp_path / "fairpca"
    inside.mkdir()
    assert timing.checkout_commit(inside) == "unknown"  # not in a git checkout
    if shutil.which("git") is None:
        pytest.skip("git is not installed: only the 'unknown' stamp can be checked")

    def git(*args):
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    git("init", "-q")
    (inside / "__init__.py").write_text("")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    head = git("rev-parse", "--short", "HEAD")
    (tmp_path / "notes.md").write_text("edits outside the package")
    assert timing.checkout_commit(inside) == head
    (inside / "__init__.py").write_text("changed = True\n")
    assert timing.checkout_commit(inside) == head + "+changes"
    # Run from elsewhere with that checkout first on PYTHONPATH: stamped with its commit.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(BENCHMARKS)])}
    stamped = subprocess.run(
        [sys.executable, "-c", "import _timing; print(_timing.code_commit())"],
        capture_output=True,
        text=True,
        check=True,
        cwd=BENCHMARKS,
        env=env,
    ).stdout.strip()
    assert stamped == head + "+changes"


def test_interleaved_medians_take_each_entry_of_a_tuple_timer(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    timing = importlib.import_module("_timing")
    order = []
    readings = iter([(1.0, 9.0), (5.0, 1.0), (3.0, 4.0), (2.0, 2.0), (4.0, 3.0), (6.0, 0.0)])

    def timer(fit):
        fit()
        return next(readings)

    fits = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    medians = timing.interleaved_medians(fits, 3, timer=timer)
    assert order == ["a", "b"] * 3  # interleaved rounds
    assert medians == {"a": (3.0, 4.0), "b": (5.0, 1.0)}  # per entry, not per pair
    plain = timing.interleaved_medians(fits, 3, timer=lambda fit: fit() or len(order))
    assert plain == {"a": 9, "b": 10}

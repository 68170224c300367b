"""Killed and interrupted runs: --output is absent, complete or exactly as before.

Each run is the command line in a subprocess, through a small runner that
stops the process at one phase of the output's life (SIGKILL: nothing runs
after; SIGINT: Ctrl-C, the command's clean-up runs). The phases:

- ``compute``: the lock is held, nothing is staged yet (the fits run);
- ``writing``: the staging folder holds some files;
- ``aside``: with ``--force`` where two folders cannot be swapped atomically,
  the old folder has been renamed aside, the new one not yet renamed in;
- ``published``: the new folder is in place (swapped with the old one, or
  renamed in), the old one not yet removed.

The data are tiny and one fair method runs; ``reproduce``'s computation is
replaced by a fake that returns at once (its output path is the one under
test).
"""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

RUNNER = textwrap.dedent(
    """
    import os, signal, sys

    phase, how = os.environ["STOP_PHASE"], os.environ["STOP_HOW"]
    # Python keeps SIGINT ignored when it starts so (a background job of a script):
    # give it the handler an interactive terminal gives it.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def stop():
        if how == "wait":
            open(os.environ["STOP_MARKER"], "w").close()
            import time
            time.sleep(60)
        os.kill(os.getpid(), getattr(signal, how))
        if how == "SIGKILL":
            time.sleep(60)

    from fairpca import _output, _cli_output

    real_stage, real_rename, real_write = _output.stage, os.rename, _output.write_text

    def stage(output):
        if phase == "compute":
            stop()
        return real_stage(output)

    def write_text(path, text):
        real_write(path, text)
        if phase == "writing":
            stop()

    def rename(src, dst):
        real_rename(src, dst)
        name = os.path.basename(str(dst))
        if phase == "aside" and ".old-" in name or phase == "published" and ".staging-" in str(src):
            stop()

    real_exchange = _output._exchange

    def exchange(first, second):
        if phase == "aside":
            return False  # the two renames' path, where a folder is set aside
        done = real_exchange(first, second)
        if done and phase == "published":
            stop()
        return done

    _output.stage, _output.write_text, os.rename = stage, write_text, rename
    _output._exchange = exchange

    if os.environ.get("FAKE_REPRODUCE"):
        from fairpca import experiments as rep

        rep.plan = lambda target, **kwargs: (["unit"], {})
        rep.execute = lambda jobs, unavailable, n_jobs: iter([("unit", [], [])])
        rep.summarise = lambda target, records, unavailable, **kwargs: "result"
        rep.to_markdown = lambda result: "# fake report"

        def write_report(result, folder, force):
            _output.write_text(folder / "report.md", "# fake report")
            (folder / "results.csv").write_text("a\\n1\\n")
            return ["report.md", "results.csv"]

        rep.write_report = write_report

    from fairpca.cli import main

    sys.exit(main(sys.argv[1:]))
    """
)

PHASES = ["compute", "writing", "aside", "published"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("interrupt")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(120, 4)), columns=["a", "b", "c", "d"])
    frame["group"] = ["x", "y"] * 60
    frame.to_csv(folder / "data.csv", index=False)
    (folder / "runner.py").write_text(RUNNER)
    return folder


def _args(command, setup, out, force):
    data = ["--data", str(setup / "data.csv"), "--sensitive", "group", "-d", "1"]
    one = ["--methods", "MeanMatchingFairPCA"]
    args = {
        "compare": ["compare", *data, *one],
        "tradeoff": ["tradeoff", *data, *one, "--n-bootstrap", "2"],
        "reproduce": ["reproduce", "kamani-figures", "--quick"],
    }[command]
    return [*args, "--output", str(out)] + (["--force"] if force else [])


def _run(setup, args, phase="none", how="SIGKILL", wait=True, marker=None):
    env = {**os.environ, "STOP_PHASE": phase, "STOP_HOW": how, "FAKE_REPRODUCE": "1"}
    env["STOP_MARKER"] = str(marker or setup / "marker")
    env["MPLBACKEND"] = "Agg"
    process = subprocess.Popen(
        [sys.executable, str(setup / "runner.py"), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )
    if not wait:
        return process
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def _snapshot(folder):
    if not folder.exists():
        return None
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def _hidden(parent):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def _check_stopped(setup, command, phase, how, tmp_path):
    out = tmp_path / "out"
    force = phase in ("aside", "published")
    if force:
        out.mkdir()
        (out / "earlier.csv").write_text("from an earlier run")
    before = _snapshot(out)
    code, _, err = _run(setup, _args(command, setup, out, force), phase, how)
    after = _snapshot(out)
    if how == "SIGKILL":
        assert code == -signal.SIGKILL
    else:
        assert code == 130, err
        assert "Traceback" not in err and err.strip().endswith("fairpca: interrupted.")
    # Absent, exactly as before, or complete (the new run's files, nothing of the old).
    # Absent with an earlier folder only where a system cannot swap two folders
    # atomically and the run is killed between its two renames: the earlier folder
    # is then set aside, and the next run puts it back.
    complete = after is not None and "earlier.csv" not in after and len(after) >= 2
    killed_aside = phase == "aside" and how == "SIGKILL" and after is None
    assert after == before or complete or killed_aside, (phase, sorted(after or ()))
    if killed_aside:
        assert any(".old-" in name for name in _hidden(tmp_path))
    if how == "SIGINT":
        assert _hidden(tmp_path) == [] or phase == "published", _hidden(tmp_path)
    # The next run recognises what was left and finishes.
    code, _, err = _run(setup, _args(command, setup, out, force=True))
    assert code == 0, err
    assert _hidden(tmp_path) == []
    assert "earlier.csv" not in os.listdir(out)


# Each case runs the command line twice in a subprocess (about 2 s of imports each):
# all slow but one, which keeps Ctrl-C's status, message and clean-up in the fast loop.
@pytest.mark.parametrize(
    ("phase", "how"),
    [
        pytest.param(p, h, marks=[] if (p, h) == ("aside", "SIGINT") else pytest.mark.slow)
        for p in PHASES
        for h in ("SIGKILL", "SIGINT")
    ],
)
def test_reproduce_stopped_at_each_phase(setup, tmp_path, phase, how):
    _check_stopped(setup, "reproduce", phase, how, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
@pytest.mark.parametrize("command", ["compare", "tradeoff"])
def test_compare_and_tradeoff_stopped_at_each_phase(setup, tmp_path, command, phase, how):
    _check_stopped(setup, command, phase, how, tmp_path)


def test_compare_killed_while_writing_leaves_the_old_folder(setup, tmp_path):
    """The cheap fast-loop case of the slow grid above: compare, SIGKILL, --force."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "earlier.csv").write_text("x")
    code, _, _ = _run(setup, _args("compare", setup, out, True), "writing", "SIGKILL")
    assert code == -signal.SIGKILL
    assert _snapshot(out) == {"earlier.csv": b"x"}
    assert any(".staging-" in name for name in _hidden(tmp_path))  # left for the next run


@pytest.mark.slow
def test_two_runs_on_one_output_one_fails_clearly(setup, tmp_path):
    out = tmp_path / "out"
    marker = tmp_path / "first-is-waiting"
    first = _run(setup, _args("reproduce", setup, out, False), "compute", "wait", False, marker)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        code, _, err = _run(setup, _args("reproduce", setup, out, False))
        assert code == 1
        assert f"another fairpca run (pid {first.pid})" in err and "lock" in err
        assert "Traceback" not in err
    finally:
        first.kill()
        first.wait()
    assert not out.exists()
    code, _, err = _run(setup, _args("reproduce", setup, out, False))
    assert code == 0, err  # the dead run's lock is recognised as stale
    assert _hidden(tmp_path) == []


def test_lock_of_another_host_is_named_not_broken(tmp_path):
    from fairpca._output import OutputLocked, acquire_lock, lock_path

    out = tmp_path / "out"
    lock_path(out).write_text(f"1 not-{socket.gethostname()}\n")
    with pytest.raises(OutputLocked, match="pid 1"):
        acquire_lock(out)

"""The README's commands work the way a new user runs them.

A clean working directory, an empty home directory and no data home: the main
job shows every method, and the test suite's real-data tests skip with a
reason that says how to get the data (or fail when ``FAIRPCA_REQUIRE_DATA=1``,
as in CI).
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import fairpca
from conftest import missing_data

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _bash_lines():
    return [
        line.strip()
        for block in re.findall(r"```bash\n(.*?)```", README, flags=re.DOTALL)
        for line in block.splitlines()
    ]


def _new_user_env(home):
    """The environment of a user with no data anywhere: an empty HOME, no data variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAIRPCA_", "SCIKIT_"))}
    env["HOME"] = str(home)
    env["FAIRPCA_DATA"] = str(home / "no-data-here")  # never the checkout's ../shared
    return env


@pytest.mark.slow  # the README's command end to end: every method (progress: test_compare.py)
def test_readme_main_command_shows_every_method(tmp_path):
    (line,) = [line for line in _bash_lines() if "fairpca compare" in line and "&&" in line]
    install, command = (part.strip() for part in line.split("&&", 1))
    assert install.startswith("python -m pip install") and "[cli]" in install
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "fairpca"]
    result = subprocess.run(
        [sys.executable, *argv[1:]],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
        env=_new_user_env(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert "not available" not in result.stderr
    header = next(line for line in result.stdout.splitlines() if line.startswith("method"))
    # compare fits every estimator whose transform takes the rows alone.
    names = [cls.__name__ for cls in fairpca.all_estimators(transform_needs_groups=False)]
    for name in ["PCA", *names]:
        assert name in header, (name, result.stdout)
        # A progress line per method, with its time.
        assert re.search(rf"^\[\d+/\d+\] {name} .*\d s", result.stderr, flags=re.M), result.stderr


def test_readme_test_command_is_what_ci_runs():
    (line,) = [line for line in _bash_lines() if "pytest" in line and "&&" in line]
    test_command = line.split("&&", 1)[1].strip()
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in ci
    assert "FAIRPCA_REQUIRE_DATA=1" in ci and "FAIRPCA_DATA=" in ci
    assert 'pytest -m "not slow"' in README  # the fast development loop is documented


def _run_pytest(tmp_path, extra_env, *selection):
    env = _new_user_env(tmp_path) | extra_env
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q", *selection],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
    )


@pytest.mark.slow  # two pytest processes (7 s of CPU)
def test_real_data_tests_skip_without_data_and_fail_when_required(tmp_path):
    selection = (
        str(ROOT / "tests" / "datasets" / "test_real.py"),
        "-k",
        "german_credit_shapes or data_home_order",
    )
    result = _run_pytest(tmp_path, {}, *selection)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 skipped" in result.stdout
    assert "real data not found" in result.stdout
    for hint in ("FAIRPCA_DATA", "download=True", "scikit_learn_data"):
        assert hint in result.stdout

    result = _run_pytest(tmp_path, {"FAIRPCA_REQUIRE_DATA": "1"}, *selection)
    assert result.returncode == 1
    assert "FAIRPCA_REQUIRE_DATA=1 but real data not found" in result.stdout


@pytest.mark.skipif(
    os.environ.get("FAIRPCA_REQUIRE_DATA", "") in ("", "0"), reason="CI only (FAIRPCA_REQUIRE_DATA)"
)
def test_ci_has_every_real_data_file():
    assert missing_data() == []

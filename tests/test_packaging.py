"""The sdist and wheel as they would be released: built, checked by twine, complete."""

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    build = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return out


@pytest.mark.slow  # builds the sdist and the wheel in isolated environments
def test_twine_check_passes(dist):
    files = sorted(str(f) for f in dist.iterdir())
    assert any(f.endswith(".whl") for f in files) and any(f.endswith(".tar.gz") for f in files)
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *files],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.slow
def test_wheel_holds_the_package_data_and_metadata(dist):
    import fairpca

    (wheel,) = dist.glob("*.whl")
    assert wheel.name.startswith(f"fairpca-{fairpca.__version__}-")
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("fairpca/py.typed", "fairpca/experiments/reference.csv"):
        assert needed in names
    assert not any(n.startswith("tests/") for n in names)
    (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    for field in ("Project-URL: Documentation", "Project-URL: Source", "License-Expression"):
        assert field in text
    # The command line's extra does not pull cvxpy in (its methods run without it).
    cli = [line for line in text.splitlines() if 'extra == "cli"' in line]
    assert cli and not any("cvxpy" in line for line in cli)


@pytest.mark.slow
def test_sdist_holds_the_licence_and_the_tests(dist):
    (sdist,) = dist.glob("*.tar.gz")
    names = tarfile.open(sdist).getnames()
    assert any(n.endswith("/LICENSE") for n in names)
    assert any(n.endswith("/src/fairpca/__init__.py") for n in names)

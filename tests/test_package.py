import subprocess
import sys

import pytest

import fairpca

OPTIONAL = ("cvxpy", "dask", "distributed", "matplotlib", "click", "fairlearn", "pandas")


def test_core_imports_without_any_optional_dependency():
    # Block every optional package: the core modules must still import.
    code = (
        "import sys\n"
        f"for m in {OPTIONAL!r}:\n"
        "    sys.modules[m] = None\n"
        "import fairpca, fairpca.metrics, fairpca.moments, fairpca.riemannian, fairpca.datasets\n"
        "print(sorted(fairpca.__all__))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_import_loads_no_optional_dependency():
    # scikit-learn itself imports pandas when it is installed, so pandas is not checked here.
    code = (
        "import sys, fairpca, fairpca.metrics, fairpca.datasets\n"
        f"print([m for m in {OPTIONAL[:-1]!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names_exist():
    for name in fairpca.__all__:
        assert hasattr(fairpca, name), name


@pytest.mark.slow  # end-to-end: a Dask fit of 10^6 rows, the real data sets
def test_readme_python_examples_run():
    import re
    from pathlib import Path

    import pytest

    from conftest import REQUIRE_DATA, missing_data, missing_data_message

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert blocks
    needs_data = [b for b in blocks if re.search(r"\bload_\w+\(|fairpca\.experiments", b)]
    assert needs_data and len(needs_data) < len(blocks)
    for block in blocks:
        if block in needs_data and missing_data():
            continue
        exec(compile(block, "README.md", "exec"), {})
    if missing_data():
        message = f"{len(needs_data)} README example(s) not run: " + missing_data_message(
            missing_data()
        )
        if REQUIRE_DATA:
            pytest.fail(message)
        pytest.skip(message)


def test_license_citation_changelog_and_typing_marker_ship():
    import importlib.resources
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert "BSD 3-Clause License" in (root / "LICENSE").read_text()
    assert "cff-version" in (root / "CITATION.cff").read_text()
    assert (root / "CHANGELOG.md").read_text().startswith("# Changelog")
    assert importlib.resources.files("fairpca").joinpath("py.typed").is_file()
    pyproject = (root / "pyproject.toml").read_text()
    assert 'license-files = ["LICENSE"]' in pyproject and '"py.typed"' in pyproject


def test_command_line_methods_fit_without_cvxpy():
    # The `cli` extra leaves cvxpy out: every method `fairpca compare` fits by
    # default must run on fairpca's own solvers, including ConvexFairPCA.
    code = (
        "import sys, warnings\n"
        "sys.modules['cvxpy'] = None\n"
        "import numpy as np\n"
        "from fairpca.compare import make_methods, _fit\n"
        "rng = np.random.default_rng(0)\n"
        "X = rng.normal(size=(120, 5)); X[:60] += 1.0\n"
        "s = np.repeat(['a', 'b'], 60); y = (X[:, 0] > 0).astype(int)\n"
        "warnings.simplefilter('ignore')\n"
        "bad = {}\n"
        "for name, est in make_methods(2, 0).items():\n"
        "    try:\n"
        "        _fit(est, X, s, y)\n"
        "    except Exception as exc:\n"
        "        bad[name] = repr(exc)\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "{}"

"""Test configuration: where the real data sets are, and what to do when they are absent.

Tests that read the real data sets carry ``@pytest.mark.requires_data`` (with
the data-home folders they read, or none for "every pinned file"). The data
home is ``$FAIRPCA_DATA`` if set, else ``../shared/data`` beside the checkout
if it exists, else the loaders' default (``~/scikit_learn_data/fairpca``).
When a needed file is absent the test is skipped with a reason saying how to
get the data -- unless ``FAIRPCA_REQUIRE_DATA=1`` (as in CI), where it fails.

``SCIPY_ARRAY_API=1`` is set first, before anything imports scipy: scikit-learn's
array-API dispatch (``tests/test_array_api.py`` and the array-API common checks)
needs it, and scipy reads it once, at import.
"""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")

from pathlib import Path

import pytest

from fairpca.datasets._fetch import FILES, get_data_home

#: The shared copies of the real data sets and the papers' text, beside the checkout.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SHARED_PAPERS = SHARED_DATA.parent / "papers"

REQUIRE_DATA = os.environ.get("FAIRPCA_REQUIRE_DATA", "") not in ("", "0")


def data_home():
    """The folder the real-data tests read."""
    if os.environ.get("FAIRPCA_DATA"):
        return Path(os.environ["FAIRPCA_DATA"])
    if SHARED_DATA.is_dir():
        return SHARED_DATA
    return get_data_home()


def missing_data(folders=()):
    """Pinned files under ``folders`` of the data home (all when empty) that are absent."""
    home = data_home()
    wanted = [path for path in FILES if not folders or path.split("/", 1)[0] in folders]
    return [path for path in wanted if not (home / path).is_file()]


def missing_data_message(missing):
    """Why a real-data test cannot run, and how to get the data."""
    shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    return (
        f"real data not found under {data_home()} ({shown}). Point FAIRPCA_DATA at a folder "
        "holding the data sets (layout: fairpca.datasets), put them in "
        "~/scikit_learn_data/fairpca, or fetch them with the loaders' download=True "
        "(e.g. fairpca.datasets.load_adult(download=True)); set FAIRPCA_REQUIRE_DATA=1 to "
        "make missing data an error."
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "requires_data(*folders): reads the real data sets (these data-home folders; "
        "none: every pinned file); skipped when absent unless FAIRPCA_REQUIRE_DATA=1",
    )
    config.addinivalue_line(
        "markers",
        "requires_papers: reads the papers' text in ../shared/papers beside the checkout; "
        "skipped when absent unless FAIRPCA_REQUIRE_DATA=1",
    )
    config.addinivalue_line(
        "markers", "slow: a long test (a reproduction); deselect with -m 'not slow'"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    for marker in item.iter_markers("requires_data"):
        missing = missing_data(marker.args)
        if missing:
            message = missing_data_message(missing)
            if REQUIRE_DATA:
                pytest.fail("FAIRPCA_REQUIRE_DATA=1 but " + message, pytrace=False)
            pytest.skip(message)
    if item.get_closest_marker("requires_papers") and not any(SHARED_PAPERS.glob("*.txt")):
        message = (
            f"the papers' text is not at {SHARED_PAPERS} (it sits beside the project's "
            "checkout in the team's workspace; the reference numbers are checked there)"
        )
        if REQUIRE_DATA:
            pytest.fail("FAIRPCA_REQUIRE_DATA=1 but " + message, pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="session", autouse=True)
def fairpca_data_home():
    """Point FAIRPCA_DATA at the data home the tests read unless the caller set it."""
    previous = os.environ.get("FAIRPCA_DATA")
    if not previous:
        os.environ["FAIRPCA_DATA"] = str(data_home())
    yield Path(os.environ["FAIRPCA_DATA"])
    if previous is None:
        os.environ.pop("FAIRPCA_DATA", None)
    else:
        os.environ["FAIRPCA_DATA"] = previous

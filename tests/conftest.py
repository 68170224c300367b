import os
from pathlib import Path

import pytest

#: The shared copies of the real data sets, beside the checkout.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def fairpca_data_home():
    """Point FAIRPCA_DATA at the shared data copies unless the caller set it."""
    previous = os.environ.get("FAIRPCA_DATA")
    if previous is None:
        os.environ["FAIRPCA_DATA"] = str(SHARED_DATA)
    yield Path(os.environ["FAIRPCA_DATA"])
    if previous is None:
        os.environ.pop("FAIRPCA_DATA", None)
    else:
        os.environ["FAIRPCA_DATA"] = previous

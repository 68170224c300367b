"""Smoke run of ``benchmarks/gpu_embeddings.py`` on torch's CPU (issue 44).

The script is for a GPU; here it runs small, on the CPU, so that its code
paths (generation in chunks, ``partial_fit`` over device batches, ``fit``,
scikit-learn's PCA under array-API dispatch, the ratios) are exercised. No
timing is checked: only that it runs and that its ``partial_fit`` answers
equal its ``fit`` answers (the moments merged chunk by chunk are those of
all rows).
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_embeddings.py"


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch is not installed: pip install -e '.[test]' brings it",
)
def test_the_gpu_script_runs_small_on_the_cpu():
    env = {**os.environ, "SCIPY_ARRAY_API": "1"}
    command = [sys.executable, str(SCRIPT), "--device", "cpu", "--n", "20000"]
    command += ["--chunk", "5000", "--repeat", "1"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "whole X held: True" in out
    for name in ("LinearErasure", "MeanMatchingFairPCA"):
        for how in ("partial_fit", "fit"):
            assert re.search(rf"ratio {name}\.{how} / PCA: \d+\.\d\d", out), out
    # Four chunks merged against one pass over all rows: equal up to rounding.
    gaps = [float(g) for g in re.findall(r"partial_fit - fit\|[^:]*: (\S+)", out)]
    assert len(gaps) == 2 and max(gaps) < 1e-9, out

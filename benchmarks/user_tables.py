"""CPU time of ``fairpca compare`` and ``fairpca tradeoff`` on raw CSVs, per method.

Runs the commands of issue 38 as a user would (the published COMPAS file, UCI's
raw ``adult.data`` with the column names of ``adult.names``) in child
processes with one BLAS thread, and prints a Markdown table: each command's
exit status, wall and CPU time (the child's user + system time), encoded
width, and each method's fit CPU time summed over every fit of the command
(the refits at other d for the plot against d, or every setting of the
trade-off grid), read off the command's progress lines. Metric evaluation
is in the command's total, not in a method's.

Usage::

    FAIRPCA_DATA=../shared/data python benchmarks/user_tables.py [--only NAME]
"""

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ADULT_COLUMNS = (
    "age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,"
    "race,sex,capital-gain,capital-loss,hours-per-week,native-country,income"
)


def commands(data):
    compas = ["--data", str(data / "compas" / "compas-scores-two-years.csv")]
    compas += ["--sensitive", "race", "--target", "two_year_recid", "--impute", "median", "-d", "2"]
    adult = ["--data", str(data / "adult" / "adult.data"), "--column-names", ADULT_COLUMNS]
    adult += ["--target", "income", "--impute", "median", "-d", "2"]
    return {
        "compare COMPAS (race)": ["compare", *compas],
        "compare Adult (sex)": ["compare", *adult, "--sensitive", "sex"],
        "compare Adult (race)": ["compare", *adult, "--sensitive", "race"],
        "tradeoff COMPAS (race)": ["tradeoff", *compas],
    }


_DONE = re.compile(r"^\[\d+/\d+\] (\S+).* done in [\d.]+ s \(([\d.]+) s CPU\)$")


def run(args, output):
    one_thread = {
        name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    }
    env = {**os.environ, **one_thread}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "fairpca", *args, "--output", str(output)],
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    per_method = defaultdict(float)
    failures = []
    width = "?"
    for line in (result.stdout + result.stderr).splitlines():
        if match := _DONE.match(line):
            per_method[match.group(1)] += float(match.group(2))
        elif line.startswith("Failed: "):
            failures.append(line)
        elif match := re.search(r"(\d+) features; d = ", line):
            width = match.group(1)
    return result, wall, cpu, per_method, failures, width


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only the commands whose name contains this")
    options = parser.parse_args()
    data = Path(os.environ.get("FAIRPCA_DATA", Path(__file__).parents[2] / "shared" / "data"))
    rows = []
    for name, args in commands(data).items():
        if options.only and options.only not in name:
            continue
        with tempfile.TemporaryDirectory() as folder:
            result, wall, cpu, per_method, failures, width = run(args, Path(folder) / "out")
        ranked = sorted(per_method.items(), key=lambda item: -item[1])
        methods = ", ".join(f"{method} {seconds:.1f}" for method, seconds in ranked)
        rows.append((name, result.returncode, width, wall, cpu, methods, failures))
        print(f"{name}: exit {result.returncode}, {cpu:.0f} s CPU", file=sys.stderr)
        if result.returncode != 0:
            print(result.stderr[-2000:], file=sys.stderr)
    print("| command | exit | features | wall s | CPU s | fit CPU s per method (all fits) |")
    print("|---|---|---|---|---|---|")
    for name, code, width, wall, cpu, methods, _ in rows:
        print(f"| {name} | {code} | {width} | {wall:.0f} | {cpu:.0f} | {methods} |")
    for name, *_, failures in rows:
        for line in failures:
            print(f"\n{name}: {line}")


if __name__ == "__main__":
    main()

"""MMDFairPCA on ordinary data sizes and many groups: CPU time of ``fit``.

Each case fits ``MMDFairPCA(n_components=2, random_state=0)`` at its other
defaults (tau = 1e-3, bandwidth "median", mmd "auto", max_samples 20000):

- ``compas2``: ProPublica's ``compas/compas-scores-two-years.csv``, every row
  (7214), the 14 numeric columns age, juv_fel_count, decile_score,
  juv_misd_count, juv_other_count, priors_count, is_recid, is_violent_recid,
  decile_score.1, v_decile_score, priors_count.1, start, end, event (pandas
  names the file's second ``decile_score`` and ``priors_count`` columns
  ``.1``), standardised (mean 0, population SD 1); groups: race ==
  "African-American" against the rest (2 groups).
- ``compas-race``: the same rows with ``race`` itself as the group (6 groups,
  the smallest, Native American, 18 rows).
- ``adult-sex-race``: UCI's ``adult/adult.data`` (32561 rows, read with
  ``fairpca.datasets.load_adult``), the 6 numeric columns age, fnlwgt,
  education-num, capital-gain, capital-loss, hours-per-week, standardised;
  groups: sex + "/" + race (10 groups).
- ``lee-compas``: the anchor, Lee et al.'s own COMPAS protocol,
  ``fairpca.experiments.lee2022("compas", split=0)``, its 1727 training rows.

The anchor always runs (added when ``--cases`` leaves it out), since every
other case is reported as a multiple of its time in the same run: the ratio
is what to compare across machines, the seconds are this machine's.

Measured: CPU seconds of ``fit`` alone (``time.process_time``, all threads of
the process, data preparation excluded), with ``threadpool_limits(1, "blas")``
around the fit. With ``--repeats R`` the cases are interleaved R times and the
median CPU time is reported, with the median over rounds of each round's ratio
to the anchor. Also printed per case: rows, groups, smallest group,
``mmd_method_``, ``constraint_value_``, ``converged_``, ``n_iter_``, the sum of
``explained_variance_ratio_`` and, where the estimator has them,
``active_constraint_`` and the largest three of ``constraint_values_`` (from
the last fit; the fits are seeded, so every repeat gives the same). Warnings
raised by ``fit`` (ConvergenceWarning, other UserWarnings) are collected and
their first lines printed once under the table.

Also printed: ``evaluations``, the number of MMD² evaluations of the fit
(calls of the penalty, counted by wrapping it; each is one pass over the pairs
of rows or over the random features).

``--costs`` prints instead the per-evaluation costs behind ``mmd="auto"``:
CPU time of one evaluation (value and gradient) of the exact kernel sums and
of the random features (D = 1024), best of 3, one BLAS thread, on random rows
(14 features, as COMPAS) for m = 1000 .. 8000 rows, k = 2, 6, 10 groups and
d = 2, 5; as ns per pair of rows (exact, m²) and per row and frequency (rff).

Data: from ``--data-home`` or the ``FAIRPCA_DATA`` environment variable (the
folder holding ``compas/`` and ``adult/``); files are checksum-verified.

Usage::

    python benchmarks/mmd_groups.py                           # all four cases
    python benchmarks/mmd_groups.py --cases lee-compas compas2
    python benchmarks/mmd_groups.py --constraint pairwise --min-group-size 30
    python benchmarks/mmd_groups.py --repeats 3 --data-home ../shared/data
    python benchmarks/mmd_groups.py --costs                   # no data needed
"""

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from fairpca import MMDFairPCA
from fairpca._kernels import _exact_terms, _qmc_frequencies, _rff_terms, _Stratum

try:
    import fairpca._mmd_objective as mmd_objective
except ImportError:  # before 5ce96f6 the penalty lived in fairpca.mmd
    import fairpca.mmd as mmd_objective
from fairpca.datasets import load_adult
from fairpca.datasets._fetch import fetch_file
from fairpca.datasets._real import _ADULT_NUMERIC
from fairpca.experiments import lee2022

ANCHOR = "lee-compas"
CASES = ["compas2", "compas-race", "adult-sex-race", ANCHOR]
COMPAS_FILE = "compas/compas-scores-two-years.csv"
COMPAS_FEATURES = [
    "age",
    "juv_fel_count",
    "decile_score",
    "juv_misd_count",
    "juv_other_count",
    "priors_count",
    "is_recid",
    "is_violent_recid",
    "decile_score.1",
    "v_decile_score",
    "priors_count.1",
    "start",
    "end",
    "event",
]


def standardise(frame):
    X = frame.to_numpy(dtype=np.float64)
    return (X - X.mean(axis=0)) / X.std(axis=0)


def compas_frame(data_home):
    frame = pd.read_csv(fetch_file(COMPAS_FILE, data_home=data_home))
    missing = [c for c in COMPAS_FEATURES if c not in frame.columns]
    if missing:
        raise SystemExit(f"{COMPAS_FILE}: columns {missing} not found")
    return frame


def load_case(name, data_home, cache):
    """``(X, s)`` of one case; the COMPAS file is read once for both COMPAS cases."""
    if name == ANCHOR:
        split = lee2022("compas", split=0, data_home=data_home)
        return split.X_train, np.asarray(split.s_train)
    if name in ("compas2", "compas-race"):
        if "compas" not in cache:
            cache["compas"] = compas_frame(data_home)
        frame = cache["compas"]
        race = frame["race"].to_numpy(dtype=str)
        if name == "compas2":
            s = np.where(race == "African-American", "African-American", "other")
        else:
            s = race
        return standardise(frame[COMPAS_FEATURES]), s
    adult = load_adult(subset="train", data_home=data_home).data
    s = (adult["sex"] + "/" + adult["race"]).to_numpy(dtype=str)
    return standardise(adult[_ADULT_NUMERIC]), s


def cpu_fit(est, X, s, caught):
    """CPU seconds of ``est.fit``; its UserWarnings (incl. ConvergenceWarning) go to ``caught``."""
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always", UserWarning)
        with threadpool_limits(limits=1, user_api="blas"):
            start = time.process_time()
            est.fit(X, sensitive_features=s)
            seconds = time.process_time() - start
    for w in records:
        if issubclass(w.category, UserWarning):
            caught.append((w.category.__name__, str(w.message).splitlines()[0]))
        else:  # anything else is shown as usual
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return seconds


class EvaluationCounter:
    """Counts the calls of the MMD² penalty (one per evaluation) while installed."""

    def __init__(self):
        self.count = 0
        self._original = mmd_objective._Penalty.__call__

    def __enter__(self):
        original = self._original

        def counted(penalty, V, with_grad=True):
            self.count += 1
            return original(penalty, V, with_grad)

        mmd_objective._Penalty.__call__ = counted
        return self

    def __exit__(self, *exc):
        mmd_objective._Penalty.__call__ = self._original


def evaluation_costs():
    """Print the per-evaluation cost of exact kernel sums and random features."""
    rng = np.random.default_rng(0)
    n_features, n_frequencies = 14, 1024

    def best_of_3(fun, *args):
        best = np.inf
        for _ in range(3):
            start = time.process_time()
            fun(*args)
            best = min(best, time.process_time() - start)
        return best

    print("| d | k | m | exact ms | exact ns / pair | rff ms | rff ns / (row x frequency) |")
    print("|---|---|---|---|---|---|---|")
    with threadpool_limits(limits=1, user_api="blas"):
        for d in (2, 5):
            for k in (2, 6, 10):
                for m in (1000, 2000, 4000, 8000):
                    counts = np.full(k, m // k)
                    counts[0] += m - counts.sum()
                    X = rng.standard_normal((m, n_features))
                    stratum = _Stratum(X, counts, np.arange(k), "all rows", "one-vs-rest")
                    V = np.linalg.qr(rng.standard_normal((n_features, d)))[0]
                    freq = _qmc_frequencies(d, n_frequencies, 1.0, 0)
                    exact = best_of_3(_exact_terms, V, stratum, 0.5)
                    rff = best_of_3(_rff_terms, V, stratum, freq)
                    print(
                        f"| {d} | {k} | {m} | {exact * 1e3:.1f} | {exact / m**2 * 1e9:.2f} "
                        f"| {rff * 1e3:.1f} | {rff / (m * n_frequencies) * 1e9:.2f} |",
                        flush=True,
                    )


def top_values(values, k=3):
    if values is None:
        return "-"
    items = sorted(dict(values).items(), key=lambda item: item[1], reverse=True)[:k]
    return ", ".join(f"{label}: {value:.2e}" for label, value in items)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases",
        nargs="+",
        choices=CASES,
        default=CASES,
        help=f"cases to run (default: all; {ANCHOR}, the anchor, always runs)",
    )
    parser.add_argument("--repeats", type=int, default=1, help="interleaved rounds (median)")
    parser.add_argument("--data-home", default=None, help="data folder (default $FAIRPCA_DATA)")
    parser.add_argument("--constraint", choices=("one-vs-rest", "pairwise"), default=None)
    parser.add_argument("--min-group-size", type=int, default=None)
    parser.add_argument("--mmd", choices=("auto", "exact", "rff"), default=None)
    parser.add_argument("--tau", type=float, default=None)
    parser.add_argument("--costs", action="store_true", help="per-evaluation costs only")
    args = parser.parse_args()
    if args.costs:
        evaluation_costs()
        return
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    data_home = args.data_home or os.environ.get("FAIRPCA_DATA") or None
    if data_home is None:
        raise SystemExit(
            "no data home: set FAIRPCA_DATA or pass --data-home (the folder holding "
            "compas/compas-scores-two-years.csv and adult/adult.data)"
        )
    if not os.path.isdir(data_home):
        raise SystemExit(f"data home {data_home!r} is not a directory")
    # The anchor first, then the others in the order given, each once.
    names = [ANCHOR] + [c for c in dict.fromkeys(args.cases) if c != ANCHOR]
    options = {
        key: value
        for key, value in (
            ("constraint", args.constraint),
            ("min_group_size", args.min_group_size),
            ("mmd", args.mmd),
            ("tau", args.tau),
        )
        if value is not None
    }

    data, cache = {}, {}
    for name in names:
        try:
            data[name] = load_case(name, data_home, cache)
        except (FileNotFoundError, ValueError) as exc:
            raise SystemExit(f"{name}: {exc}") from exc

    seconds = {name: [] for name in names}
    evaluations = {}
    fitted, caught = {}, {name: [] for name in names}
    for r in range(args.repeats):
        for name in names:
            X, s = data[name]
            est = MMDFairPCA(n_components=2, random_state=0, **options)
            with EvaluationCounter() as counter:
                seconds[name].append(cpu_fit(est, X, s, caught[name]))
            evaluations[name] = counter.count
            fitted[name] = est
            print(
                f"[round {r + 1}/{args.repeats}] {name}: {seconds[name][-1]:.2f} CPU s",
                file=sys.stderr,
                flush=True,
            )

    extra = any(
        getattr(est, attr, None) is not None
        for est in fitted.values()
        for attr in ("active_constraint_", "constraint_values_")
    )
    params = "".join(f", {key}={value!r}" for key, value in options.items())
    print(
        f"MMDFairPCA(n_components=2, random_state=0{params}), one BLAS thread, "
        f"{args.repeats} round(s), median CPU seconds of fit\n"
    )
    header = [
        "case",
        "rows",
        "groups",
        "smallest",
        "CPU s",
        "x anchor",
        "mmd_method_",
        "constraint_value_",
        "converged_",
        "n_iter_",
        "evaluations",
        "EVR sum",
    ]
    if extra:
        header += [
            "active_constraint_",
            "constraint_values_ (largest 3)",
            "constraint_allowances_ (non-zero)",
        ]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for name in names:
        X, s = data[name]
        est = fitted[name]
        _, counts = np.unique(s, return_counts=True)
        ratios = [a / b for a, b in zip(seconds[name], seconds[ANCHOR], strict=True)]
        row = [
            name,
            str(X.shape[0]),
            str(counts.size),
            str(counts.min()),
            f"{statistics.median(seconds[name]):.2f}",
            f"{statistics.median(ratios):.1f}",
            str(est.mmd_method_),
            f"{est.constraint_value_:.2e}",
            str(est.converged_),
            str(est.n_iter_),
            str(evaluations[name]),
            f"{est.explained_variance_ratio_.sum():.4f}",
        ]
        if extra:
            active = getattr(est, "active_constraint_", None)
            allowances = getattr(est, "constraint_allowances_", None) or {}
            row += [
                "-" if active is None else str(active),
                top_values(getattr(est, "constraint_values_", None)),
                top_values({k: v for k, v in allowances.items() if v > 0}, k=10) or "-",
            ]
        print("| " + " | ".join(row) + " |")

    messages = [
        (name, category, message)
        for name in names
        for category, message in dict.fromkeys(caught[name])
    ]
    if messages:
        print("\nWarnings raised by fit (first line, once per case):")
        for name, category, message in messages:
            print(f"- {name}: {category}: {message}")


if __name__ == "__main__":
    main()

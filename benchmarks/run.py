"""Run every benchmark (the scale grid, then each other script); write ``benchmarks/results.md``.

Scale grid. Two groups (30 % / 70 %) with different column scales and means,
generated block by block from a seed, so that no process ever holds more than
one block per thread on the Dask route, even at n = 10^7. For each n and p,
each measurement runs in its own child process (so that its peak resident
memory is its own), one after the other, with BLAS on one thread:

- ``floor``: vanilla PCA out of core, the physical floor of a covariance method:
  one Dask pass for the mean and ``X^T X``, then ``eigh``;
- ``fair``: ``GroupMoments.from_dask`` (the one pass of every covariance-based
  method), then the solver of each covariance-based method on those moments
  (exactly what ``fit`` does on Dask input after the pass);
- in memory, when the data take at most ``--max-memory-mib``: one child per
  estimator, which fills one array block by block (not timed) and then times
  ``fit``: scikit-learn's ``PCA(n_components=d)`` and every fair estimator,
  the covariance-based ones with the time inside their moment pass and inside
  their solver (``_fit_components``) recorded, MMDFairPCA (``mmd="rff"``) up
  to ``--mmd-max-n`` rows.

A measurement that exceeds ``--timeout`` seconds is stopped and recorded; the
larger n of that route and p are then skipped. Times include generating the
blocks on the Dask route (in ``floor`` and ``fair`` alike), not in memory.

Then every other script in ``benchmarks/`` runs with ``--quick`` and its
output is appended. The machine is shared: timings are noisy.

Targets. ``--targets [NAME ...]`` measures only issue 46's targets (all six
when none is named) and prints one Markdown table to stdout (or ``--output``),
each row as soon as it is measured, with the load average at start and end.
Times are CPU seconds (``time.process_time``) of a child process per target
and p, BLAS on one thread; the fits of a round are interleaved, each ratio is
taken within its round, and the median over the rounds (min-max beside it)
is compared with the goal. Baseline ``PCA(n_components=d,
svd_solver="covariance_eigh")``, data of the scale grid unless said:

- ``memory``: each covariance-based method's ``fit`` (MinMaxLoss, Robust,
  Pareto, Convex, MeanMatching, LinearErasure) <= 2.5x PCA at n = 10^6, p in
  (20, 100). StreamingFairPCA is not covariance-based (a power method over
  the rows) and is not listed;
- ``convex``: ConvexFairPCA <= 2x PCA on the same data, and on Lee et al.'s
  COMPAS training split 0 (``fairpca.experiments.lee2022``, as
  ``convex_admm.py --suite``) at d = 2 and 5; on COMPAS a floor row times
  ``ConvexFairPCA(mu=0, delta=1e6)``, which has no SDP to solve (validation,
  group moments, one eigendecomposition): no solver can bring the fit below it;
- ``dask``: ``GroupMoments.from_dask`` and each method's ``fit`` on Dask
  input <= 1.15x the Dask floor (above) at n = 10^7, p in (20, 100); at most 3
  rounds, the warm-up on 2,000 rows; Dask's threads count in the CPU time;
  the peak resident memory of the process (all these fits) is shown;
- ``small``: MinMaxLossFairPCA <= 3x PCA at n = 10^4, p = 20;
- ``labels``: ``LinearErasure().fit`` on Adult's numeric columns with the
  labels ``sex`` as loaded (pandas strings) and as a NumPy object array,
  <= 1.2x the same labels as integers;
- ``tradeoff``: ``benchmarks/tradeoff_speed.py``'s measurement of ``fairpca
  tradeoff`` at its defaults, under 20 s of CPU on the built-in data, 60 s on
  German credit, 180 s on COMPAS (at most 3 rounds, each stopped at 1.5x its
  limit).

Quick fits are repeated for 0.05 s per timing. ``--quick`` shrinks n (memory
2e4, Dask 2e5) and the rounds (2) for a smoke test; its figures are not the
targets'. COMPAS, Adult and German credit are read from ``$FAIRPCA_DATA``.

Usage::

    python benchmarks/run.py                # n = 1e3 ... 1e7, p in (20, 100, 500), all scripts
    python benchmarks/run.py --quick        # n <= 1e5, p in (20, 100); no other scripts
    python benchmarks/run.py --p 20 --max-n 1e6 --no-scripts
    python benchmarks/run.py --targets                # every target, to stdout
    python benchmarks/run.py --targets dask labels    # some of them
    python benchmarks/run.py --targets --quick        # smoke test, small sizes
"""

import argparse
import functools
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _timing import code_commit

HERE = Path(__file__).resolve().parent
SCRIPTS = (
    "minmax_loss.py",
    "robust.py",
    "pareto.py",
    "convex.py",
    "mmd.py",
    "reproduce_convex.py",
    "reproduce_mmd.py",
    "reproduce_robust.py",
)
METHODS = ("MinMaxLossFairPCA", "RobustFairPCA", "ParetoFairPCA", "ConvexFairPCA")
BLOCK_BYTES = 32 * 2**20
# MMDFairPCA's target is n = 1e6 in under 60 s: a fit over twice that is stopped,
# and it is timed on the narrower data only (benchmarks/mmd.py covers wide data).
MMD_TIMEOUT = 120
MMD_MAX_P = 100
# ConvexFairPCA's SDP solve does not depend on n but takes minutes from p = 100 on
# this machine (benchmarks/convex.py times it against p): it is run at p <= 20 only.
CONVEX_MAX_P = 20


# ------------------------------------------------------------------ the data
def _labels(block, rows, seed):
    """Group labels of one block (0 or 1, 30 % ones)."""
    return (np.random.default_rng([seed, block, 1]).random(rows) < 0.3).astype(np.int8)


def _rows(block, rows, p, seed):
    """One block of rows: the groups differ in column scales and in mean."""
    labels = _labels(block, rows, seed)
    params = np.random.default_rng([seed, 10**9])
    scales = params.uniform(0.5, 2.0, size=(2, p))
    means = params.normal(size=(2, p))
    X = np.random.default_rng([seed, block, 0]).standard_normal((rows, p))
    X *= scales[labels]
    X += means[labels]
    return X


def _block_sizes(n, p):
    chunk = max(BLOCK_BYTES // (8 * p), 1)
    return [min(chunk, n - start) for start in range(0, n, chunk)]


def _dask_data(n, p, seed):
    import dask
    import dask.array as da

    sizes = _block_sizes(n, p)
    X = da.concatenate(
        [
            da.from_delayed(dask.delayed(_rows)(i, m, p, seed), shape=(m, p), dtype=np.float64)
            for i, m in enumerate(sizes)
        ]
    )
    s = da.concatenate(
        [
            da.from_delayed(dask.delayed(_labels)(i, m, seed), shape=(m,), dtype=np.int8)
            for i, m in enumerate(sizes)
        ]
    )
    return X, s


def _memory_data(n, p, seed):
    """The same rows as the Dask route, filled block by block into one array."""
    X, s = np.empty((n, p)), np.empty(n, dtype=np.int8)
    start = 0
    for i, m in enumerate(_block_sizes(n, p)):
        X[start : start + m] = _rows(i, m, p, seed)
        s[start : start + m] = _labels(i, m, seed)
        start += m
    return X, s


def _estimator(name, d):
    import fairpca

    if name == "MMDFairPCA":
        return fairpca.MMDFairPCA(n_components=d, mmd="rff", random_state=0)
    cls = getattr(fairpca, name)
    if name == "LinearErasure":
        return cls()
    return cls(n_components=d, random_state=0) if name == "RobustFairPCA" else cls(n_components=d)


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _timed(owner, name, record, key, clock=time.perf_counter):
    """Replace ``owner.name`` by a wrapper adding its ``clock`` time to ``record[key]``."""
    original = getattr(owner, name)
    record[key] = 0.0

    def wrapper(*args, **kwargs):
        start = clock()
        try:
            return original(*args, **kwargs)
        finally:
            record[key] += clock() - start

    setattr(owner, name, wrapper)


# ------------------------------------------------------------------ children
def _child(kind, n, p, d, seed):
    """Run one measurement and return its numbers (``peak_mib``: peak resident memory)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    warnings.simplefilter("ignore", ConvergenceWarning)
    out = {}
    if kind.startswith("target-"):  # "target-<name>:<repeats>"
        from threadpoolctl import threadpool_limits

        name, repeats = kind.removeprefix("target-").split(":")
        with threadpool_limits(limits=1):
            return TARGET_CHILDREN[name](n, p, d, seed, int(repeats))
    if kind == "floor":
        X, _ = _dask_data(n, p, seed)
        start = time.perf_counter()
        _dask_floor(X)
        out["time"] = time.perf_counter() - start
    elif kind == "fair":
        from fairpca import GroupMoments

        X, s = _dask_data(n, p, seed)
        start = time.perf_counter()
        moments = GroupMoments.from_dask(X, s)
        out["moments"] = time.perf_counter() - start
        out["pass_peak_mib"] = _peak_mib()
        for name in METHODS:
            if name == "ConvexFairPCA" and p > CONVEX_MAX_P:
                continue
            est = _estimator(name, d)
            est.n_features_in_ = p
            start = time.perf_counter()
            est._check_params()
            # What fit(dask) does after the pass.
            est._fit_moments(moments, d, grouped=True)
            out[name] = time.perf_counter() - start
            out[name + "_peak_mib"] = _peak_mib()
    else:  # "memory:<estimator>"
        from fairpca import GroupMoments

        name = kind.split(":", 1)[1]
        X, s = _memory_data(n, p, seed)
        out["data_mib"] = _current_mib()
        if name == "PCA":
            from sklearn.decomposition import PCA

            start = time.perf_counter()
            PCA(n_components=d).fit(X)
            out["time"] = time.perf_counter() - start
        else:
            est = _estimator(name, d)
            _timed(GroupMoments, "_from_codes", out, "moments")
            _timed(type(est), "_fit_components", out, "solver")
            start = time.perf_counter()
            est.fit(X, sensitive_features=s)
            out["time"] = time.perf_counter() - start
    out["peak_mib"] = _peak_mib()
    return out


def _run_child(kind, n, p, d, seed, timeout, extra_env=None):
    command = [sys.executable, __file__, "--child", kind, str(n), str(p), str(d), str(seed)]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        **(extra_env or {}),
    }
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, check=False, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        return {"error": f"over the {timeout:.0f} s limit", "timeout": True}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------- report
def _fmt(x, digits=3):
    return "–" if x is None else f"{x:.{digits}g}"


def _dask_table(rows, d):
    methods = [m for m in METHODS if any(m in r.get("fair", {}) for r in rows)]
    lines = [
        f"### Dask route (d = {d}): ratios to the Dask vanilla-PCA floor",
        "",
        "Floor: one Dask pass for the mean and X^T X, then `eigh`. Fair: "
        "`GroupMoments.from_dask` then each method's solver on the moments; a method's total "
        "is the moment pass + its solver. Peak = peak resident memory (MiB) of the process, "
        "which runs the pass and then every solver, so that it bounds each method's peak; "
        "a solver that raised it is marked with its own peak.",
        "",
        "| n | p | floor s | moments s | floor peak | fair peak | peak ratio | "
        + " | ".join(f"{m} total ratio (solver s, moment share)" for m in methods)
        + " |",
        "|---" * (7 + len(methods)) + "|",
    ]
    for r in rows:
        floor, fair = r.get("floor"), r.get("fair")
        if floor is None:
            continue
        if "error" in floor or fair is None or "error" in fair:
            error = floor.get("error") or (fair or {}).get("error", "not run")
            lines.append(f"| {r['n']:.0e} | {r['p']} | {error} |")
            continue
        cells = []
        for m in methods:
            if m not in fair:
                cells.append(f"– (run at p <= {CONVEX_MAX_P})" if m == "ConvexFairPCA" else "–")
                continue
            total = fair["moments"] + fair[m]
            own = fair[m + "_peak_mib"]
            bump = f", peak {own:.0f}" if own > fair["pass_peak_mib"] * 1.02 else ""
            cells.append(
                f"{total / floor['time']:.2f} ({_fmt(fair[m])} s, "
                f"{fair['moments'] / total:.0%}{bump})"
            )
        lines.append(
            f"| {r['n']:.0e} | {r['p']} | {_fmt(floor['time'])} | {_fmt(fair['moments'])} | "
            f"{floor['peak_mib']:.0f} | {fair['peak_mib']:.0f} | "
            f"{fair['peak_mib'] / floor['peak_mib']:.2f} | " + " | ".join(cells) + " |"
        )
    return lines


def _memory_table(rows, d, names):
    lines = [
        f"### In memory (d = {d}): ratios to scikit-learn `PCA(n_components={d}).fit`",
        "",
        "Each cell: time ratio / peak-memory ratio to PCA, then (for the covariance-based "
        "methods) the shares of the fit spent in the moment pass and in the solver; the rest is "
        "validation and label encoding. Peaks include the data (`data MiB`); each estimator runs "
        "in its own process.",
        "",
        "| n | p | PCA s | PCA peak MiB | data MiB | " + " | ".join(names) + " |",
        "|---" * (5 + len(names)) + "|",
    ]
    for r in rows:
        mem = r.get("memory")
        if not mem:
            continue
        pca = mem.get("PCA", {})
        if "error" in pca:
            lines.append(f"| {r['n']:.0e} | {r['p']} | PCA: {pca['error']} |")
            continue
        cells = []
        for name in names:
            cell = mem.get(name)
            if cell is None:
                cells.append("–")
            elif "error" in cell:
                cells.append(cell["error"][:60].replace("|", "/"))
            else:
                text = (
                    f"{cell['time'] / pca['time']:.2f} / {cell['peak_mib'] / pca['peak_mib']:.2f}"
                )
                if "solver" in cell and name != "MMDFairPCA":
                    text += (
                        f" ({cell['moments'] / cell['time']:.0%} pass, "
                        f"{cell['solver'] / cell['time']:.0%} solver)"
                    )
                elif name == "MMDFairPCA":
                    text += f" ({cell['time']:.3g} s)"
                cells.append(text)
        lines.append(
            f"| {r['n']:.0e} | {r['p']} | {_fmt(pca['time'])} | {pca['peak_mib']:.0f} | "
            f"{pca['data_mib']:.0f} | " + " | ".join(cells) + " |"
        )
    return lines


def _skipped_notes(skipped):
    if not skipped:
        return []
    lines = ["", "Not run:", ""]
    lines += [f"- {note}" for note in skipped]
    return lines


# ------------------------------------------------------------------ targets
#: The covariance-based methods: one moment pass, then a solve on p x p matrices.
#: StreamingFairPCA (a power method over the rows) and MMDFairPCA are not.
TARGET_METHODS = (*METHODS, "MeanMatchingFairPCA", "LinearErasure")
#: Features of the scale-grid targets, and their rows (``--quick``: smoke-test sizes).
TARGET_FEATURES = (20, 100)
TARGET_N = {"memory": 10**6, "dask": 10**7, "small": 10**4}
QUICK_N = {"memory": 2 * 10**4, "dask": 2 * 10**5, "small": 10**4}
#: Each target's heading; the goal of its rows (a ratio) is in GOALS.
TARGETS = {
    "memory": "Covariance-based fits in memory ≤ 2.5× PCA",
    "convex": "ConvexFairPCA ≤ 2× PCA",
    "dask": "Dask fits ≤ 1.15× the Dask floor",
    "small": "MinMaxLossFairPCA ≤ 3× PCA at n = 1e4",
    "labels": "String labels ≤ 1.2× integer labels (LinearErasure on Adult)",
    "tradeoff": "`fairpca tradeoff` at its defaults, CPU seconds",
}
GOALS = {"memory": 2.5, "convex": 2.0, "dask": 1.15, "small": 3.0, "labels": 1.2}
TRADEOFF_SECONDS = {"builtin": 20.0, "german": 60.0, "compas": 180.0}
#: A quick fit is repeated for at least this many CPU seconds per timing (less noise).
MIN_TIMING_SECONDS = 0.05


def _error(exc):
    return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}


def _cpu_per_call(fit, calls):
    start = time.process_time()
    for _ in range(calls):
        fit()
    return (time.process_time() - start) / calls


def _rounds(fits, repeats, warm_ups=None, min_seconds=0.0):
    """CPU seconds per call of each fit in ``repeats`` interleaved rounds: ``name -> list``.

    Each fit is first called once untimed (imports, first calls): itself, or
    its stand-in in ``warm_ups`` (the same fit on small data). Without a
    stand-in, that call also sets how many calls make one timing (at least
    ``min_seconds``). A fit that raises gets its error instead; the others go on.
    """
    calls, out = {}, {}
    for name, fit in fits.items():
        try:
            if warm_ups is None:
                first = _cpu_per_call(fit, 1)
                calls[name] = max(1, int(np.ceil(min_seconds / max(first, 1e-9))))
            else:
                warm_ups[name]()
                calls[name] = 1
        except Exception as exc:  # reported in its row
            out[name] = _error(exc)
    runs = {name: [] for name in calls}
    for _ in range(repeats):
        for name in calls:
            if name not in out:
                try:
                    runs[name].append(_cpu_per_call(fits[name], calls[name]))
                except Exception as exc:
                    out[name] = _error(exc)
    return {**runs, **out}


def _pca_fit(X, d):
    from sklearn.decomposition import PCA

    return PCA(n_components=d, svd_solver="covariance_eigh").fit(X)


def _method_fits(X, s, d, names):
    return {
        name: lambda name=name: _estimator(name, d).fit(X, sensitive_features=s) for name in names
    }


def _target_memory_child(n, p, d, seed, repeats, names=TARGET_METHODS):
    X, s = _memory_data(n, p, seed)
    small = X[:2000, : min(p, 10)], s[:2000]
    fits = {"PCA": lambda: _pca_fit(X, d), **_method_fits(X, s, d, names)}
    warm_ups = {"PCA": lambda: _pca_fit(small[0], d), **_method_fits(*small, d, names)}
    return _rounds(fits, repeats, warm_ups)


def _dask_floor(X):
    """Vanilla PCA out of core: one Dask pass for the mean and ``X^T X``, then ``eigh``."""
    import dask

    n = X.shape[0]
    total, gram = dask.compute(X.sum(axis=0), X.T @ X)
    mean = total / n
    return np.linalg.eigh((gram - n * np.outer(mean, mean)) / (n - 1))


def _target_dask_child(n, p, d, seed, repeats):
    from fairpca import GroupMoments

    def fits(X, s):
        return {
            "floor": lambda: _dask_floor(X),
            "moment pass": lambda: GroupMoments.from_dask(X, s),
            **_method_fits(X, s, d, TARGET_METHODS),
        }

    # Warmed up on 2,000 rows: at full size a warm-up would cost a whole round.
    times = _rounds(fits(*_dask_data(n, p, seed)), repeats, fits(*_dask_data(2000, p, seed)))
    return {**times, "peak_mib": _peak_mib()}


def _target_small_child(n, p, d, seed, repeats):
    X, s = _memory_data(n, p, seed)
    fits = {"PCA": lambda: _pca_fit(X, d), **_method_fits(X, s, d, ["MinMaxLossFairPCA"])}
    return _rounds(fits, repeats, min_seconds=MIN_TIMING_SECONDS)


def _target_compas_child(n, p, d, seed, repeats):
    """PCA and ConvexFairPCA on Lee et al.'s COMPAS training split 0, d = 2 and 5."""
    from fairpca import ConvexFairPCA
    from fairpca.experiments import lee2022

    split = lee2022("compas", split=0)
    X, s = split.X_train, split.s_train
    fits = {}
    for k in (2, 5):
        fits[f"PCA d={k}"] = lambda k=k: _pca_fit(X, k)
        fits[f"ConvexFairPCA d={k}"] = lambda k=k: ConvexFairPCA(n_components=k).fit(
            X, sensitive_features=s
        )
        # The estimator without its SDP (no LMI penalty, a mean bound that never binds):
        # validation, group moments and one eigendecomposition, the floor of any solver.
        fits[f"floor d={k}"] = lambda k=k: ConvexFairPCA(n_components=k, mu=0, delta=1e6).fit(
            X, sensitive_features=s
        )
    return {"shape": list(X.shape), **_rounds(fits, repeats, min_seconds=MIN_TIMING_SECONDS)}


def _target_labels_child(n, p, d, seed, repeats):
    """``LinearErasure().fit`` on Adult's numeric columns, the labels ``sex`` of three kinds."""
    from fairpca import LinearErasure
    from fairpca.datasets import load_adult

    adult = load_adult(sensitive="sex")
    X = adult.data.select_dtypes("number").to_numpy(dtype=float)
    strings = adult.sensitive.to_numpy(dtype=object)
    labels = {
        "int": np.unique(strings, return_inverse=True)[1],
        "str (pandas, as loaded)": adult.sensitive,
        "str (NumPy object)": strings,
    }
    fits = {
        kind: lambda s=s: LinearErasure().fit(X, sensitive_features=s) for kind, s in labels.items()
    }
    return {"shape": list(X.shape), **_rounds(fits, repeats, min_seconds=MIN_TIMING_SECONDS)}


TARGET_CHILDREN = {
    "memory": _target_memory_child,
    "convex": functools.partial(_target_memory_child, names=["ConvexFairPCA"]),
    "compas": _target_compas_child,
    "dask": _target_dask_child,
    "small": _target_small_child,
    "labels": _target_labels_child,
}


def _ratio_row(target, case, times, name, baseline):
    """Row of ``times[name]`` over ``times[baseline]``, round by round (or the error)."""
    row = {"target": target, "case": case, "goal": GOALS[target]}
    if "error" in times:  # the child process failed
        return {**row, "error": times["error"]}
    for key in (name, baseline):
        if not isinstance(times.get(key), list):
            return {**row, "error": f"{key}: {times.get(key, {'error': 'not run'})['error']}"}
    this, base = times[name], times[baseline]
    ratios = [a / b for a, b in zip(this, base, strict=True)]
    return {**row, "values": ratios, "this": this, "base": base}


def _measure(args, child, n, p, repeats):
    """Run one target child in its own process: its times, or its error."""
    return _run_child(
        f"target-{child}:{repeats}", n, p, args.d, args.seed, args.timeout * (repeats + 1)
    )


def _sizes(args):
    return QUICK_N if args.quick else TARGET_N


def _memory_rows(args):
    n = _sizes(args)["memory"]
    for p in TARGET_FEATURES:
        _progress(f"memory: n = {n:.0e}, p = {p}")
        times = _measure(args, "memory", n, p, args.repeats)
        for name in TARGET_METHODS:
            yield _ratio_row("memory", f"{name}, n = {n:.0e}, p = {p}", times, name, "PCA")


def _convex_rows(args):
    n = _sizes(args)["memory"]
    for p in TARGET_FEATURES:
        _progress(f"convex: n = {n:.0e}, p = {p}")
        times = _measure(args, "convex", n, p, args.repeats)
        yield _ratio_row("convex", f"n = {n:.0e}, p = {p}", times, "ConvexFairPCA", "PCA")
    _progress("convex: COMPAS")
    times = _measure(args, "compas", 0, 0, args.repeats)
    shape = "×".join(map(str, times.get("shape", ["?", "?"])))
    for k in (2, 5):
        case = f"COMPAS, Lee et al.'s training split 0 ({shape}), d = {k}"
        yield _ratio_row("convex", case, times, f"ConvexFairPCA d={k}", f"PCA d={k}")
        floor = f"floor: ConvexFairPCA(mu=0, delta=1e6), no SDP to solve, {shape}, d = {k}"
        yield {**_ratio_row("convex", floor, times, f"floor d={k}", f"PCA d={k}"), "floor": True}


def _dask_rows(args):
    n, repeats = _sizes(args)["dask"], min(args.repeats, 3)
    for p in TARGET_FEATURES:
        _progress(f"dask: n = {n:.0e}, p = {p}")
        times = _measure(args, "dask", n, p, repeats)
        # The process's peak resident memory bounds that of each fit (all ran in it).
        peak = f" (peak RSS of all {times['peak_mib']:.0f} MiB)" if "peak_mib" in times else ""
        for name in ("moment pass", *TARGET_METHODS):
            label = "`GroupMoments.from_dask`" if name == "moment pass" else f"{name}.fit"
            case = f"{label}, n = {n:.0e}, p = {p}{peak if name == 'moment pass' else ''}"
            yield _ratio_row("dask", case, times, name, "floor")


def _small_rows(args):
    n, p = _sizes(args)["small"], TARGET_FEATURES[0]
    times = _measure(args, "small", n, p, args.repeats)
    yield _ratio_row("small", f"n = {n:.0e}, p = {p}", times, "MinMaxLossFairPCA", "PCA")


def _labels_rows(args):
    times = _measure(args, "labels", 0, 0, args.repeats)
    shape = "×".join(map(str, times.get("shape", ["?", "?"])))
    for kind in ("str (pandas, as loaded)", "str (NumPy object)"):
        yield _ratio_row("labels", f"{kind} / int, Adult {shape}", times, kind, "int")


def _tradeoff_seconds(case, timeout):
    """CPU seconds of ``benchmarks/tradeoff_speed.py``'s measurement of ``case``, or an error.

    Run in a child process with one BLAS thread and a CPU-time limit of
    ``timeout`` seconds (past it, the row reports the limit: a miss).
    """
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from tradeoff_speed import _ONE_THREAD, CHILD

    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (int(timeout), int(timeout) + 5))

    done = subprocess.run(
        [sys.executable, "-c", CHILD, case],
        env={**os.environ, **_ONE_THREAD},
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=limit,
    )
    if done.returncode == -signal.SIGXCPU:
        return {"error": f"over the {timeout:.0f} s CPU limit", "over": True}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])["total"]


def _tradeoff_rows(args):
    repeats = min(args.repeats, 3)
    for case, goal in TRADEOFF_SECONDS.items():
        _progress(f"tradeoff: {case}")
        runs = [_tradeoff_seconds(case, goal * 1.5) for _ in range(repeats)]
        row = {"target": "tradeoff", "case": case, "goal": goal, "seconds": True}
        errors = [run for run in runs if isinstance(run, dict)]
        yield {**row, **errors[0]} if errors else {**row, "values": runs, "this": runs}


TARGET_ROWS = {
    "memory": _memory_rows,
    "convex": _convex_rows,
    "dask": _dask_rows,
    "small": _small_rows,
    "labels": _labels_rows,
    "tradeoff": _tradeoff_rows,
}


def _cell(text):
    return str(text).replace("|", "/")


def _progress(message):
    print(message, file=sys.stderr, flush=True)


def _target_line(row, command):
    """One Markdown table row: measured median, min-max, CPU seconds, goal, verdict, command."""
    # Ratios have a bound, the trade-off's CPU seconds a limit to stay under.
    unit, bound = (" s", "<") if row.get("seconds") else ("×", "≤")
    goal = f"{bound} {row['goal']:g}{unit}"
    head = f"| {TARGETS[row['target']]} | {_cell(row['case'])} |"
    if "error" in row:
        verdict = "MISS" if row.get("over") else "not run"
        return f"{head} {_cell(row['error'])} | | | {goal} | {verdict} | `{command}` |"
    values = row["values"]
    median = float(np.median(values))
    seconds = f"{np.median(row['this']):.3g}"
    if "base" in row:
        seconds += f" / {np.median(row['base']):.3g}"
    met = median < row["goal"] if row.get("seconds") else median <= row["goal"]
    verdict = "PASS" if met else "MISS"
    if row.get("floor"):
        verdict = "floor: " + ("goal reachable" if met else "goal out of reach")
    return (
        # Three decimals: a median of 1.152 must not print as the goal 1.15 and miss.
        f"{head} {median:.3f}{unit} | {min(values):.3f}–{max(values):.3f} ({len(values)}) | "
        f"{seconds} | {goal} | {verdict} | `{command}` |"
    )


def _target_command(args, name):
    words = ["python benchmarks/run.py --targets", name, "--quick" if args.quick else ""]
    for option, value, default in (
        ("--repeats", args.repeats_given, None),
        ("--seed", args.seed, 0),
        ("-d", args.d, 5),
    ):
        if value != default:
            words.append(f"{option} {value}")
    return " ".join(word for word in words if word)


def _run_targets(args):
    """``--targets``: to stdout, or to ``--output`` line by line."""
    args.repeats_given = args.repeats
    args.repeats = args.repeats or (2 if args.quick else 5)
    if args.output is None:
        _targets(args, sys.stdout)
        return
    with open(args.output, "w") as out:
        _targets(args, out)


def _targets(args, out):
    """Measure the targets named in ``args.targets`` (all by default); print each row at once."""
    start = time.perf_counter()

    def emit(line=""):
        print(line, file=out, flush=True)

    emit("## Targets (issue 46)")
    emit()
    emit(
        f"`python benchmarks/run.py {' '.join(sys.argv[1:])}` at {code_commit()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores; "
        f"load average at start {_load()}. CPU seconds (`time.process_time`: every thread "
        "of the measuring process, so Dask's worker threads too) with BLAS on one thread, "
        "in child processes; each ratio is taken within one round, the fits of a round "
        "interleaved, and the median over the rounds (their number in brackets) is compared "
        "with the goal. Scale-grid data (two groups, 30 / 70 %, different column scales and "
        f'means; seed {args.seed}), d = {args.d}; baseline `PCA(svd_solver="covariance_eigh")`.'
    )
    emit()
    emit(
        "| target | case | measured (median) | min–max (rounds) | CPU s, this / baseline "
        "| goal | result | command |"
    )
    emit("|---|---|---|---|---|---|---|---|")
    for name in args.targets or TARGETS:
        command = _target_command(args, name)
        for row in TARGET_ROWS[name](args):
            emit(_target_line(row, command))
    emit()
    emit(f"Load average at end {_load()}; {time.perf_counter() - start:.0f} s wall in all.")


def _load():
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="n <= 1e5, p in (20, 100); --targets: smoke sizes"
    )
    parser.add_argument("--max-n", type=float, default=1e7, help="largest n (default 1e7)")
    parser.add_argument("--p", type=int, nargs="+", help="feature counts (default 20 100 500)")
    parser.add_argument("-d", type=int, default=5, help="n_components (default 5)")
    parser.add_argument(
        "--max-memory-mib", type=float, default=1024, help="largest data for the in-memory route"
    )
    parser.add_argument("--mmd-max-n", type=float, default=1e6, help="largest n for MMDFairPCA")
    parser.add_argument(
        "--timeout", type=float, default=300, help="seconds per measurement and per script"
    )
    parser.add_argument("--no-scripts", action="store_true", help="skip the other scripts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--output", type=Path, help="file to write (default: results.md; --targets: stdout)"
    )
    parser.add_argument(
        "--targets",
        nargs="*",
        choices=list(TARGETS),
        help="only these targets of issue 46 (none named: all), printed as they finish",
    )
    parser.add_argument(
        "--repeats", type=int, help="rounds of --targets (default 5, --quick 2; Dask at most 3)"
    )
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, n, p, d, seed = args.child
        print(json.dumps(_child(kind, int(n), int(p), int(d), int(seed))))
        return
    if args.targets is not None:
        _run_targets(args)
        return
    args.output = args.output or HERE / "results.md"

    max_n = 1e5 if args.quick else args.max_n
    sizes = [int(10**k) for k in range(3, 8) if 10**k <= max_n]
    features = args.p or ((20, 100) if args.quick else (20, 100, 500))
    rows, skipped = [], []
    for p in features:
        stopped = {}  # route -> note, once a measurement of that route ran out of time
        for n in sizes:
            row = {"n": n, "p": p}
            if "dask" not in stopped:
                for kind in ("floor", "fair"):
                    row[kind] = _run_child(kind, n, p, args.d, args.seed, args.timeout)
                    if row[kind].get("timeout"):
                        stopped["dask"] = (
                            f"Dask route at p = {p}, n >= {n:.0e}: {kind} {row[kind]['error']}"
                        )
                        break
            names = ["PCA", *METHODS, "MMDFairPCA"]
            if n * p * 8 / 2**20 <= args.max_memory_mib:
                row["memory"] = {}
                for name in names:
                    if name == "ConvexFairPCA" and p > CONVEX_MAX_P:
                        continue
                    is_mmd = name == "MMDFairPCA"
                    if is_mmd and (n > args.mmd_max_n or p > MMD_MAX_P) or name in stopped:
                        continue
                    timeout = min(args.timeout, MMD_TIMEOUT) if is_mmd else args.timeout
                    cell = _run_child(f"memory:{name}", n, p, args.d, args.seed, timeout)
                    row["memory"][name] = cell
                    if cell.get("timeout"):
                        stopped[name] = (
                            f"{name} in memory at p = {p}, n >= {n:.0e}: {cell['error']}"
                        )
            rows.append(row)
            print(json.dumps(row), flush=True)
            # Rewritten after every cell, so that an interrupted long run keeps its results.
            _write(args, rows, skipped + list(stopped.values()), scripts=None)
        skipped += list(stopped.values())

    scripts = None
    if not args.no_scripts and not args.quick:
        scripts = []
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        for script in SCRIPTS:
            start = time.perf_counter()
            try:
                done = subprocess.run(
                    [sys.executable, str(HERE / script), "--quick"],
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=args.timeout,
                    env=env,
                    cwd=HERE,
                )
                status, text = (
                    f"exit {done.returncode}",
                    (done.stdout.rstrip() or done.stderr.rstrip()[-2000:]),
                )
            except subprocess.TimeoutExpired as exc:
                out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout
                status, text = f"stopped after {args.timeout:.0f} s", (out or "").rstrip()
            scripts += [
                "",
                f"### `{script} --quick` ({status}, {time.perf_counter() - start:.0f} s)",
                "",
                "```",
                text,
                "```",
            ]
            _write(args, rows, skipped, scripts)
    _write(args, rows, skipped, scripts)
    print(f"wrote {args.output}")


def _write(args, rows, skipped, scripts):
    """Write the markdown report of the cells measured so far."""
    names = [m for m in (*METHODS, "MMDFairPCA") if any(m in (r.get("memory") or {}) for r in rows)]
    lines = [
        "# Benchmark results",
        "",
        f"Command: `python benchmarks/run.py {' '.join(sys.argv[1:])}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}), BLAS on one thread. "
        "The machine (2 cores) was shared with other sessions' jobs while this ran: "
        "timings are noisy, single runs, and only ratios measured in the same run mean much.",
        "",
        "## Scale: covariance-based methods from one moment pass",
        "",
        *_dask_table(rows, args.d),
        "",
        *_memory_table(rows, args.d, names),
        *_skipped_notes(skipped),
        "",
        "MMDFairPCA needs the rows, not only the moments: it has no Dask route here and is timed "
        f'in memory with `mmd="rff"` and its other defaults, up to n = {args.mmd_max_n:.0e} '
        f"and p = {MMD_MAX_P}, each fit stopped after {MMD_TIMEOUT} s (its target: n = 1e6 in "
        "under 60 s).",
    ]
    if scripts is not None:
        lines += ["", "## Other benchmark scripts (`--quick`)", *scripts]
    args.output.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

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

Targets. ``--targets`` runs only the "Fast solvers" issue's three target
measurements on the same data, in memory, d = 5, and prints a Markdown section
(measured ratio, target, PASS/MISS per row, the command) to stdout instead of
writing ``results.md``. Every fit is timed in CPU seconds with one BLAS thread;
the medians of ``--repeats`` interleaved runs are compared within the run:

- T1, n = 10^6, p in (20, 100): each covariance-based method's ``fit`` against
  ``PCA(n_components=5, svd_solver="covariance_eigh").fit`` (target <= 3x),
  all of them interleaved in one child process per p;
- T2, ``ConvexFairPCA(solver="ADMM", max_features=None)`` at p = 1000,
  n = 10^5: wall time under 60 s (CPU time printed too); its ``objective_``
  within 1e-5 relative of ``solver="SCS"`` (at ``tol=1e-9``) at p in (20, 50,
  100), n = 10^4.
  (the ADMM solver is opt-in: SCS stays the default);
- T3, n = 10^6, p = 100: ``RobustFairPCA`` against itself with the private
  switch ``fairpca.robust._STOP_EARLY`` off and against commit 441422d (before
  the early stop; a git worktree at ``--old-tree``, made if missing, imported
  through ``PYTHONPATH``); one child process per fit, the three interleaved;
  whole fit and solver (``_fit_components``) speed-ups (target >= 3x) and the
  objective differences.

Usage::

    python benchmarks/run.py                # n = 1e3 ... 1e7, p in (20, 100, 500), all scripts
    python benchmarks/run.py --quick        # n <= 1e5, p in (20, 100); no other scripts
    python benchmarks/run.py --p 20 --max-n 1e6 --no-scripts
    python benchmarks/run.py --targets --repeats 5    # T1-T3 to stdout
    python benchmarks/run.py --targets --quick        # n = 1e5, p = 20 (T2: p = 200)
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

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
    if kind.startswith("t") and ":" in kind:  # "t1:R", "t2time:R", "t2obj:1", "t3:variant"
        from threadpoolctl import threadpool_limits

        target, option = kind.split(":", 1)
        with threadpool_limits(limits=1):
            if target == "t1":
                out = _t1_child(n, p, d, seed, int(option))
            elif target in ("t2time", "t2obj"):
                out = _t2_child(target, n, p, d, seed, int(option))
            else:
                out = _t3_child(option, n, p, d, seed)
    elif kind == "floor":
        import dask

        X, _ = _dask_data(n, p, seed)
        start = time.perf_counter()
        total, gram = dask.compute(X.sum(axis=0), X.T @ X)
        mean = total / n
        covariance = (gram - n * np.outer(mean, mean)) / (n - 1)
        np.linalg.eigh(covariance)
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
TARGET_METHODS = (*METHODS, "MeanMatchingFairPCA", "LinearErasure")
T1_RATIO = 3.0  # each covariance-based fit within 3x PCA's
T2_SECONDS, T2_REL_OBJECTIVE = 60.0, 1e-5
SCS_REFERENCE_TOL = 1e-9
T3_SPEEDUP, T3_REL_OBJECTIVE = 3.0, 1e-6  # "same objective": within 1e-6 relative
OLD_COMMIT = "441422d"  # RobustFairPCA before the early stop: T3's "today"
T3_VARIANTS = {
    "stopped": "this checkout (early stop)",
    "full": "this checkout, `_STOP_EARLY = False` (full budget)",
    "old": f"{OLD_COMMIT} (before the early stop)",
}


def _median(values):
    return None if not values or any(v is None for v in values) else float(np.median(values))


def _timers(names):
    """CPU-time timers of the moment pass and of each named class's ``_fit_components``."""
    import fairpca

    record = {}
    if hasattr(fairpca.GroupMoments, "_from_codes"):
        _timed(fairpca.GroupMoments, "_from_codes", record, "moments", time.process_time)
    for name in names:
        cls = getattr(fairpca, name)
        if "_fit_components" in vars(cls):
            _timed(cls, "_fit_components", record, name + ":solver", time.process_time)
    return record


def _measure(fit, record):
    """Call ``fit()`` once: its result and its CPU and wall seconds, with the timers'."""
    for key in record:
        record[key] = 0.0
    cpu, wall = time.process_time(), time.perf_counter()
    result = fit()
    numbers = {"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall}
    return result, {**numbers, **record}


def _warm_up(fit, X, s):
    """One untimed fit on 2,000 rows and at most 10 columns (imports, first calls)."""
    fit(X[:2000, : min(X.shape[1], 10)], s[:2000])


def _error(exc):
    return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}


def _t1_child(n, p, d, seed, repeats):
    """PCA and every covariance-based method, interleaved in each of ``repeats`` rounds."""
    from sklearn.decomposition import PCA

    X, s = _memory_data(n, p, seed)
    fits = {"PCA": lambda X, s: PCA(n_components=d, svd_solver="covariance_eigh").fit(X)}
    for name in TARGET_METHODS:
        fits[name] = lambda X, s, name=name: _estimator(name, d).fit(X, sensitive_features=s)
    record, out, runs = _timers(TARGET_METHODS), {}, {name: [] for name in fits}
    for name, fit in fits.items():
        try:
            _warm_up(fit, X, s)
        except Exception as exc:  # reported in its row; the other methods go on
            out[name] = _error(exc)
    for _ in range(repeats):
        for name, fit in fits.items():
            if name in out:
                continue
            try:
                _, numbers = _measure(lambda fit=fit: fit(X, s), record)
            except Exception as exc:
                out[name] = _error(exc)
                continue
            runs[name].append(
                {
                    "cpu": numbers["cpu"],
                    "moments": numbers.get("moments") if name != "PCA" else None,
                    "solver": numbers.get(name + ":solver"),
                }
            )
    for name, rows in runs.items():
        if name not in out:
            out[name] = {key: _median([row[key] for row in rows]) for key in rows[0]}
    return out


def _convex_facts(est):
    gap, n_iter = getattr(est, "duality_gap_", None), getattr(est, "n_iter_", None)
    return {
        "solver": str(est.solver),
        "objective": float(est.objective_),
        "gap": None if gap is None else float(gap),
        "n_iter": None if n_iter is None else int(n_iter),
    }


def _t2_child(kind, n, p, d, seed, repeats):
    """``t2time``: default ConvexFairPCA ``repeats`` times; ``t2obj``: default, then SCS."""
    from fairpca import ConvexFairPCA

    def fit(X, s, solver="ADMM"):
        # SCS at its default tol=1e-6 ends up to 1e-4 above the optimum by violating the
        # constraints (eigenvalues of P down to -3e-5 at p = 50): the reference is SCS at 1e-9.
        options = {"tol": SCS_REFERENCE_TOL, "max_iter": 10**6} if solver == "SCS" else {}
        est = ConvexFairPCA(n_components=d, max_features=None, solver=solver, **options)
        return est.fit(X, sensitive_features=s)

    X, s = _memory_data(n, p, seed)
    record = _timers(["ConvexFairPCA"])
    _warm_up(fit, X, s)
    if kind == "t2time":
        runs = []
        for _ in range(repeats):
            est, numbers = _measure(lambda: fit(X, s), record)
            runs.append(numbers)
        out = {key: _median([run.get(key) for run in runs]) for key in runs[0]}
        return {**out, **_convex_facts(est)}
    out = {}
    for label, solver in (("default", "ADMM"), ("SCS", "SCS")):
        est, numbers = _measure(lambda solver=solver: fit(X, s, solver), record)
        out[label] = {**numbers, **_convex_facts(est)}
    return out


def _t3_child(variant, n, p, d, seed):
    """One ``RobustFairPCA`` fit: this checkout's (``stopped``/``full``) or the old one's."""
    import fairpca
    import fairpca.robust

    X, s = _memory_data(n, p, seed)
    if variant == "full":
        fairpca.robust._STOP_EARLY = False
    record = _timers(["RobustFairPCA"])

    def fit(X, s):
        return _estimator("RobustFairPCA", d).fit(X, sensitive_features=s)

    _warm_up(fit, X, s)
    est, numbers = _measure(lambda: fit(X, s), record)
    budget = (est.n_restarts + 1) * est.n_iter
    steps = getattr(est, "n_iter_per_start_", None)
    return {
        **numbers,
        "objective": float(est.objective_),
        "steps": budget if steps is None else int(np.sum(steps)),
        "budget": budget,
        "module": fairpca.__file__,
    }


def _cell(text):
    return str(text).replace("|", "/")


def _verdict(ok):
    return "PASS" if ok else "MISS"


def _progress(message):
    print(message, file=sys.stderr, flush=True)


def _target_t1(args, n, features):
    lines = [
        f"### T1: covariance-based fits in memory within {T1_RATIO:g}x PCA (n = {n:.0e})",
        "",
        f'Baseline: `PCA(n_components={args.d}, svd_solver="covariance_eigh").fit(X)`. One '
        "child process per p fits PCA and every method in turn, the round repeated "
        f"{args.repeats} times; median CPU seconds. Moment pass: time inside "
        "`GroupMoments._from_codes`; solver: inside the method's `_fit_components`.",
        "",
        "| p | method | CPU s | moment pass s | solver s | ratio to PCA | target | result |",
        "|---" * 8 + "|",
    ]
    for p in features:
        _progress(f"T1: n = {n:.0e}, p = {p}")
        out = _run_child(f"t1:{args.repeats}", n, p, args.d, args.seed, args.timeout * args.repeats)
        pca = out if "error" in out else out.get("PCA", {"error": "not run"})
        if "error" in pca:
            lines.append(f"| {p} | PCA | {_cell(pca['error'])} | | | | | – |")
            continue
        lines.append(f"| {p} | PCA (baseline) | {_fmt(pca['cpu'])} | | | 1 | | |")
        for name in TARGET_METHODS:
            cell = out.get(name, {"error": "not run"})
            if "error" in cell:
                lines.append(
                    f"| {p} | {name} | {_cell(cell['error'])} | | | | ≤ {T1_RATIO:g} | – |"
                )
                continue
            ratio = cell["cpu"] / pca["cpu"]
            lines.append(
                f"| {p} | {name} | {_fmt(cell['cpu'])} | {_fmt(cell['moments'])} | "
                f"{_fmt(cell['solver'])} | {ratio:.2f} | ≤ {T1_RATIO:g} | "
                f"{_verdict(ratio <= T1_RATIO)} |"
            )
    return lines


def _admm_missing():
    """Why T2 cannot run (None if ConvexFairPCA accepts solver="ADMM")."""
    try:
        from fairpca import ConvexFairPCA

        ConvexFairPCA(solver="ADMM")._check_params()
    except Exception as exc:
        return f"ConvexFairPCA(solver='ADMM') cannot be built here ({_error(exc)['error']})."
    return None


def _target_t2(args, quick):
    p_time, n_time, n_obj = (200 if quick else 1000), 10**5, 10**4
    obj_features = (20,) if quick else (20, 50, 100)
    lines = [f"### T2: ConvexFairPCA at p = {p_time}, n = {n_time:.0e}", ""]
    missing = _admm_missing()
    if missing:
        _progress(f"T2 skipped: {missing}")
        return [*lines, f"T2 skipped: {missing}"]
    _progress(f"T2: time at p = {p_time}")
    out = _run_child(
        f"t2time:{args.repeats}", n_time, p_time, args.d, args.seed, args.timeout * args.repeats
    )
    lines += [
        f"`ConvexFairPCA(n_components={args.d}, solver='ADMM', max_features=None).fit`, "
        f"median of {args.repeats} fits in one child process, one BLAS thread; the target is "
        f"the wall time. Duality gap: `duality_gap_` of the last fit.",
        "",
        "| n | p | solver | wall s | CPU s | moment pass s | solver s | iterations "
        "| duality gap | target | result |",
        "|---" * 11 + "|",
    ]
    if "error" in out:
        lines.append(f"| {n_time:.0e} | {p_time} | {_cell(out['error'])} | | | | | | | – |")
    else:
        lines.append(
            f"| {n_time:.0e} | {p_time} | {out['solver']} | {_fmt(out['wall'])} | "
            f"{_fmt(out['cpu'])} | {_fmt(out.get('moments'))} | "
            f"{_fmt(out.get('ConvexFairPCA:solver'))} | {out['n_iter'] or '–'} | "
            f"{_fmt(out['gap'], 2)} | < {T2_SECONDS:g} s | {_verdict(out['wall'] < T2_SECONDS)} |"
        )
    lines += [
        "",
        f'Objective against `solver="SCS", tol=1e-9` on the same data (n = {n_obj:.0e}, one '
        "fit each, CPU seconds of that fit):",
        "",
        "| p | solver | objective | SCS objective | rel. difference | CPU s "
        "| SCS CPU s | duality gap | target | result |",
        "|---" * 10 + "|",
    ]
    for p in obj_features:
        _progress(f"T2: objective against SCS at p = {p}")
        out = _run_child("t2obj:1", n_obj, p, args.d, args.seed, args.timeout)
        if "error" in out:
            lines.append(f"| {p} | {_cell(out['error'])} | | | | | | | | – |")
            continue
        new, scs = out["default"], out["SCS"]
        diff = abs(new["objective"] - scs["objective"]) / abs(scs["objective"])
        lines.append(
            f"| {p} | {new['solver']} | {new['objective']:.10g} | {scs['objective']:.10g} | "
            f"{diff:.1e} | {_fmt(new['cpu'])} | {_fmt(scs['cpu'])} | {_fmt(new['gap'], 2)} | "
            f"≤ {T2_REL_OBJECTIVE:g} | {_verdict(diff <= T2_REL_OBJECTIVE)} |"
        )
    return lines


def _old_tree(path):
    """A git worktree of OLD_COMMIT at ``path`` (made if missing), or None, and a note."""
    if not (path / "src" / "fairpca").is_dir():
        command = ["git", "-C", str(HERE.parent), "worktree", "add", "--detach", str(path)]
        done = subprocess.run([*command, OLD_COMMIT], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return None, f"`git worktree add {path} {OLD_COMMIT}` failed: {done.stderr.strip()}"
    head = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if not head.startswith(OLD_COMMIT):
        return None, f"{path} holds {head[:7] or 'no commit'}, not {OLD_COMMIT}"
    return path, f"old code: a git worktree of {OLD_COMMIT} at {path}, `PYTHONPATH={path}/src`"


def _target_t3(args, n, p):
    old, note = _old_tree(args.old_tree)
    envs = {"stopped": None, "full": None}
    if old is not None:
        envs["old"] = {"PYTHONPATH": str(old / "src")}
    runs, errors = {v: [] for v in envs}, {}
    for r in range(args.repeats):
        for variant, env in envs.items():
            if variant in errors:
                continue
            _progress(f"T3: n = {n:.0e}, p = {p}, {variant}, round {r + 1}")
            out = _run_child(f"t3:{variant}", n, p, args.d, args.seed, args.timeout, env)
            module = out.get("module", "")
            if "error" not in out and (variant == "old") != module.startswith(str(old or "-")):
                out = {"error": f"imported the wrong fairpca ({module})"}
            if "error" in out:
                errors[variant] = out["error"]
            else:
                runs[variant].append(out)
    med = {
        v: {
            key: _median([run.get(key) for run in rows])
            for key in ("cpu", "moments", "RobustFairPCA:solver")
        }
        for v, rows in runs.items()
        if rows and v not in errors
    }
    lines = [
        f"### T3: RobustFairPCA at n = {n:.0e}, p = {p}: early stop against the full budget "
        f"and against {OLD_COMMIT}",
        "",
        f"`RobustFairPCA(n_components={args.d}, random_state=0).fit`, each fit in its own child "
        f"process, the variants interleaved in each of {args.repeats} rounds; median CPU "
        f"seconds. {note}."
        if old is not None
        else f"{OLD_COMMIT} not run: {note}.",
        "",
        "| code | CPU s | moment pass s | solver s (`_fit_components`) | steps / budget "
        "| objective |",
        "|---" * 6 + "|",
    ]
    for variant, label in T3_VARIANTS.items():
        if variant in errors:
            lines.append(f"| {label} | {_cell(errors[variant])} | | | | |")
        elif variant in med:
            last, m = runs[variant][-1], med[variant]
            lines.append(
                f"| {label} | {_fmt(m['cpu'])} | {_fmt(m['moments'])} | "
                f"{_fmt(m['RobustFairPCA:solver'])} | {last['steps']}/{last['budget']} | "
                f"{last['objective']:.12g} |"
            )
    lines += ["", "| comparison | measured | target | result |", "|---" * 4 + "|"]
    if "stopped" not in med:
        return lines
    now = med["stopped"]
    for variant, label in (("old", OLD_COMMIT), ("full", "full budget")):
        if variant not in med:
            continue
        for key, what in (("cpu", "whole fit"), ("RobustFairPCA:solver", "solver only")):
            if now[key] and med[variant][key]:
                ratio = med[variant][key] / now[key]
                lines.append(
                    f"| speed-up over {label}, {what} | {ratio:.2f}x | ≥ {T3_SPEEDUP:g}x | "
                    f"{_verdict(ratio >= T3_SPEEDUP)} |"
                )
        ref = runs[variant][-1]["objective"]
        diff = abs(runs["stopped"][-1]["objective"] - ref) / abs(ref)
        lines.append(
            f"| objective, rel. difference to {label} | {diff:.1e} | ≤ {T3_REL_OBJECTIVE:g} | "
            f"{_verdict(diff <= T3_REL_OBJECTIVE)} |"
        )
    return lines


def _targets(args):
    """Run T1-T3 and print their Markdown section to stdout."""
    n = 10**5 if args.quick else 10**6
    lines = [
        '## Targets of the "Fast solvers" issue',
        "",
        f"Command: `python benchmarks/run.py {' '.join(sys.argv[1:])}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). Two-group data of the scale "
        f"grid (seed {args.seed}), fitted in memory, d = {args.d}; CPU time "
        "(`time.process_time`) with one BLAS thread (OMP/OPENBLAS/MKL_NUM_THREADS=1 and "
        "threadpoolctl), medians of interleaved runs, each ratio measured in this run. "
        "The machine (2 cores) is shared with other jobs: timings are noisy.",
        "",
        *_target_t1(args, n, (20,) if args.quick else (20, 100)),
        "",
        *_target_t2(args, args.quick),
        "",
        *_target_t3(args, n, 20 if args.quick else 100),
    ]
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n <= 1e5, p in (20, 100)")
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
    parser.add_argument("--output", type=Path, default=HERE / "results.md")
    parser.add_argument(
        "--targets", action="store_true", help="only the issue's targets T1-T3, to stdout"
    )
    parser.add_argument("--repeats", type=int, default=5, help="interleaved runs (--targets)")
    parser.add_argument(
        "--old-tree",
        type=Path,
        default=Path("/tmp/robust_old"),
        help=f"git worktree of {OLD_COMMIT} for T3 (made if missing)",
    )
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, n, p, d, seed = args.child
        print(json.dumps(_child(kind, int(n), int(p), int(d), int(seed))))
        return
    if args.targets:
        _targets(args)
        return

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

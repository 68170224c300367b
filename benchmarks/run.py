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

Usage::

    python benchmarks/run.py                # n = 1e3 ... 1e7, p in (20, 100, 500), all scripts
    python benchmarks/run.py --quick        # n <= 1e5, p in (20, 100); no other scripts
    python benchmarks/run.py --p 20 --max-n 1e6 --no-scripts
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
    return cls(n_components=d, random_state=0) if name == "RobustFairPCA" else cls(n_components=d)


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _timed(owner, name, record, key):
    """Replace ``owner.name`` by a wrapper adding its wall time to ``record[key]``."""
    original = getattr(owner, name)
    record[key] = 0.0

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            record[key] += time.perf_counter() - start

    setattr(owner, name, wrapper)


# ------------------------------------------------------------------ children
def _child(kind, n, p, d, seed):
    """Run one measurement and return its numbers (``peak_mib``: peak resident memory)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    warnings.simplefilter("ignore", ConvergenceWarning)
    out = {}
    if kind == "floor":
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


def _run_child(kind, n, p, d, seed, timeout):
    command = [sys.executable, __file__, "--child", kind, str(n), str(p), str(d), str(seed)]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
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
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, n, p, d, seed = args.child
        print(json.dumps(_child(kind, int(n), int(p), int(d), int(seed))))
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

"""Run the scale benchmark (and every other benchmark script) and write ``benchmarks/results.md``.

Scale benchmark. Two groups (30 % / 70 %) with different column scales and means,
generated block by block from a seed, so that no process ever holds more than one
block per thread, even at n = 10^7. For each n and p, in separate child processes
(so that each peak resident memory is its own):

- ``floor``: vanilla PCA out of core, the physical floor of a covariance method:
  one Dask pass for the mean and ``X^T X``, then ``eigh``;
- ``fair``: ``GroupMoments.from_dask`` (the one pass of every covariance-based
  method) then the solvers of ``MinMaxLossFairPCA``, ``RobustFairPCA`` and
  ``ParetoFairPCA`` on those moments (exactly what ``fit`` on Dask input does);
- ``memory`` (only when the data take at most ``--max-memory-mib``): the data in
  one array, scikit-learn's ``PCA(n_components=d).fit`` and the in-memory ``fit``
  of the three methods.

Times include generating the blocks on the Dask route (both in ``floor`` and in
``fair``), not on the in-memory route. The machine is shared: timings are noisy.

Usage::

    python benchmarks/run.py --quick        # n <= 1e5, p in (20, 100); no other scripts
    python benchmarks/run.py                # n = 1e3 ... 1e7, p in (20, 100, 500), all scripts
    python benchmarks/run.py --max-n 1000000 --no-scripts
"""

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SCRIPTS = ("minmax_loss.py", "robust.py", "pareto.py", "convex.py", "mmd.py")
METHODS = ("MinMaxLossFairPCA", "RobustFairPCA", "ParetoFairPCA")
BLOCK_BYTES = 32 * 2**20


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


def _estimator(name, d):
    import fairpca

    cls = getattr(fairpca, name)
    return cls(n_components=d, random_state=0) if name == "RobustFairPCA" else cls(n_components=d)


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
        for name in METHODS:
            est = _estimator(name, d)
            est.n_features_in_ = p
            start = time.perf_counter()
            if hasattr(est, "_check_params"):
                est._check_params()
            # What fit(dask) does after the pass.
            est._fit_moments(moments, d, grouped=True)
            out[name] = time.perf_counter() - start
    elif kind == "memory":
        from sklearn.decomposition import PCA

        sizes = _block_sizes(n, p)
        X = np.concatenate([_rows(i, m, p, seed) for i, m in enumerate(sizes)])
        s = np.concatenate([_labels(i, m, seed) for i, m in enumerate(sizes)])
        start = time.perf_counter()
        PCA(n_components=d).fit(X)
        out["pca"] = time.perf_counter() - start
        for name in METHODS:
            start = time.perf_counter()
            _estimator(name, d).fit(X, sensitive_features=s)
            out[name] = time.perf_counter() - start
    out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _run_child(kind, n, p, d, seed):
    command = [sys.executable, __file__, "--child", kind, str(n), str(p), str(d), str(seed)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------- report
def _fmt(x, digits=3):
    return "–" if x is None else f"{x:.{digits}g}"


def _scale_tables(rows, d):
    lines = [
        f"### Dask route (d = {d}): ratios to the Dask vanilla-PCA floor",
        "",
        "Floor: one Dask pass for the mean and X^T X, then `eigh`. Fair: "
        "`GroupMoments.from_dask` then the method's solver on the moments; its total is "
        "moment pass + solver. Peak = peak resident memory of the process (MiB).",
        "",
        "| n | p | floor s | moments s | floor peak | fair peak | peak ratio | "
        + " | ".join(f"{m} total ratio (solver s, moment share)" for m in METHODS)
        + " |",
        "|---" * (7 + len(METHODS)) + "|",
    ]
    for r in rows:
        floor, fair = r["floor"], r["fair"]
        if "error" in floor or "error" in fair:
            lines.append(
                f"| {r['n']:.0e} | {r['p']} | error: {floor.get('error') or fair.get('error')} |"
            )
            continue
        cells = []
        for m in METHODS:
            total = fair["moments"] + fair[m]
            cells.append(
                f"{total / floor['time']:.2f} ({_fmt(fair[m])} s, {fair['moments'] / total:.0%})"
            )
        lines.append(
            f"| {r['n']:.0e} | {r['p']} | {_fmt(floor['time'])} | {_fmt(fair['moments'])} | "
            f"{floor['peak_mib']:.0f} | {fair['peak_mib']:.0f} | "
            f"{fair['peak_mib'] / floor['peak_mib']:.2f} | " + " | ".join(cells) + " |"
        )
    lines += [
        "",
        f"### In memory (d = {d}): ratios to scikit-learn `PCA(n_components={d}).fit`",
        "",
        "Data generated first (not timed). Peak includes the data.",
        "",
        "| n | p | PCA s | peak MiB | " + " | ".join(f"{m} ratio" for m in METHODS) + " |",
        "|---" * (4 + len(METHODS)) + "|",
    ]
    for r in rows:
        mem = r.get("memory")
        if mem is None:
            continue
        if "error" in mem:
            lines.append(f"| {r['n']:.0e} | {r['p']} | error: {mem['error']} |")
            continue
        cells = [f"{mem[m] / mem['pca']:.2f}" for m in METHODS]
        lines.append(
            f"| {r['n']:.0e} | {r['p']} | {_fmt(mem['pca'])} | {mem['peak_mib']:.0f} | "
            + " | ".join(cells)
            + " |"
        )
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n <= 1e5, p in (20, 100)")
    parser.add_argument("--max-n", type=float, default=1e7, help="largest n (default 1e7)")
    parser.add_argument("--p", type=int, nargs="+", help="feature counts (default 20 100 500)")
    parser.add_argument("-d", type=int, default=5, help="n_components (default 5)")
    parser.add_argument("--max-memory-mib", type=float, default=512, help="in-memory route cap")
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
    rows = []
    for p in features:
        for n in sizes:
            row = {"n": n, "p": p}
            for kind in ("floor", "fair"):
                row[kind] = _run_child(kind, n, p, args.d, args.seed)
            if n * p * 8 / 2**20 <= args.max_memory_mib:
                row["memory"] = _run_child("memory", n, p, args.d, args.seed)
            rows.append(row)
            print(json.dumps(row), flush=True)
            # Rewritten after every cell, so that an interrupted long run keeps its results.
            _write(args, rows, scripts=None)

    scripts = None
    if not args.no_scripts and not args.quick:
        scripts = []
        for script in SCRIPTS:
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, str(HERE / script), "--quick"],
                capture_output=True,
                text=True,
                check=False,
            )
            scripts += [
                "",
                f"### `{script} --quick` (exit {done.returncode}, "
                f"{time.perf_counter() - start:.0f} s)",
                "",
                "```",
                done.stdout.rstrip() or done.stderr.rstrip()[-2000:],
                "```",
            ]
    _write(args, rows, scripts)
    print(f"wrote {args.output}")


def _write(args, rows, scripts):
    """Write the markdown report of the cells measured so far."""
    lines = [
        "# Benchmark results",
        "",
        f"Command: `python benchmarks/run.py {' '.join(sys.argv[1:])}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
        "The machine (2 cores) was shared with other jobs: timings are noisy.",
        "",
        "## Scale: covariance-based methods from one moment pass",
        "",
        *_scale_tables(rows, args.d),
    ]
    if scripts is not None:
        lines += ["", "## Other benchmark scripts (`--quick`)", *scripts]
    args.output.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

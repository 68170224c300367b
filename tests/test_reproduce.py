import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import fairpca
from fairpca.cli import cli
from fairpca.experiments import reproduce as rep

PAPERS = Path(__file__).resolve().parents[2] / "shared" / "papers"
STATUSES = {"within", "outside", "holds", "fails", "not available", "no paper value"}


def _paper(prefix):
    (path,) = PAPERS.glob(f"{prefix}_*.txt")
    return path.read_text()


def test_reference_numbers_are_the_papers():
    ref = rep.reference()
    assert set(ref["target"]) == set(rep.TARGETS)
    assert (ref["citation"].str.len() > 0).all()
    numeric = ref["mean"].notna()
    assert (numeric | (ref["claim"].str.len() > 0)).all()
    # Every Lee et al. cell appears as "mean <sub>sd</sub>" in Table 1 of the paper's text.
    lee = _paper("000")
    table1 = lee[lee.index("Table 1:") : lee.index("## 8.2")]
    for row in ref[ref["target"] == "lee2022-table1"].itertuples():
        digits = 2 if row.metric == "%VAR" else 3
        cell = f"{row.mean:.{digits}f}\\s*<sub>{row.std:.{digits}f}</sub>"
        assert re.search(cell, table1), (row.dataset, row.method, row.setting, row.d, row.metric)
    # Every Vu et al. cell appears on its data set's line of Table 1.
    vu = _paper("001")
    lines = vu[vu.index("Table 1: Out-of-sample") :].splitlines()[:20]
    names = {"default_credit": "Default Credit", "ecoli": "E. Coli", "magic": "Magic"}
    for row in ref[ref["target"] == "vu2022-table1"].itertuples():
        name = names.get(row.dataset)
        if name is None:
            continue
        (line,) = [line for line in lines if line.startswith(name)]
        values = [float(v) for v in line.split("\t")[1:5]]
        column = (0 if row.method == "RobustFairPCA" else 2) + (row.metric == "ARE")
        assert values[column] == row.mean


@pytest.mark.parametrize("target", list(rep.TARGETS))
def test_every_target_runs_quick_and_writes_its_report(target, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["reproduce", target, "--quick", "--output", str(out)])
    assert result.exit_code == 0, result.output
    files = {p.name for p in out.iterdir()}
    assert files == {f"{target}.csv", f"{target}-details.csv", "report.md", f"{target}.png"}
    assert (out / f"{target}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = pd.read_csv(out / f"{target}.csv", keep_default_na=False, na_values=[""])
    details = pd.read_csv(out / f"{target}-details.csv")
    assert len(table) > 0 and set(table["status"]) <= STATUSES
    cited = table["status"] != "no paper value"  # our context rows (PCA in Vu's table)
    assert (table.loc[cited, "citation"].str.len() > 0).all()
    assert table.loc[~cited, "paper_mean"].isna().all()
    report = (out / "report.md").read_text()
    assert report.startswith("# ") and f"![{target}]({target}.png)" in report
    assert report.count("\n| ") >= len(table)
    for row in table.itertuples():
        assert f"| {row.dataset} |" in result.output  # the printed table has every row
        if row.status in ("within", "outside"):
            # The mark is what the rule says, recomputed from the written numbers.
            values = details.query(
                "dataset == @row.dataset and method == @row.method and metric == @row.metric"
            )["value"]
            assert row.ours_mean == pytest.approx(values.mean())
            spread = row.paper_std if not math.isnan(row.paper_std) else values.std(ddof=1)
            inside = abs(values.mean() - row.paper_mean) <= spread
            assert (row.status == "within") == inside
    if target in ("lee2022-table1", "vu2022-table1"):
        assert {"within", "outside"} & set(table["status"])
        assert table["paper_mean"].notna().any()
    else:
        assert set(table["status"]) <= {"holds", "fails"} and table["paper_claim"].all()


def test_lee_numbers_are_recomputed_independently(tmp_path):
    from fairpca.experiments import lee2022

    result = rep.run("lee2022-table1", quick=True)
    details = result.details
    for split in (0, 1):
        data = lee2022("compas", split=split)
        _, _, vt = np.linalg.svd(data.X_train - data.X_train.mean(0), full_matrices=False)
        centred = data.X_test - data.X_train.mean(0)
        kept = np.sum((centred @ vt[:2].T) ** 2) / np.sum(centred**2)
        row = details.query("method == 'PCA' and metric == '%VAR' and split == @split")
        assert row["value"].item() == pytest.approx(100 * kept, rel=1e-6)


def test_vu_errors_against_a_direct_computation():
    rng = np.random.default_rng(0)
    X_train, X = rng.normal(size=(40, 4)), rng.normal(size=(30, 4))
    s_train, s = np.repeat([0, 1], 20), np.repeat([0, 1], 15)
    q, _ = np.linalg.qr(rng.normal(size=(4, 2)))
    abdiff, are = rep.vu2022_errors(X, s, q.T, X_train, s_train)
    projector = np.eye(4) - q @ q.T

    def err(rows, centre):
        return np.mean([np.linalg.norm(projector @ (x - centre)) ** 2 for x in rows])

    assert are == pytest.approx(err(X, X_train.mean(0)))
    errs = [err(X[s == g], X_train[s_train == g].mean(0)) for g in (0, 1)]
    assert abdiff == pytest.approx(abs(errs[0] - errs[1]))


def test_missing_methods_are_shown_not_available(monkeypatch):
    monkeypatch.delattr(fairpca, "MMDFairPCA", raising=False)
    monkeypatch.delattr(fairpca, "ConvexFairPCA", raising=False)
    result = CliRunner().invoke(cli, ["reproduce", "lee2022-table1", "--quick"])
    assert result.exit_code == 0, result.output
    assert "MMDFairPCA: not available" in result.output
    assert re.search(
        r"\| MMDFairPCA \| tau=1e-3 \| %VAR \|  \| +\| 39|\| MMDFairPCA .*not available",
        result.output,
    )
    assert re.search(r"\| ConvexFairPCA .*\| not available \|", result.output)


def test_bad_target_output_and_missing_data(tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["reproduce", "lee2023-table9"])
    assert result.exit_code != 0
    for name in rep.TARGETS:
        assert name in result.output
    listing = runner.invoke(cli, ["reproduce", "--list"])
    assert listing.exit_code == 0 and all(name in listing.output for name in rep.TARGETS)
    out = tmp_path / "exists"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = runner.invoke(cli, ["reproduce", "kamani-figures", "--quick", "--output", str(out)])
    assert result.exit_code != 0 and "--force" in result.output
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    result = runner.invoke(
        cli, ["reproduce", "kamani-figures", "--quick", "--output", str(out), "--force"]
    )
    assert result.exit_code == 0, result.output
    assert {"keep.txt", "report.md"} <= {p.name for p in out.iterdir()}
    empty = tmp_path / "no-data"
    result = runner.invoke(
        cli, ["reproduce", "samadi2018-figures", "--quick", "--data-home", str(empty)]
    )
    assert result.exit_code == 1
    assert "cannot load the data" in result.output and "not found" in result.output
    assert "Traceback" not in result.output
    with pytest.raises(ValueError, match="valid targets: lee2022-table1"):
        rep.reference("nope")

"""The committed end-to-end H100 baseline (reports/h100_baseline_*) is well formed and honest (CPU only).

>= 5 independent runs per operating point, tokens/s CoV recomputed from the per-run rows and equal
to the summary, every point over the contract's limit marked as not counting, an H100 device,
measured provenance, and the current contract's hash on every row."""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from eagle4.contract import ensure_same_contract, load_contract

REPO = Path(__file__).resolve().parents[2]
REPORTS = REPO / "reports"


def _rows(name: str) -> list[dict]:
    path = REPORTS / name
    if not path.is_file():
        pytest.fail(f"reports/{name} is missing: run scripts/bench_h100_e2e.sh on an H100 and commit its output",
                    pytrace=False)
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def contract():
    return load_contract(REPO / "contracts" / "default.toml")


def test_runs_rows(contract):
    runs = _rows("h100_baseline_runs.csv")
    ensure_same_contract(runs, expected=contract.sha256)
    by_point = defaultdict(list)
    for r in runs:
        assert r["provenance"] == "measured" and "H100" in r["device"], r
        by_point[r["point"]].append(r)
    assert set(by_point) == {p.name for p in contract.operating_points}, "every operating point of the contract"
    for point, rs in by_point.items():
        assert len({r["run_index"] for r in rs}) == len(rs) >= 5, f"{point}: fewer than 5 independent runs"
        assert all(float(r["wall_s"]) >= contract.runs.min_duration_s for r in rs), f"{point}: run shorter than the minimum"


def test_summary_matches_the_runs_and_flags_noisy_points(contract):
    runs = _rows("h100_baseline_runs.csv")
    summary = (REPORTS / "h100_baseline_summary.md").read_text()
    assert contract.sha256 in summary
    tps = defaultdict(list)
    for r in runs:
        tps[r["point"]].append(float(r["tokens_per_s"]))
    for point, values in tps.items():
        v = np.array(values)
        cov = v.std(ddof=1) / v.mean()
        row = next(line for line in summary.splitlines() if line.startswith(f"| {point} |"))
        shown = float(re.search(r"\| ([\d.]+)% ", row).group(1)) / 100
        assert abs(shown - cov) < 6e-5, f"{point}: summary CoV {shown} != recomputed {cov:.6f}"
        assert (cov > contract.runs.cov_max) == ("over limit" in row), f"{point}: CoV {cov:.4f} flag mismatch"


def test_raw_rows_per_request(contract):
    raw = _rows("h100_baseline_raw.csv")
    ensure_same_contract(raw, expected=contract.sha256)
    assert len(raw) >= 5  # every row is checked, not a prefix
    for r in raw:
        assert r["provenance"] == "measured" and "H100" in r["device"]
        assert float(r["ttft_s"]) > 0 and float(r["tokens_per_s"]) > 0
        assert float(r["acceptance_length"]) >= 1.0
    runs = {(r["point"], r["run_index"]) for r in _rows("h100_baseline_runs.csv")}
    assert {(r["point"], r["run_index"]) for r in raw} == runs, "raw rows and runs describe the same runs"


COMMIT = re.compile(r"^([0-9a-f]{7,40}(-dirty)?|unknown)$")


@pytest.mark.parametrize("name", ["h100_baseline_raw.csv", "h100_baseline_runs.csv"])
def test_every_row_names_its_commit_or_says_unknown(name):
    bad = [(i, r["commit"]) for i, r in enumerate(_rows(name), 2) if not COMMIT.match(r["commit"])]
    assert not bad, f"reports/{name}: rows whose commit is no sha (a ref like HEAD names no code): {bad[:5]}"

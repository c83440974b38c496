"""The committed deployment-shape baseline (reports/h100_e2e_*, contracts/deployment-8b.toml) is well
formed and honest (CPU only): every row carries the current contract's hash, a commit, an H100 and
measured provenance with its acceptance note; >= 5 processes per point and every point of the
contract; CoV and validity recomputed from the per-run rows equal what the summary says (a point
missing any rule can never read VALID); every run finished its share of the point's samples; the
committed baseline passes WP1 at every point (the issue's done-when, as measured); every request row
belongs to a committed run; the acceptance histograms are consistent; the WP2 table matches its JSON."""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from eagle4.contract import load_contract
from eagle4.perf.card import is_baseline
from eagle4.workload.serving_metrics import validity

REPO = Path(__file__).resolve().parents[2]
REPORTS = REPO / "reports"
COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _rows(name):
    p = REPORTS / name
    if not p.is_file():
        pytest.fail(f"reports/{name} is missing: run scripts/bench_h100_e2e.sh --contract contracts/deployment-8b.toml "
                    "on an H100 and commit its output", pytrace=False)
    with open(p, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def contract():
    return load_contract(REPO / "contracts" / "deployment-8b.toml")


@pytest.fixture(scope="module")
def runs():
    return _rows("h100_e2e_runs.csv")


def _stamped(r, contract):
    assert r["contract_sha256"] == contract.sha256, r
    assert COMMIT.match(r["commit"]), r["commit"]


def test_every_run_row(contract, runs):
    note = "time: measured at deployment shape; acceptance: " + \
        f"{contract.acceptance.trace}@{contract.acceptance.sha256[:12]}"
    by_point = defaultdict(list)
    for r in runs:
        _stamped(r, contract)
        assert is_baseline(r["device"]) and r["provenance"] == "measured" and r["acceptance"] == note, r
        assert r["graphs"] == "True" and r["backend"] == "cuda" and r["gc_frozen"] == "True"
        assert float(r["duration_rule_s"]) == contract.runs.min_duration_s
        by_point[r["point"]].append(r)
        # LoadGen's min_query_count: each run finished its share of the point's samples
        assert int(r["min_finished_rule"]) == -(-contract.measurement.min_samples // contract.runs.runs)
        assert int(r["finished_requests"]) >= int(r["min_finished_rule"]), r
    assert list(by_point) == [p.name for p in contract.operating_points]
    for rs in by_point.values():
        assert sorted(int(r["run_index"]) for r in rs) == list(range(len(rs))) and len(rs) >= contract.runs.runs


def test_points_recomputed_from_runs(contract, runs):
    points = _rows("h100_e2e_points.csv")
    reqs = _rows("h100_e2e_raw.csv")
    summary = (REPORTS / "h100_e2e_summary.md").read_text()
    assert contract.sha256 in summary
    for pt in points:
        _stamped(pt, contract)
        ru = [r for r in runs if r["point"] == pt["point"]]
        rq = [r for r in reqs if r["point"] == pt["point"]]
        tps = np.array([float(r["tokens_per_s"]) for r in ru])
        c = tps.std(ddof=1) / tps.mean()
        assert abs(float(pt["tokens_per_s_cov"]) - c) < 1e-6
        n = {"TTFT": sum(r["ttft_s"] != "" for r in rq),
             "ITL": sum(len([x for x in r["itl_s"].split(";") if x]) for r in rq),
             "TPOT": sum(r["tpot_s"] != "" for r in rq)}
        assert (int(pt["ttft_n"]), int(pt["itl_n"]), int(pt["tpot_n"])) == (n["TTFT"], n["ITL"], n["TPOT"])
        status, why, _ = validity(ru, n_samples=n, contract=contract)
        assert (pt["status"], pt["why"]) == (status, "; ".join(why))
        if min(float(r["window_s"]) for r in ru) < contract.runs.min_duration_s:
            assert status == "INVALID" and "minimum" in pt["why"]
        row = next(line for line in summary.splitlines() if line.startswith(f"| {pt['point']} |"))
        assert f"{c:.2%}" in row and status in row
    # WP1 at every point of the deployment contract, recomputed above from the rows
    assert [p["status"] for p in points] == ["VALID"] * len(contract.operating_points), \
        [(p["point"], p["why"]) for p in points]


def test_every_request_row_belongs_to_a_run(contract, runs):
    how = {(r["point"], r["run_index"]): r["provenance"] for r in runs}
    reqs = _rows("h100_e2e_raw.csv")
    assert reqs
    for r in reqs:
        _stamped(r, contract)
        assert how[(r["point"], r["run_index"])] == r["provenance"], "a request row says how its run was obtained"
        assert float(r["ttft_s"]) > 0 and int(r["output_tokens"]) <= contract.prompts.output_tokens
        if r["tpot_s"]:
            assert r["finished"] == "True" and int(r["output_tokens"]) == contract.prompts.output_tokens


def test_acceptance_histograms(contract, runs):
    acc = _rows("h100_e2e_accept.csv")
    how = {(r["point"], r["run_index"]): r["provenance"] for r in runs}
    assert {(a["point"], a["run_index"]): a["provenance"] for a in acc} == how
    S = contract.decode.tree_depth + 1
    for a in acc:
        h, pp = json.loads(a["histogram"]), json.loads(a["per_position"])
        assert sum(h) == int(a["iterations"]) and len(h) == S + 1 and len(pp) == S
        assert all(x >= y for x, y in zip(pp, pp[1:], strict=False))  # accepting position k+1 needs position k


def test_wp2_table_matches_its_profile(contract):
    sc = json.loads((REPORTS / "h100_e2e_selfcheck.json").read_text())
    assert sc["ref_vs_cuda_equal"] and sc["eager_vs_graphs_equal"] and is_baseline(sc["device"])
    md = (REPORTS / "h100_e2e_hotspots.md").read_text()
    m = contract.measurement
    for p in sc["points"]:
        shares = sorted((s for _, s in p["regions"]), reverse=True)
        assert abs(sum(shares) - 1) < 1e-6 and abs(sum(shares[:m.hotspot_top_n]) - p["top3"]) < 1e-9
        assert abs(p["step_over_kernels"] - p["step_s_median"] / p["kernel_s_per_step"]) < 1e-9
        row = next(line for line in md.splitlines() if line.startswith(f"| {p['B']} |"))
        assert f"{p['step_over_kernels']:.3f}" in row and f"{p['top3']:.1%}" in row
    b1 = next(p for p in sc["points"] if p["B"] == 1)
    assert b1["step_over_kernels"] <= m.step_over_kernels_max  # the measured B=1 goal, as committed


def test_manifest_records_the_method(contract):
    man = json.loads((REPORTS / "h100_e2e_manifest.json").read_text())
    assert man["contract_sha256"] == contract.sha256 and COMMIT.match(man["commit"])
    assert man["gc_freeze"] and man["pin_cores"] and man["nvml_sample_hz"] == contract.measurement.nvml_sample_hz
    assert man["pinned_cores"] and man["runs_per_point"] >= contract.runs.runs
    # a shortened run says so (and its points are INVALID, checked above)
    assert man["duration_override_s"] is None or man["duration_override_s"] < contract.runs.min_duration_s

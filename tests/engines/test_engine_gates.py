"""Engine contracts end to end: the worked example on the fixtures, micro-before-full enforced by the
ledger (distinct evidence only), failures with their reasons, malformed inputs as one-line errors
from the library, `eagle4 gates` and `pytest tests/gates`."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from eagle4.cli import main as cli
from eagle4.contract import ContractError, load_contract
from eagle4.engines import ResultFormatError
from eagle4.gates import consecutive_green, evaluate_all, summary
from eagle4.gates.evaluate import LEDGER, LEDGER_COLUMNS
from eagle4.proc import run_bounded

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "contracts" / "examples" / "eagle3-engine.toml"
DATA = REPO / "tests" / "data" / "engine_results" / "eagle3"
MICRO = [g.name for g in load_contract(EXAMPLE).gates if g.stage == "micro"]
FULL = [g.name for g in load_contract(EXAMPLE).gates if g.stage == "full"]


def run(results, reports, stage=None, record=True):
    return {r.name: r for r in evaluate_all(EXAMPLE, reports, record_ledger=record, results_dir=results, stage=stage)}


@pytest.fixture
def micro(tmp_path):
    d = tmp_path / "micro"
    shutil.copytree(DATA / "micro-1", d)
    return d


def test_full_blocked_until_micro_green_three_times_on_distinct_results(tmp_path):
    rep = tmp_path / "rep"
    first = run(DATA / "micro-1", rep)
    assert all(first[n].status == "PASS" for n in MICRO), [first[n].reasons for n in MICRO]
    for n in FULL:
        assert first[n].status == "BLOCKED"
        assert "single32k_speedup_micro" in first[n].reasons[0] and "the ledger has" in first[n].reasons[0]
    for _ in range(3):  # re-judging the same files is not another green run
        run(DATA / "micro-1", rep, stage="micro")
    assert consecutive_green(rep, "single32k_speedup_micro", load_contract(EXAMPLE).sha256) == 1
    assert run(DATA / "full", rep, stage="full", record=False)[FULL[0]].status == "BLOCKED"
    run(DATA / "micro-2", rep, stage="micro")
    run(DATA / "micro-3", rep, stage="micro")
    full = run(DATA / "full", rep, stage="full")
    assert all(full[n].status == "PASS" for n in MICRO + FULL), {n: full[n].reasons for n in full}
    assert all(full[n].details.get("from_ledger") for n in MICRO)
    text = summary(list(full.values()), contract_sha256="x", results_dir=DATA / "full")
    assert "VERDICT: SIGNED OFF" in text
    assert full["single32k_speedup_full"].value == pytest.approx(
        full["single32k_speedup_full"].details["scenario"] / full["single32k_speedup_full"].details["baseline"])


def test_micro_stage_alone_never_signs_off(tmp_path):
    res = run(DATA / "micro-1", tmp_path / "rep", stage="micro")
    assert {res[n].status for n in FULL} == {"SKIPPED"}
    assert "VERDICT: NOT SIGNED OFF" in summary(list(res.values()), results_dir=DATA / "micro-1")


def _edit_json(p: Path, fn):
    d = json.loads(p.read_text())
    fn(d)
    p.write_text(json.dumps(d, indent=2))


def test_threshold_miss_fails_and_breaks_the_chain(tmp_path, micro):
    rep = tmp_path / "rep"
    run(DATA / "micro-2", rep, stage="micro")
    _edit_json(micro / "bench" / "speculative_single_context32k_3tokens.json",
               lambda d: d["throughput_tokens_per_sec"].update(mean=100.0))
    res = run(micro, rep, stage="micro")
    r = res["single32k_speedup_micro"]
    assert r.status == "FAIL" and "output_tokens_per_s = 1.616 does not satisfy >= 2" in r.reasons[0]
    assert consecutive_green(rep, "single32k_speedup_micro", load_contract(EXAMPLE).sha256) == 0


def test_log_violation_quotes_file_and_line(micro, tmp_path):
    log = micro / "logs" / "spec3_single32k.log"
    log.write_text(log.read_text() + "[TM][WARN] No feasible kernel for m=3 n=4096 k=4096, GEMM fallback\n")
    r = run(micro, tmp_path / "rep", stage="micro")["perf_logs_micro"]
    assert r.status == "FAIL"
    assert any("logs/spec3_single32k.log:10: [TM][WARN] No feasible kernel" in x for x in r.reasons), r.reasons


def test_parity_names_first_diverging_stage(micro, tmp_path):
    cand = dict(np.load(micro / "dumps" / "turbomind.npz"))
    cand["ffn_out"] = -cand["ffn_out"]
    cand["logits"] = cand["logits"][:, ::-1].copy()
    np.savez(micro / "dumps" / "turbomind.npz", **cand)
    r = run(micro, tmp_path / "rep", stage="micro")["draft_stage_parity"]
    assert r.status == "FAIL" and r.reasons[0].startswith("parity: first diverging stage ffn_out")
    assert "later: logits" in r.reasons[0]


def test_missing_rows_are_invalid_not_fail(micro, tmp_path):
    (micro / "bench" / "baseline_batch4_context16k.json").unlink()
    r = run(micro, tmp_path / "rep", stage="micro")["batch4_16k_speedup_micro"]
    assert r.status == "INVALID" and "no result rows for scenario 'batch4-16k-base-micro'" in r.reasons[0]


@pytest.mark.parametrize("breakage, needles", [
    (lambda d: (d / "bench" / "baseline_single_context32k.json").write_text("{\"throughput_tokens_per_sec\": "),
     ["bench/baseline_single_context32k.json", "JSON syntax"]),
    (lambda d: _edit_json(d / "bench" / "speculative_single_context32k_3tokens.json",
                          lambda j: j["eagle_speculation"].pop("mean_acceptance_length")),
     ["bench/speculative_single_context32k_3tokens.json", "eagle_speculation.mean_acceptance_length"]),
    (lambda d: (d / "logs" / "spec3_single32k.log").write_text(
        "GEMM_TUNED loaded\n[EAGLE3][perf-summary] tuned_hits=9 total=ten\n"),
     ["logs/spec3_single32k.log:2", "'total'"]),
    (lambda d: (d / "dumps" / "turbomind.npz").write_bytes(b"not a zip"), ["dumps/turbomind.npz", "npz"]),
])
def test_malformed_inputs_one_line_everywhere(micro, tmp_path, capsys, breakage, needles):
    breakage(micro)
    with pytest.raises(ValueError) as e:
        run(micro, tmp_path / "rep", stage="micro")
    assert "\n" not in str(e.value) and all(n in str(e.value) for n in needles), str(e.value)
    rc = cli(["gates", "--contract", str(EXAMPLE), "--results", str(micro), "--reports", str(tmp_path / "rep"),
              "--record"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and err.startswith("eagle4 gates: error:"), err
    assert not (tmp_path / "rep" / LEDGER).exists()  # nothing recorded from a bad run


def test_result_format_error_is_a_value_error():
    assert issubclass(ResultFormatError, ValueError)


def test_engine_contract_needs_results(tmp_path, capsys):
    rc = cli(["gates", "--contract", str(EXAMPLE), "--reports", str(tmp_path)])
    assert rc == 2 and "give --results DIR" in capsys.readouterr().err
    rc = cli(["gates", "--contract", str(EXAMPLE), "--reports", str(tmp_path), "--results", str(tmp_path / "no")])
    assert rc == 2 and "results folder does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("edit, field", [
    (lambda s: s.replace('scenario = "single32k-spec3-micro"\nop', 'scenario = "nope"\nop', 1), "scenario 'nope'"),
    (lambda s: s.replace('baseline = "single32k-base-full"', 'baseline = "single32k-base-micro"'), "micro scenario"),
    (lambda s: s.replace('logs = "perf_run"', 'logs = "perf"', 1), "logs 'perf'"),
    (lambda s: s.replace("min_topk_overlap = 0.8", "min_topk_overlap = 1.5"), "min_topk_overlap"),
    (lambda s: s.replace('metric = "mean_acceptance_length"', 'metric = "mean_accept_length"', 1),
     "did you mean 'mean_acceptance_length'"),
    (lambda s: s.replace("'No feasible kernel',", "'No feasible (kernel',"), "not a regex"),
    (lambda s: s + '\n[model]\ntarget = "t"\ndraft = "d"\n', "belong to a workload contract"),
    (lambda s: s.replace('stage = "micro"\n\n[[gates]]\nname = "single32k_acceptance_micro"',
                         'stage = "micro"\nartifacts = ["x.csv"]\n\n[[gates]]\nname = "single32k_acceptance_micro"'),
     "['artifacts'] belong to workload gates"),
])
def test_contract_errors_name_the_field(tmp_path, edit, field):
    p = tmp_path / "c.toml"
    p.write_text(edit(EXAMPLE.read_text()))
    with pytest.raises(ContractError) as e:
        load_contract(p)
    assert field in str(e.value) and "c.toml" in str(e.value)


def test_old_ledger_is_upgraded_in_place(tmp_path):
    rep = tmp_path / "rep"
    rep.mkdir()
    old = LEDGER_COLUMNS[:-1]
    with open(rep / LEDGER, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=old)
        w.writeheader()
        w.writerow({k: "x" for k in old})
    run(DATA / "micro-1", rep, stage="micro")
    with open(rep / LEDGER, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == LEDGER_COLUMNS and rows[0]["gate"] == "x" and rows[-1]["evidence"]


def test_pytest_gate_suite_on_engine_results(tmp_path):
    cmd = [sys.executable, "-m", "pytest", "tests/gates", "--contract", str(EXAMPLE), "-p", "no:cacheprovider",
           "-p", "no:xdist", "--reports-dir", str(tmp_path / "rep"), "-q"]
    ok = run_bounded(cmd + ["--results", str(DATA / "micro-1"), "--stage", "micro"], 300, cwd=REPO)
    assert ok.returncode == 0, ok.stdout[-3000:]
    assert "6 passed, 5 skipped" in ok.stdout and "VERDICT: NOT SIGNED OFF" in ok.stdout
    assert "deselected the FPGA design tests of ['test_onchip_budget.py']" in ok.stdout
    blocked = run_bounded(cmd + ["--results", str(DATA / "full")], 300, cwd=REPO)
    assert blocked.returncode == 1 and "BLOCKED" in blocked.stdout
    bad = tmp_path / "bad"
    shutil.copytree(DATA / "micro-1", bad)
    (bad / "bench" / "meta.json").unlink()
    broken = run_bounded(cmd + ["--results", str(bad)], 300, cwd=REPO)
    assert broken.returncode == 1 and "field 'commit': missing" in broken.stdout

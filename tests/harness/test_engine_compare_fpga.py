"""FPGA-vs-H100 comparison, like for like: the gate accepts only measured FPGA rows of the same contract
and approximations, against H100 points that pass the contract's run rule; modelled numbers are reported
separately and only against an H100 that ran the same model shape; a gap report names the top-2
bottlenecks."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from eagle4.contract import ContractMismatch, load_contract
from eagle4.perf.records import baseline_file
from eagle4.workload.compare_fpga import compare
from eagle4.workload.runner import PROFILE_FIELDS, RAW_FIELDS, RUN_FIELDS

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.cpu


def _write(path, fields, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def _rows(sha, itl, tps, acc, provenance="measured", device="NVIDIA H100", n_runs=5, spread=0.0, **extra):
    raw, runs = [], []
    for i in range(n_runs):
        t = tps * (1 + spread * (i - (n_runs - 1) / 2))
        for j in range(2):
            raw.append({"contract_sha256": sha, "point": "b1", "batch": 1, "run_index": i, "request_index": j,
                        "output_tokens": 64, "ttft_s": 0.01, "e2e_s": 64 / t, "itl_s": ";".join([str(itl)] * 63),
                        "itl_p99_s": itl, "acceptance_length": acc, "provenance": provenance, "device": device,
                        "model_device": device, **extra})
        runs.append({"contract_sha256": sha, "point": "b1", "batch": 1, "run_index": i, "tokens_per_s": t, "wall_s": 5.0,
                     "mean_acceptance_length": acc, "provenance": provenance})
    return raw, runs


FIELDS_X = RAW_FIELDS + ["approximations", "model_hidden_size", "model_vocab_size"]


@pytest.fixture()
def setup(tmp_path):
    c = load_contract(ROOT / "contracts" / "default.toml")
    raw, runs = _rows(c.sha256, 0.002, 500.0, 3.0)
    _write(tmp_path / "h100_baseline_raw.csv", RAW_FIELDS, raw)
    _write(tmp_path / "h100_baseline_runs.csv", RUN_FIELDS, runs)
    prof = [{"contract_sha256": c.sha256, "point": "b1", "batch": 1, "run_index": i, "region": r, "kind": "k",
             "seconds": s, "calls": 1, "share_of_step": 0, "step_seconds": 1.0, "steps": 10}
            for i in range(5) for r, s in (("target_verify", 0.4), ("K5_logits_to_probas", 0.3), ("K6_reject_sample", 0.1))]
    _write(tmp_path / "h100_baseline_profile.csv", PROFILE_FIELDS, prof)
    return c, tmp_path


def test_no_measured_fpga_means_no_signoff(setup):
    c, d = setup
    res = compare(c, d / "h100_baseline_raw.csv", d, run_csim=False)
    assert not res["signed_off"]
    md = (d / "fpga_vs_h100_summary.md").read_text()
    assert "NO MEASURED FPGA DATA" in md and "Gap report" in md
    assert "target_verify" in md and "K5_logits_to_probas" in md  # top-2 bottlenecks named
    assert (d / "fpga_vs_h100_raw.csv").exists()


def test_modelled_rows_never_sign_off(setup):
    c, d = setup
    raw, _ = _rows(c.sha256, 0.0001, 5000.0, 3.0, provenance="model", device="budget model", approximations="exact")
    _write(d / "fpga.csv", FIELDS_X, raw)
    res = compare(c, d / "h100_baseline_raw.csv", d, fpga_measured=d / "fpga.csv", run_csim=False)
    assert not res["signed_off"]
    assert "10 non-measured rows ignored" in (d / "fpga_vs_h100_summary.md").read_text()


def test_measured_fpga_gate(setup):
    c, d = setup
    raw, _ = _rows(c.sha256, 0.001, 400.0, 3.0, device="xcv80", approximations="exact")   # better ITL p99
    _write(d / "fpga.csv", FIELDS_X, raw)
    res = compare(c, d / "h100_baseline_raw.csv", d, fpga_measured=d / "fpga.csv", run_csim=False)
    assert "| PASS |" in (d / "fpga_vs_h100_summary.md").read_text()
    assert not res["signed_off"]  # csim leg not run: still no sign-off
    raw, _ = _rows(c.sha256, 0.003, 200.0, 3.0, device="xcv80", approximations="exact")   # worse ITL, lower tok/s
    _write(d / "fpga.csv", FIELDS_X, raw)
    compare(c, d / "h100_baseline_raw.csv", d, fpga_measured=d / "fpga.csv", run_csim=False)
    assert "| SHORT |" in (d / "fpga_vs_h100_summary.md").read_text()


def test_other_contract_is_refused(setup):
    c, d = setup
    raw, _ = _rows("f" * 64, 0.001, 400.0, 3.0)
    _write(d / "fpga.csv", RAW_FIELDS, raw)
    with pytest.raises(ContractMismatch):
        compare(c, d / "h100_baseline_raw.csv", d, fpga_measured=d / "fpga.csv", run_csim=False)


def test_missing_baseline_is_a_clear_error(setup):
    c, d = setup
    with pytest.raises(FileNotFoundError, match="bench_h100_e2e.sh"):
        compare(c, d / "nope.csv", d, run_csim=False)


def _sheet(c, d):
    from eagle4.budget.config import fpga_section
    from eagle4.budget.model import DRAFT_STAGES, VERIFY_STAGES

    fclk = round(fpga_section(c).fclk_public_estimate_mhz, 2)
    rows = [{"contract_sha256": c.sha256, "backend": "fused", "stage": st, "batch": 1, "fclk_mhz": fclk, "T_us": 10.0}
            for st in DRAFT_STAGES + VERIFY_STAGES]
    _write(d / "sheet.csv", ["contract_sha256", "backend", "stage", "batch", "fclk_mhz", "T_us"], rows)
    return len(DRAFT_STAGES + VERIFY_STAGES) - 1  # draft LM head excluded


def test_modelled_leg_needs_an_h100_at_deployment_shape_with_the_same_approximations(setup):
    from eagle4.budget.config import fpga_section
    from eagle4.workload.compare_fpga import fused_approximations

    c, d = setup
    n_stages = _sheet(c, d)
    m = fpga_section(c).model
    raw, runs = _rows(c.sha256, 0.002, 500.0, 3.0, approximations=fused_approximations(c),
                      model_hidden_size=m.hidden_size, model_vocab_size=m.vocab_size)
    _write(d / "h100_baseline_raw.csv", FIELDS_X, raw)
    _write(d / "h100_baseline_runs.csv", RUN_FIELDS, runs)
    res = compare(c, d / "h100_baseline_raw.csv", d, budget_sheet=d / "sheet.csv", run_csim=False)
    model = [r for r in res["raw"] if r["provenance"] == "model"]
    assert len(model) == 1 and model[0]["side"] == "fpga" and model[0]["approximations"] == fused_approximations(c)
    # ITL_h100 * (1 - share(K*, host_*)) + T / acceptance = 2 ms * 0.6 + n*10 us / 3
    assert model[0]["value"] == pytest.approx(0.002 * 0.6 + n_stages * 10e-6 / 3.0)
    assert not res["signed_off"]
    # the same H100 rows without the approximations (the exact draft): not like for like
    raw, _ = _rows(c.sha256, 0.002, 500.0, 3.0, model_hidden_size=m.hidden_size, model_vocab_size=m.vocab_size)
    _write(d / "h100_baseline_raw.csv", FIELDS_X, raw)
    res = compare(c, d / "h100_baseline_raw.csv", d, budget_sheet=d / "sheet.csv", run_csim=False)
    assert not [r for r in res["raw"] if r["provenance"] == "model"]
    assert "approximations differ" in (d / "fpga_vs_h100_summary.md").read_text()


def test_modelled_fpga_never_combined_with_the_toy_model(setup):
    """The default contract's H100 ran the embedded pair: the deployment-shape budget model is not
    combined with it."""
    c, d = setup
    _sheet(c, d)
    res = compare(c, d / "h100_baseline_raw.csv", d, budget_sheet=d / "sheet.csv", run_csim=False)
    assert not [r for r in res["raw"] if r["provenance"] == "model"]
    assert "never combined with a toy-model H100 number" in (d / "fpga_vs_h100_summary.md").read_text()


@pytest.mark.parametrize("n_runs, spread, why", [(5, 0.05, "CoV .* over the contract.s limit"), (4, 0.0, r"4 run\(s\)")])
def test_only_baseline_points_that_pass_the_run_rule(setup, n_runs, spread, why):
    c, d = setup
    raw, runs = _rows(c.sha256, 0.002, 500.0, 3.0, n_runs=n_runs, spread=spread)
    _write(d / "h100_baseline_raw.csv", RAW_FIELDS, raw)
    _write(d / "h100_baseline_runs.csv", RUN_FIELDS, runs)
    fraw, _ = _rows(c.sha256, 0.0001, 5000.0, 3.0, device="xcv80", approximations="exact")
    _write(d / "fpga.csv", FIELDS_X, fraw)
    with pytest.raises(RuntimeError, match=why):
        compare(c, d / "h100_baseline_raw.csv", d, fpga_measured=d / "fpga.csv", run_csim=False)
    assert not (d / "fpga_vs_h100_raw.csv").exists(), "nothing written from a noisy baseline"


def test_different_approximations_are_not_compared(setup):
    c, d = setup
    fraw, _ = _rows(c.sha256, 0.0001, 5000.0, 3.0, device="xcv80", approximations="hot_vocab+int8_lm_head")
    _write(d / "fpga.csv", FIELDS_X, fraw)
    res = compare(c, d / "h100_baseline_raw.csv", d, fpga_measured=d / "fpga.csv", run_csim=False)
    md = (d / "fpga_vs_h100_summary.md").read_text()
    assert "NOT COMPARABLE" in md and "| PASS |" not in md and not res["signed_off"]
    assert "different approximations" in res["verdict"]
    # an H100 with the same approximations (FR-spec hot vocabulary, int8 head) is compared
    raw, runs = _rows(c.sha256, 0.002, 500.0, 3.0, approximations="int8_lm_head+hot_vocab")
    _write(d / "h100_baseline_raw.csv", FIELDS_X, raw)
    compare(c, d / "h100_baseline_raw.csv", d, fpga_measured=d / "fpga.csv", run_csim=False)
    assert "| PASS |" in (d / "fpga_vs_h100_summary.md").read_text()


def test_measured_fpga_rows_must_name_their_approximations(setup):
    c, d = setup
    fraw, _ = _rows(c.sha256, 0.001, 400.0, 3.0, device="xcv80")
    _write(d / "fpga.csv", RAW_FIELDS, fraw)
    with pytest.raises(ValueError, match="approximations"):
        compare(c, d / "h100_baseline_raw.csv", d, fpga_measured=d / "fpga.csv", run_csim=False)


def test_reads_the_http_client_output(setup):
    """A baseline measured through `eagle4 workload http` (its CSV columns) is a valid input."""
    from eagle4.workload import http_client as H

    c, d = setup
    raw, runs = _rows(c.sha256, 0.002, 500.0, 3.0, device="sglang server http://h100:30000")
    _write(d / "http_raw.csv", H.RAW_FIELDS, raw)
    _write(d / "http_runs.csv", H.RUN_FIELDS, runs)
    res = compare(c, d / "http_raw.csv", d, run_csim=False)
    h = {r["metric"]: r["value"] for r in res["raw"] if r["side"] == "h100"}
    assert h["tokens_per_s"] == pytest.approx(500.0) and h["itl_p99_s"] == pytest.approx(0.002)


def test_a_dummy_load_contract_is_refused_naming_where_its_comparison_is(tmp_path):
    """deployment-8b has no prompts or local pair for the csim leg: one line naming the contract, the
    field and the command that compares its fused steps with the H100's."""
    c = load_contract(ROOT / "contracts" / "deployment-8b.toml")
    with pytest.raises(ValueError, match=r"deployment-8b.toml: model.load = 'dummy'.*eagle4 budget --contract"):
        compare(c, baseline_file(c, "h100_e2e_raw.csv"), tmp_path)
    assert not any(tmp_path.iterdir())  # nothing written

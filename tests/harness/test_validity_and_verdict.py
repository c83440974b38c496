"""One validity decision (eagle4.validity), weakest provenance wins (eagle4.provenance), and one
sign-off verdict (eagle4.gates.verdict)."""

from __future__ import annotations

import csv

import pytest
from csv_rows import write_rows  # this folder, as oracles_verify

from eagle4 import provenance as prov
from eagle4.contract import contract_sha256, load_contract
from eagle4.gates import decide, evaluate_all, summary
from eagle4.validity import RunRule, summarize_runs

pytestmark = pytest.mark.cpu


def test_weakest_provenance_order():
    assert prov.weakest(["measured", "csim+computed"]) == "computed"
    assert prov.parts("csim+computed") == ["computed", "csim"]
    assert prov.weakest([]) is None
    with pytest.raises(prov.ProvenanceError, match="unknown provenance"):
        prov.parts("guessed")


def test_run_rule_comes_from_the_contract():
    c = load_contract("contracts/default.toml", verify_files=False)
    r = RunRule.from_contract(c)
    assert (r.min_runs, r.cov_max, r.min_duration_s) == (c.runs.runs, c.runs.cov_max, c.runs.min_duration_s)
    assert RunRule.from_contract({"runs": {"cov_max": 0.1}}).cov_max == 0.1


def test_validity_from_raw_rows():
    rule = RunRule(min_runs=5, cov_max=0.05, min_duration_s=1.0)
    rows = [{"v": v, "wall_s": 2.0, "provenance": "measured", "contract_sha256": "a" * 64} for v in (100, 101, 99, 100, 100)]
    s = summarize_runs(rows, value="v", rule=rule, duration="wall_s", contract_sha256="a" * 64)
    assert s.valid and s.median == 100 and s.weakest_provenance == "measured"
    s = summarize_runs(rows[:4], value="v", rule=rule)
    assert not s.valid and ">= 5" in s.reasons[0]
    noisy = [dict(r, v=v) for r, v in zip(rows, (100, 150, 60, 100, 100), strict=True)]
    assert "over the contract's limit" in " ".join(summarize_runs(noisy, value="v", rule=rule).reasons)
    short = [dict(r, wall_s=0.5) for r in rows]
    assert "minimum" in " ".join(summarize_runs(short, value="v", rule=rule, duration="wall_s").reasons)
    other = [dict(r, contract_sha256="b" * 64) for r in rows]
    assert "bbbbbbbbbbbb" in " ".join(summarize_runs(other, value="v", rule=rule, contract_sha256="a" * 64).reasons)
    mixed = rows[:4] + [dict(rows[4], provenance="model")]
    assert summarize_runs(mixed, value="v", rule=rule).weakest_provenance == "model"


def test_cov_check_reaches_the_throughput_gate(tmp_path):
    gate = {"name": "tput", "metric": "throughput", "comparison": "ratio", "run": "spec", "baseline": "baseline",
            "op": ">=", "threshold": 1.5, "provenance": ["measured"], "artifacts": ["reports/throughput.csv"]}
    c = {"contract": {"name": "t"}, "runs": {"cov_max": 0.05}, "gates": [gate]}
    sha = contract_sha256(c)
    write_rows(tmp_path / "reports" / "throughput.csv",
           [{"contract_sha256": sha, "run": "spec", "tokens_per_s": v, "provenance": "measured"}
            for v in (300, 200, 100, 250, 210)]
           + [{"contract_sha256": sha, "run": "baseline", "tokens_per_s": v, "provenance": "measured"}
              for v in (100, 101, 99, 100, 98)])
    (r,) = evaluate_all(c, tmp_path / "reports", root=tmp_path)
    assert r.status == "INVALID" and "CoV" in " ".join(r.reasons) and "throughput(spec)" in " ".join(r.reasons)


def _bytes(tmp_path, c, counted_prov):
    sha = contract_sha256(c)
    rows = []
    for backend, lm, dr in (("unfused", 300.0, 100.0), ("fused", 37.0, 63.0)):
        rows += [{"contract_sha256": sha, "backend": backend, "component": "lm", "batch": "all",
                  "bytes_per_token": lm, "provenance": counted_prov},
                 {"contract_sha256": sha, "backend": backend, "component": "drafter", "batch": "all",
                  "bytes_per_token": dr, "provenance": "computed"},
                 {"contract_sha256": sha, "backend": backend, "component": "TOTAL", "batch": "all",
                  "bytes_per_token": lm + dr, "provenance": f"{counted_prov}+computed"}]
    write_rows(tmp_path / "reports" / "bytes_per_token.csv", rows)
    return tmp_path / "reports"


def test_relabelling_counted_rows_measured_does_not_sign_off_computed_bytes(tmp_path):
    g = {"name": "bytes", "metric": "bytes_per_token_ratio", "op": ">=", "threshold": 2.0,
         "provenance": ["csim", "measured"], "signoff_provenance": ["measured"],
         "artifacts": ["reports/bytes_per_token.csv"]}
    c = {"contract": {"name": "t"}, "gates": [g]}
    rep = _bytes(tmp_path, c, "measured")
    (r,) = evaluate_all(c, rep, root=tmp_path, hw="fpga")
    assert r.status == "INVALID" and "weakest provenance 'computed'" in " ".join(r.reasons)
    assert r.provenance[0] == "computed"
    (r,) = evaluate_all(c, rep, root=tmp_path, hw="cpu")  # development mode: says what sign-off will judge
    assert r.status == "PASS" and "weakest provenance is 'computed' (63% of the fused" in " ".join(r.notes)


def test_one_verdict_with_every_reason_and_report_misses(tmp_path):
    gates = [{"name": "g", "metric": "acceptance_length_impact", "op": "<=", "threshold": 0.02,
              "provenance": ["measured"], "signoff_provenance": ["measured"]},
             {"name": "r", "metric": "acceptance_length_impact", "op": "<=", "threshold": 0.001, "kind": "report",
              "provenance": ["measured"], "signoff_provenance": ["measured"]},
             {"name": "f", "metric": "mean_acceptance_length", "op": ">=", "threshold": 3.0, "hw": ["fpga"]}]
    c = {"contract": {"name": "t"}, "gates": gates}
    write_rows(tmp_path / "reports" / "acceptance_impact.csv",
           [{"impact": 0.01, "provenance": "measured", "contract_sha256": contract_sha256(c)}])
    res = evaluate_all(c, tmp_path / "reports", root=tmp_path, hw="cpu")
    v = decide(res, hw="cpu")
    assert not v.signed_off and v.word == "NOT SIGNED OFF"
    assert any("--hw=cpu" in x for x in v.reasons) and any("gate f not evaluated" in x for x in v.reasons)
    assert v.report_misses and v.report_misses[0].startswith("r:")
    text = summary(res, hw="cpu")
    assert "VERDICT: NOT SIGNED OFF" in text and "report-only miss: r" in text
    res = evaluate_all(c, tmp_path / "reports", root=tmp_path, hw="fpga")
    v = decide(res, hw="fpga")  # f has no artifact: INVALID, not evaluated -> still not signed off
    assert not v.signed_off and any(x.startswith("gate f ") for x in v.reasons)
    assert decide([r for r in res if r.name == "g"], hw="fpga").signed_off


def test_byte_gate_refuses_figures_drawn_from_a_changed_acceptance_csv(tmp_path):
    from eagle4.contract import sha256_file

    g = {"name": "bytes", "metric": "bytes_per_token_ratio", "op": ">=", "threshold": 2.0,
         "provenance": ["csim", "measured"], "artifacts": ["reports/bytes_per_token.csv"]}
    c = {"contract": {"name": "t"}, "gates": [g]}
    acc = tmp_path / "reports" / "acceptance_lengths.csv"
    write_rows(acc, [{"contract_sha256": contract_sha256(c), "accept_length": 2, "provenance": "measured"}])
    rep = _bytes(tmp_path, c, "csim")
    rows = list(csv.DictReader(open(rep / "bytes_per_token.csv")))
    write_rows(rep / "bytes_per_token.csv", [dict(r, accept_source="reports/acceptance_lengths.csv",
                                              accept_sha256=sha256_file(acc)) for r in rows])
    (r,) = evaluate_all(c, rep, root=tmp_path)
    assert r.status == "PASS"
    write_rows(acc, [{"contract_sha256": contract_sha256(c), "accept_length": 4, "provenance": "measured"}])
    (r,) = evaluate_all(c, rep, root=tmp_path)
    assert r.status == "INVALID" and "acceptance input changed" in " ".join(r.reasons)

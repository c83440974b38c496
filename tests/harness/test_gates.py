"""Gate schema, evaluation, ledger ordering and the VALID/INVALID summary (eagle4.gates)."""

from __future__ import annotations

import pytest
from csv_rows import write_rows  # this folder, as oracles_verify

from eagle4.budget.trace import contract_sha256
from eagle4.gates import GateError, consecutive_green, evaluate_all, load_gates, summary


def _bytes_rows(sha, unf, fus, comps, batch=4):
    """bytes_per_token.csv as `eagle4 budget` writes it, for one operating point (pooled == the point)."""
    rows = []
    for backend, tot in (("unfused", unf), ("fused", fus)):
        for comp, (bpt, prov) in comps[backend].items():
            for b in ("all", batch):
                rows.append({"contract_sha256": sha, "backend": backend, "component": comp, "batch": b,
                             "bytes_per_token": bpt, "provenance": prov})
        rows.append({"contract_sha256": sha, "backend": backend, "component": "TOTAL", "batch": "all",
                     "bytes_per_token": tot, "provenance": "csim+computed"})
        rows.append({"contract_sha256": sha, "backend": backend, "component": "TOTAL_POINT", "batch": batch,
                     "bytes_per_token": tot, "provenance": "csim+computed"})
    rows.append({"contract_sha256": sha, "backend": "ratio", "component": "effective", "batch": batch,
                 "bytes_per_token": unf / fus, "provenance": "csim+computed"})
    return rows


def _contract(gates):
    return {"contract": {"name": "t"}, "gates": gates}


BYTE_GATE = {"name": "bytes_final", "metric": "bytes_per_token_ratio", "op": ">=", "threshold": 4.0,
             "provenance": ["csim", "measured"], "artifacts": ["reports/bytes_per_token.csv"]}


def _reports(tmp_path, c, unf=400.0, fus=100.0):
    comps = {"unfused": {"lm": (300.0, "csim"), "drafter": (100.0, "computed")},
             "fused": {"lm": (60.0, "csim"), "drafter": (40.0, "computed")}}
    write_rows(tmp_path / "reports" / "bytes_per_token.csv", _bytes_rows(contract_sha256(c), unf, fus, comps))
    return tmp_path / "reports"


def test_schema_errors():
    with pytest.raises(GateError, match="baseline"):
        load_gates([{"name": "g", "metric": "throughput", "comparison": "ratio", "threshold": 2}])
    with pytest.raises(GateError, match="unknown gate"):
        load_gates([{"name": "g", "metric": "x", "threshold": 1, "after": ["nope"]}])
    with pytest.raises(GateError, match="duplicate"):
        load_gates([{"name": "g", "metric": "x", "threshold": 1}, {"name": "g", "metric": "x", "threshold": 1}])
    with pytest.raises(GateError):
        load_gates([{"name": "g", "metric": "x", "threshold": 1, "bogus": 2}])


def test_default_contract_gates_validate():
    gates = load_gates("contracts/default.toml")
    names = {g.name for g in gates}
    assert {"bytes_reduction_early", "bytes_reduction_final", "approximation_acceptance_impact"} <= names


def test_byte_gate_pass_and_fail_with_top_contributors(tmp_path):
    c = _contract([BYTE_GATE])
    rep = _reports(tmp_path, c)
    (r,) = evaluate_all(c, rep, root=tmp_path)
    assert r.status == "PASS" and r.valid and r.value == pytest.approx(4.0)
    rep = _reports(tmp_path, c, unf=300.0, fus=100.0)
    (r,) = evaluate_all(c, rep, root=tmp_path)
    assert r.status == "FAIL" and not r.valid
    text = " ".join(r.reasons)
    assert "top contributor: lm" in text and "top contributor: drafter" in text and "MiB/token" in text


def test_missing_artifact_and_missing_provenance_are_invalid(tmp_path):
    c = _contract([BYTE_GATE])
    (r,) = evaluate_all(c, tmp_path / "reports", root=tmp_path)
    assert r.status == "INVALID" and "missing artifact reports/bytes_per_token.csv" in " ".join(r.reasons)
    write_rows(tmp_path / "reports" / "bytes_per_token.csv", [{"backend": "unfused", "component": "TOTAL", "x": 1}])
    (r,) = evaluate_all(c, tmp_path / "reports", root=tmp_path)
    assert r.status == "INVALID" and "provenance" in " ".join(r.reasons)


def test_stale_artifact_from_another_contract_is_invalid(tmp_path):
    c = _contract([BYTE_GATE])
    rep = _reports(tmp_path, _contract([]))  # written under a different contract
    (r,) = evaluate_all(c, rep, root=tmp_path)
    assert r.status == "INVALID" and "produced under contract" in " ".join(r.reasons)


def test_approximation_gate_is_invalid_until_measured(tmp_path):
    g = {"name": "approx", "metric": "acceptance_length_impact", "op": "<=", "threshold": 0.02,
         "provenance": ["measured"], "artifacts": ["reports/acceptance_impact.csv"]}
    (r,) = evaluate_all(_contract([g]), tmp_path / "reports", root=tmp_path)
    assert r.status == "INVALID" and not r.passed and "missing" in r.reasons[0]
    row = {"approximation": "hot+int8", "impact": 0.01, "provenance": "measured"}
    write_rows(tmp_path / "reports" / "acceptance_impact.csv", [row])  # no contract hash: refused
    (r,) = evaluate_all(_contract([g]), tmp_path / "reports", root=tmp_path)
    assert r.status == "INVALID" and "no contract_sha256" in " ".join(r.reasons)
    write_rows(tmp_path / "reports" / "acceptance_impact.csv", [{"contract_sha256": contract_sha256(_contract([g])), **row}])
    (r,) = evaluate_all(_contract([g]), tmp_path / "reports", root=tmp_path)
    assert r.status == "PASS"


def test_ratio_gate_spec_vs_baseline_and_acceptance(tmp_path):
    gates = [{"name": "tput", "metric": "throughput", "comparison": "ratio", "run": "spec", "baseline": "baseline",
              "op": ">=", "threshold": 2.0, "provenance": ["measured"], "artifacts": ["reports/throughput.csv"]},
             {"name": "acc", "metric": "mean_acceptance_length", "op": ">=", "threshold": 3.0,
              "provenance": ["measured"], "artifacts": ["reports/acceptance_lengths.csv"]}]
    sha = contract_sha256(_contract(gates))
    write_rows(tmp_path / "reports" / "throughput.csv",
           [{"contract_sha256": sha, "run": "spec", "tokens_per_s": v, "provenance": "measured"}
            for v in (210, 200, 205, 199, 201)]
           + [{"contract_sha256": sha, "run": "baseline", "tokens_per_s": v, "provenance": "measured"}
              for v in (100, 101, 99, 100, 98)])
    write_rows(tmp_path / "reports" / "acceptance_lengths.csv",
           [{"contract_sha256": sha, "accept_length": a - 1, "tokens_committed": a, "provenance": "measured"}
            for a in (3, 4, 2, 4)])
    r1, r2 = evaluate_all(_contract(gates), tmp_path / "reports", root=tmp_path)
    assert r1.status == "PASS" and r1.value == pytest.approx(201 / 100)
    assert r2.status == "PASS" and r2.value == pytest.approx(3.25)


def test_ordering_rule_needs_three_consecutive_green_runs(tmp_path):
    full = {"name": "full", "metric": "mean_acceptance_length", "op": ">=", "threshold": 0, "provenance": ["measured"],
            "after": ["bytes_final"], "after_consecutive": 3, "stage": "full"}
    c = _contract([BYTE_GATE, full])
    rep = _reports(tmp_path, c)
    sha = contract_sha256(c)
    write_rows(rep / "acceptance_lengths.csv", [{"contract_sha256": sha, "accept_length": 2, "provenance": "measured"}])
    for i in range(3):
        res = evaluate_all(c, rep, root=tmp_path, record_ledger=True)
        assert res[1].status == "BLOCKED", i
        assert consecutive_green(rep, "bytes_final", sha) == i + 1
    res = evaluate_all(c, rep, root=tmp_path, record_ledger=True)
    assert res[1].status == "PASS"
    # a red run resets the count
    _reports(tmp_path, c, unf=100.0, fus=100.0)
    evaluate_all(c, rep, root=tmp_path, record_ledger=True)
    assert consecutive_green(rep, "bytes_final", sha) == 0
    assert evaluate_all(c, rep, root=tmp_path)[1].status == "BLOCKED"


def test_fpga_mode_rejects_csim_and_summary_says_why(tmp_path):
    c = _contract([dict(BYTE_GATE, signoff_provenance=["measured"]),
                   {"name": "stretch", "metric": "bytes_per_token_ratio", "op": ">=", "threshold": 4.5,
                    "kind": "report", "report_band": [4.5, 5.0], "provenance": ["csim"]}])
    rep = _reports(tmp_path, c)
    res = evaluate_all(c, rep, root=tmp_path, hw="fpga")
    assert res[0].status == "INVALID" and "measured" in " ".join(res[0].reasons)
    res_cpu = evaluate_all(c, rep, root=tmp_path, hw="cpu")
    assert res_cpu[1].status == "REPORT" and res_cpu[1].valid and "below the 4.5-5 band" in res_cpu[1].reasons[0]
    assert "misses >= 4.5" in res_cpu[1].reasons[0]
    text = summary(res, contract_sha256=contract_sha256(c), hw="fpga")
    assert "GATES: 0 valid, 2 invalid" in text and "INVALID bytes_final" in text
    assert "VERDICT: NOT SIGNED OFF" in text
    cpu_text = summary(res_cpu, hw="cpu")
    # every gate valid on the CPU, yet no verdict word but NOT SIGNED OFF (sign-off needs --hw=fpga)
    assert "GATES: 2 valid, 0 invalid" in cpu_text and "VERDICT: NOT SIGNED OFF" in cpu_text
    assert "RESULT" not in cpu_text and cpu_text.count("VERDICT:") == 1


def test_cli_gates_exit_code(tmp_path, capsys):
    from eagle4.cli import main

    rc = main(["gates", "--contract", "contracts/default.toml", "--reports", str(tmp_path / "empty")])
    out = capsys.readouterr().out
    assert rc == 1 and "VERDICT: NOT SIGNED OFF" in out and "missing artifact" in out


def test_throughput_ratio_is_judged_per_operating_point_not_pooled(tmp_path):
    """A fast point must not hide a slow one: b1 2.5x, b8 1.2x -> the gate sees 1.2x (and names b8)."""
    gates = [{"name": "tput", "metric": "throughput", "comparison": "ratio", "run": "spec", "baseline": "baseline",
              "op": ">=", "threshold": 2.0, "provenance": ["measured"], "artifacts": ["reports/throughput.csv"]}]
    sha = contract_sha256(_contract(gates))

    def rows(run, point, vals):
        return [{"contract_sha256": sha, "run": run, "point": point, "tokens_per_s": v, "provenance": "measured"}
                for v in vals]

    spec = rows("spec", "b1", (250, 251, 249, 250, 250)) + rows("spec", "b8", (960, 961, 959, 960, 960))
    base = rows("baseline", "b1", (100, 101, 99, 100, 100)) + rows("baseline", "b8", (800, 801, 799, 800, 800))
    write_rows(tmp_path / "reports" / "throughput.csv", spec + base)
    (r,) = evaluate_all(_contract(gates), tmp_path / "reports", root=tmp_path)
    assert r.status == "FAIL" and r.value == pytest.approx(960 / 800)
    assert r.details["point"] == "b8" and r.details["per_point"]["b1"] == pytest.approx(2.5)
    # pooled over both points the medians would have been 605 / 450 = 1.34 with a CoV far over the limit;
    # a point the baseline lacks is missing evidence
    write_rows(tmp_path / "reports" / "throughput.csv", spec + base[:5])
    (r,) = evaluate_all(_contract(gates), tmp_path / "reports", root=tmp_path)
    assert r.status == "INVALID" and "no 'baseline' rows at point(s) ['b8']" in " ".join(r.reasons)

"""The FPGA-offload system step model (eagle4.workload.offload_model): schedule arithmetic against hand-computed
cases, weakest provenance wins, refusal of missing or foreign parts, break-even solves back to equality."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pytest

from eagle4.contract import load_contract
from eagle4.workload import offload_model as om

pytestmark = pytest.mark.cpu
ROOT = Path(__file__).resolve().parents[2]
DEVICE = "NVIDIA H100 80GB HBM3"  # the fixture's contract is judged on the H100 SXM (its [baseline] card)

# simple declared numbers: a 1 GB/s link with no fixed cost, 100 MHz, no drafter layers beyond the fused designs
FPGA = """
[fpga]
fclk_target_mhz = 100.0
hbm_peak_gbps = 1000.0
pcie_gbps = 1.0
pcie_latency_us = 0.0

[fpga.model]
drafter_layers = 0
drafter_fc_in = 0
"""
# per step at B=1 (S = 7, Q = T = 64, H = 4096, bf16 hidden): next_hidden 7*4096*2 + next_verified_id 7*4
# + next_positions 7*8 + next_seq_lens 8, then 4 K6 arrays 64*8 each + K4 tree_parent 64*8
BYTES_B1 = 7 * 4096 * 2 + 7 * 4 + 7 * 8 + 8 + 5 * 64 * 8  # 59996


@pytest.fixture(scope="module")
def contract(tmp_path_factory):
    d = tmp_path_factory.mktemp("c")
    p = d / "deployment-8b.toml"
    text = re.sub(r'(?m)^card = "[^"]*"', 'card = "H100 SXM"', (ROOT / "contracts" / "deployment-8b.toml").read_text())
    p.write_text(text + FPGA)
    (d / "data").symlink_to(ROOT / "data")  # the pinned trace, where the CLI's loader looks for it
    return load_contract(p)


def _points(path: Path, rows: list[dict], drop: tuple[str, ...] = ()) -> Path:
    cols = [c for c in om.GPU_COLUMNS if c not in drop]
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "e2e_points.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def _row(contract, point, batch, step, draft, verify, *, p50=None, p99=None, tps=100.0, prov="measured", **kw):
    r = {"point": point, "batch": batch, "itl_p50_s": p50 if p50 is not None else step,
         "itl_p99_s": p99 if p99 is not None else step * 1.1, "tokens_per_s_mean": tps, "acceptance_length": 4.0,
         "step_s_median": step, "draft_s_median": draft, "verify_s_median": verify, "device": DEVICE,
         "card": "H100 SXM", "contract_sha256": contract.sha256, "provenance": prov}
    r.update(kw)
    return r


def _sheet(path: Path, contract, cycles: dict[int, tuple[float, float]], prov="model") -> Path:
    """A budget sheet with the fused draft stages: {batch: (LM head cycles, draft step cycles)}."""
    fields = ["contract_sha256", "backend", "stage", "batch", "fclk_mhz", "B_in", "B_out", "C_total", "provenance"]
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        for b, (lm, ds) in cycles.items():
            for st, c, nb in (("draft_lm_head", lm, 1e6 * b), ("draft step (code-derived)", ds, 1e3 * b),
                              ("verify step (code-derived)", 100.0, 1e4 * b)):
                w.writerow({"contract_sha256": contract.sha256, "backend": "fused", "stage": st, "batch": b,
                            "fclk_mhz": 100.0, "B_in": nb, "B_out": 0, "C_total": c, "provenance": prov})
    return path


def test_link_bytes_are_the_abi_arrays_at_the_contracts_shapes(contract):
    up, down = om.link_bytes(contract, 1)
    assert (up, down) == (7 * 4096 * 2 + 7 * 4 + 7 * 8 + 8, 5 * 64 * 8)
    assert sum(om.link_bytes(contract, 4)) == 4 * BYTES_B1  # every array is linear in B
    nbytes, t = om.link_parts(contract, 1)
    assert nbytes.value == BYTES_B1 and t.value == pytest.approx(BYTES_B1 / 1e9)
    assert (nbytes.provenance, t.provenance) == ("computed", "declared")


def test_schedule_arithmetic_by_hand():
    assert om.series_step(other=0.002, verify=0.010, pcie=0.001, fpga_draft=0.004) == pytest.approx(0.017)
    assert om.overlapped_period(0.006, 0.002) == pytest.approx(0.012)  # GPU-bound: 2 x 6 ms
    assert om.overlapped_period(0.003, 0.005) == pytest.approx(0.010)  # FPGA-bound: 2 x 5 ms


def test_point_model_against_hand_computed_case(contract, tmp_path):
    # b1: step 20 ms = draft 6 + verify 12 + other 2; b2: step 24 = 7 + 15 + 2; b4: step 30 = 8 + 19 + 3
    rec = _points(tmp_path / "rec", [_row(contract, "b1", 1, 0.020, 0.006, 0.012, p50=0.021, p99=0.025, tps=200.0),
                                     _row(contract, "b2", 2, 0.024, 0.007, 0.015),
                                     _row(contract, "b4", 4, 0.030, 0.008, 0.019, p50=0.031, p99=0.040, tps=500.0)])
    # FPGA draft at 100 MHz: b1 200k + 100k cycles = 3 ms; b2 4 ms; b4 10 ms
    stages = om.read_fpga_stages(contract, _sheet(tmp_path / "s.csv", contract,
                                                  {1: (2e5, 1e5), 2: (3e5, 1e5), 4: (9e5, 1e5)}))
    gps = om.read_gpu_points(contract, rec, ["b1", "b2", "b4"])
    m1 = om.model_point(contract, gps["b1"], gps, stages)
    pcie1 = BYTES_B1 / 1e9
    b = m1.schedules["b"]
    assert b.step_s == pytest.approx(0.002 + 0.012 + pcie1 + 0.003)
    assert b.tokens_per_s == pytest.approx(200.0 * 0.020 / b.step_s)
    assert b.itl_p50_s == pytest.approx(0.021 + b.step_s - 0.020)
    assert b.itl_p99_s == pytest.approx(0.025 + b.step_s - 0.020)
    assert math.isnan(m1.schedules["c"].step_s) and "cannot be split" in m1.schedules["c"].note
    assert m1.break_even_b_s == pytest.approx(0.006 - pcie1)
    assert m1.gate.startswith("plan:")  # it wins on the model, which never signs off

    m4 = om.model_point(contract, gps["b4"], gps, stages)
    # micro-batch 2: GPU verify 15 + other 2 = 17 ms; link 2 x BYTES_B1 + FPGA 4 ms; period 2 x 17 = 34 ms
    c = m4.schedules["c"]
    assert m4.micro_batch == 2
    assert c.step_s == pytest.approx(2 * max(0.017, 2 * pcie1 + 0.004))
    assert c.tokens_per_s == pytest.approx(500.0 * 0.030 / c.step_s)
    assert c.itl_p99_s == pytest.approx(0.040 + c.step_s - 0.030)
    assert m4.break_even_c_s is None  # 2 x 17 ms > 30 ms: no FPGA latency makes (c) match (a)
    assert m4.schedules["b"].step_s == pytest.approx(0.003 + 0.019 + 4 * pcie1 + 0.010)  # 32.2 ms > 30 ms
    assert m4.gate.startswith("SHORT")
    assert any("draft_lm_head" in x for x in m4.bottlenecks)


def test_break_even_solves_back_to_equality(contract, tmp_path):
    # b2 (micro-batch 1): GPU step 40 ms, verify 10, other 4: 2 x 14 <= 40, so (c) has a break-even
    rec = _points(tmp_path / "rec", [_row(contract, "b1", 1, 0.020, 0.006, 0.010),
                                     _row(contract, "b2", 2, 0.040, 0.022, 0.014)])
    stages = om.read_fpga_stages(contract, _sheet(tmp_path / "s.csv", contract, {1: (2e5, 1e5), 2: (3e5, 1e5)}))
    gps = om.read_gpu_points(contract, rec, ["b1", "b2"])
    m = om.model_point(contract, gps["b2"], gps, stages)
    a = m.schedules["a"].step_s
    _, pcie2 = om.link_parts(contract, 2)
    _, pcie1 = om.link_parts(contract, 1)
    assert om.series_step(0.004, 0.014, pcie2.value, m.break_even_b_s) == pytest.approx(a)
    g = 0.010 + (0.020 - 0.006 - 0.010)  # micro-batch 1 is the measured b1
    assert om.overlapped_period(g, pcie1.value + m.break_even_c_s) == pytest.approx(a)


def test_weakest_provenance_wins(contract, tmp_path):
    rec = _points(tmp_path / "rec", [_row(contract, "b1", 1, 0.020, 0.006, 0.012),
                                     _row(contract, "b2", 2, 0.024, 0.007, 0.015, prov="measured")])
    stages = om.read_fpga_stages(contract, _sheet(tmp_path / "s.csv", contract, {1: (2e5, 1e5), 2: (3e5, 1e5)},
                                                  prov="measured"))
    gps = om.read_gpu_points(contract, rec, ["b1", "b2"])
    m = om.model_point(contract, gps["b1"], gps, stages)
    assert m.schedules["a"].provenance == "measured"
    # measured GPU and FPGA, but the link is declared and its bytes computed: the figure is declared
    assert m.schedules["b"].provenance == "declared" and m.gate_provenance == "declared"
    assert not m.gate.startswith("PASS")
    assert om.weakest([om.Part("x", 1, "s", "csim", ""), om.Part("y", 1, "s", "model", "")]) == "model"


@pytest.mark.parametrize("change, match", [
    ({"contract_sha256": "f" * 64}, "is not this contract's"),
    ({"card": "H200"}, "is not the record's card 'H100 SXM'"),
    ({"device": "NVIDIA H200"}, "is a H200, not the record's card"),
])
def test_foreign_parts_are_refused(contract, tmp_path, change, match):
    rec = _points(tmp_path / "rec", [_row(contract, "b1", 1, 0.02, 0.006, 0.012, **change)])
    with pytest.raises(om.OffloadRefused, match=match):
        om.read_gpu_points(contract, rec, ["b1"])


def test_a_card_folder_names_the_card_its_rows_must_be(contract, tmp_path):
    """A record under reports/cards/<slug>/ is that card's (the H200 record of a contract judged on the H100 is
    modelled as the H200's); a row of another card in it is refused."""
    h200 = tmp_path / "cards" / "h200" / "deployment-8b"
    _points(h200, [_row(contract, "b1", 1, 0.02, 0.006, 0.012, card="H200", device="NVIDIA H200")])
    assert om.read_gpu_points(contract, h200, ["b1"])["b1"].parts["step_s_median"].card == "H200"
    _points(h200, [_row(contract, "b1", 1, 0.02, 0.006, 0.012)])  # H100 SXM rows
    with pytest.raises(om.OffloadRefused, match="is not the record's card 'H200'"):
        om.read_gpu_points(contract, h200, ["b1"])


def test_missing_parts_are_refused(contract, tmp_path):
    # today's H100 rows have no draft/verify split: refused naming the column, never guessed
    rec = _points(tmp_path / "a", [_row(contract, "b1", 1, 0.02, 0.006, 0.012)], drop=("draft_s_median",))
    with pytest.raises(om.OffloadRefused, match="no column draft_s_median"):
        om.read_gpu_points(contract, rec, ["b1"])
    rec = _points(tmp_path / "b", [_row(contract, "b1", 1, 0.02, 0.006, 0.012)])
    with pytest.raises(om.OffloadRefused, match="rows for point 'b8'"):
        om.read_gpu_points(contract, rec, ["b1", "b8"])
    with pytest.raises(om.OffloadRefused, match="no per-point GPU record"):
        om.read_gpu_points(contract, tmp_path / "empty", ["b1"])
    with pytest.raises(om.OffloadRefused, match="no budget sheet"):
        om.read_fpga_stages(contract, tmp_path / "none.csv")
    other = load_contract(ROOT / "contracts" / "default.toml")
    sheet = _sheet(tmp_path / "s.csv", other, {1: (1.0, 1.0)})
    with pytest.raises(om.OffloadRefused, match="not this contract's"):
        om.read_fpga_stages(contract, sheet)


def test_the_committed_h100_record_is_refused_for_lack_of_the_split():
    c = load_contract(ROOT / "contracts" / "deployment-8b.toml")
    rec = ROOT / "reports" / "cards" / "h100-sxm" / "deployment-8b"
    with pytest.raises(om.OffloadRefused, match="draft_s_median"):
        om.read_gpu_points(c, rec)


def test_write_renders_every_schedule_break_even_and_roofline(contract, tmp_path):
    ops = [p.name for p in contract.operating_points]  # b1 b8 b32 b128
    batches = [p.batch for p in contract.operating_points]
    rec = _points(tmp_path / "rec", [_row(contract, n, b, 0.018 + 0.0001 * b, 0.004 + 0.00002 * b,
                                          0.012 + 0.00007 * b) for n, b in zip(ops, batches, strict=True)])
    sheet = _sheet(tmp_path / "budget_sheet.csv", contract, {b: (1e5 * b, 1e4 * b) for b in batches})
    res = om.write(contract, tmp_path / "out", record=rec, budget_sheet=sheet)
    assert om.one_line(res["models"], res["paths"]["summary"]).startswith(
        "system model (fpga_system_offload.md, weakest part declared; a plan, never the verdict): b1 ")
    text = res["paths"]["summary"].read_text()
    for s in ("(a) GPU alone", "(b) offload, series", "(c) offload, 2 micro-batches overlapped", "Break-even",
              "furthest from its limit", "SYSTEM GATE: NO SIGN-OFF (weakest part declared"):
        assert s in text
    with open(res["paths"]["raw"], newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3 * len(ops) and {r["card"] for r in rows} == {"H100 SXM"}
    # the roofline: LM head bytes 1e6*B at 1000 GB/s -> 1 us*B floor; model 1e5*B cycles at 100 MHz -> 1 ms*B
    lm = [r for m in res["models"] for r in m.roofline if r["stage"] == "draft_lm_head"]
    assert lm[0]["floor_s"] == pytest.approx(1e-6) and lm[0]["ratio"] == pytest.approx(1000.0)


def test_design_report_ratio_is_like_for_like():
    """The GPU's K1-K7 + top-K regions hold no draft LM head: the FPGA side of the ratio leaves its own out."""
    from eagle4.budget.design_report import like_for_like_ratio

    cycles = {"draft_lm_head": 3_000_000.0, "draft step (code-derived)": 600_000.0, "verify step (code-derived)": 60_000.0}
    assert like_for_like_ratio(cycles, 300.0, 660.0) == pytest.approx((600_000 + 60_000) / 300.0 / 660.0)


def test_compare_fpga_cli_reports_the_system_model_or_its_refusal(contract, tmp_path, capsys):
    from eagle4.cli import main

    p = Path(contract.source_path)
    rc = main(["workload", "compare-fpga", "--contract", str(p), "--out", str(tmp_path / "o"), "--record",
               str(tmp_path / "none")])
    out = capsys.readouterr().out
    assert rc == 0 and "system model: refused:" in out and "no per-point GPU record" in out
    batches = [x.batch for x in contract.operating_points]
    rec = _points(tmp_path / "rec", [_row(contract, x.name, x.batch, 0.02 + 1e-4 * x.batch, 0.005, 0.012)
                                     for x in contract.operating_points])
    sheet = _sheet(tmp_path / "budget_sheet.csv", contract, {b: (1e5 * b, 1e4 * b) for b in batches})
    rc = main(["workload", "compare-fpga", "--contract", str(p), "--out", str(tmp_path / "o"), "--record", str(rec),
               "--budget-sheet", str(sheet)])
    out = capsys.readouterr().out
    assert rc == 0 and "system b128:" in out and (tmp_path / "o" / "fpga_system_offload.md").is_file()


def test_signoff_budget_step_notes_the_system_model(contract, tmp_path):
    """The budget step of `eagle4 signoff` reports the system model on the sheet it wrote and the contract's
    baseline record; today's committed H100 record lacks the split, and the note says so."""
    from eagle4.cli.signoff import _system_model

    _sheet(tmp_path / "budget_sheet.csv", contract, {1: (1.0, 1.0)})
    notes = _system_model(contract, tmp_path)
    assert len(notes) == 1 and notes[0].startswith("system model: refused:") and "draft_s_median" in notes[0]

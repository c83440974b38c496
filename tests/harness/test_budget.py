"""Byte accounting, workload trace, budget model and roofline (eagle4.budget, eagle4.workload.trace)."""

from __future__ import annotations

import copy
import csv

import numpy as np
import pytest
from pydantic import ValidationError

from eagle4.budget import bytes as bb
from eagle4.budget import model as bm
from eagle4.budget.config import DTYPE_BYTES, fpga_section
from eagle4.workload.trace import build_trace, contract_sha256

pytestmark = pytest.mark.csim

SMALL = {
    "decode": {"node_top_k": 4, "tree_depth": 3, "verify_num": 8, "max_tree_width": 2, "max_node_count": 64,
               "max_verify_num": 16, "max_input_size": 16, "temperatures": [0.0, 1.0]},
    "operating_points": [{"name": "b1", "batch": 1}, {"name": "b4", "batch": 4}],
    "prompts": {"prompt_tokens": 20, "output_tokens": 8},
    "fpga": {"model": {"hidden_size": 256, "vocab_size": 4096, "hot_vocab_size": 1024, "drafter_intermediate": 512,
                       "drafter_heads": 4, "drafter_kv_heads": 2, "drafter_head_dim": 64},
             "csim": {"hidden": 8, "vocab": 128, "hot_vocab": 32}},
    "trace": {"cycles_per_batch": 2, "seed": 3},
}


@pytest.fixture(scope="module")
def small_result():
    return bb.count_trace(copy.deepcopy(SMALL))


def test_trace_is_deterministic_and_declared(tmp_path):
    t1 = build_trace(copy.deepcopy(SMALL), root=tmp_path)
    t2 = build_trace(copy.deepcopy(SMALL), root=tmp_path)
    assert [c.accept for c in t1.cycles] == [c.accept for c in t2.cycles]
    assert t1.accept_provenance == "declared"
    assert t1.batches == [1, 4] and len(t1.cycles) == 4
    assert t1.decode["widths"] == [1, 2, 2] and t1.prefix_len == 24
    assert all(0 <= a <= t1.decode["S"] - 1 for c in t1.cycles for a in c.accept)


def test_trace_uses_measured_acceptance_when_present(tmp_path):
    (tmp_path / "reports").mkdir()
    with open(tmp_path / "reports" / "acceptance_lengths.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["accept_length", "provenance"])
        for a in [3, 3, 3, 3]:
            w.writerow([a, "measured"])
    t = build_trace(copy.deepcopy(SMALL), root=tmp_path)
    assert t.accept_provenance == "measured"
    assert all(a == 3 for c in t.cycles for a in c.accept)


def test_affine_scaling_fit_rejects_nonlinear():
    coefs, _ = bb._fit(lambda h, v: {"p": (3 * h + 5 * v + 7, h * v)}, 4, 8, bilinear=True)
    assert bb._eval(coefs, 100, 1000)["p"] == (3 * 100 + 5 * 1000 + 7, 100 * 1000)
    with pytest.raises(bb.ScalingError):
        bb._fit(lambda h, v: {"p": (h * h, 0)}, 4, 8, bilinear=False)


def test_counted_lm_head_weights_match_the_formula(small_result):
    """The LM-head weight port, counted at small sizes and scaled, equals E_w * Vt * H once per layer."""
    r = small_result
    m = r.fpga.model
    widths = r.trace.decode["widths"]
    for backend in ("unfused", "fused"):
        decl = getattr(r.fpga, backend)
        Vt = m.hot_vocab_size if decl.lm_head_vocab == "hot" else m.vocab_size
        for B in r.trace.batches:
            rows = [x for x in r.hw_rows if x["backend"] == backend and x["batch"] == B and x["chain"] == "draft_step"
                    and x["port"] in ("lmhead_weight", "lm_weight")]
            got = rows[0]["bytes_read"]
            passes = len(widths)  # one weight pass per draft layer in both backends
            assert got == DTYPE_BYTES[decl.lm_head_dtype] * Vt * m.hidden_size * passes


def test_bytes_result_and_csv(small_result, tmp_path):
    r = small_result
    assert r.unfused.tokens == r.fused.tokens == sum(c.tokens for c in r.trace.cycles)
    assert r.ratio > 1.0 and r.ratio_p0() > 1.0
    assert {r.unfused.prov[k] for k in r.unfused.comp} <= {"csim", "computed"}
    p = bb.write_bytes_csv(r, tmp_path / "bytes_per_token.csv")
    rows = bb.read_csv(p)
    assert all(row["provenance"] for row in rows)
    assert all(row["contract_sha256"] == contract_sha256(SMALL) for row in rows)
    tot = {row["backend"]: float(row["bytes_per_token"]) for row in rows if row["component"] == "TOTAL"}
    assert tot["ratio"] == pytest.approx(tot["unfused"] / tot["fused"])
    h = bb.write_hw_counters_csv(r, tmp_path / "hw_counters.csv")
    hw = bb.read_csv(h)
    assert {x["provenance"] for x in hw} == {"csim"} and {x["backend"] for x in hw} == {"unfused", "fused"}


def test_budget_sheet_formula_and_roofline(small_result, tmp_path):
    r = small_result
    rows = bm.budget_rows(r)
    f = fpga_section(SMALL)
    clocks = {x["fclk_mhz"] for x in rows}
    assert {100.0, 200.0, 300.0} <= clocks and round(f.fclk_public_estimate_mhz, 2) in clocks
    for x in rows:
        assert x["C_total"] == pytest.approx(max(x["C_mem_in"] + x["C_mem_out"], x["C_comp"]) + x["C_ctrl"], abs=2)
        assert x["T_us"] == pytest.approx(x["C_total"] / x["fclk_mhz"], rel=1e-2, abs=0.01)
        assert x["provenance"] == "model"
    bm.write_sheet(rows, tmp_path / "budget_sheet.csv", tmp_path / "budget_sheet.md", r)
    assert "C_total" in (tmp_path / "budget_sheet.md").read_text()
    png = bm.roofline_png(rows, tmp_path / "roofline.png", r)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fpga_section_rejects_unknown_keys():
    with pytest.raises(ValidationError):
        fpga_section({"fpga": {"hbm_peak_gbps": 820, "bogus": 1}})
    assert fpga_section({}).hbm_peak_gbps == 820.0


def test_drafter_bytes_scale_with_dtype():
    f = fpga_section({})
    a = bb.drafter_bytes(f, f.unfused, 1, 4, 100, 0)["drafter_weights"]
    b = bb.drafter_bytes(f, f.fused, 1, 4, 100, 0)["drafter_weights"]
    assert a == 2 * b == 2 * f.model.drafter_params
    assert np.isfinite(a)

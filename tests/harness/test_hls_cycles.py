"""The code-derived cycle model (eagle4.budget.cycles): its lanes and II are the constants the pragmas name,
a planted pragma/constant mismatch is caught, and the C-sim trip counts are the loops' iterations."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from eagle4.budget import cycles as cy

pytestmark = pytest.mark.csim


def test_pragmas_agree_with_the_model_constants():
    assert cy.check_pragmas() == []
    consts = cy.loop_constants()
    assert consts["LMH_MAC"][0] >= 1 and all(lanes >= 1 for _, lanes in consts.values())


LMH_LOOPS = ("LMH_HLOAD", "LMH_WLOAD", "LMH_MAC", "LMH_RED")


@pytest.mark.parametrize("loop", LMH_LOOPS)
@pytest.mark.parametrize("plant", ["literal_ii", "other_constant", "uncounted_pipeline", "lanes_without_unroll",
                                   "literal_unroll"])
def test_a_planted_mismatch_fails(tmp_path, plant, loop):
    """Every loop of the LM head's MAC array: a pragma that stops naming its constant is caught."""
    root = tmp_path / "fused"
    shutil.copytree(cy.FUSED_DIR, root)
    perf = root / "common" / "e4f_perf.h"
    src = root / "draft_pipeline" / "draft_pipeline.cpp"
    text = src.read_text()
    pipe, unroll = f"#pragma HLS PIPELINE II = E4F_II_{loop}", f"#pragma HLS UNROLL factor = E4F_LANES_{loop}"
    assert pipe in text and unroll in text, f"{loop} is no longer written the way this test plants into"
    if plant == "literal_ii":  # the pragma asks Vitis for II=1, the model keeps E4F_II_<loop>
        text = text.replace(pipe, "#pragma HLS PIPELINE II = 1")
    elif plant == "other_constant":
        text = text.replace(pipe, "#pragma HLS PIPELINE II = E4F_II_ROW_EXP")
    elif plant == "uncounted_pipeline":
        text = re.sub(rf"E4F_TRIPS\({loop}, \w+\);", "", text)
    elif plant == "lanes_without_unroll":  # the model keeps its lanes but the code no longer unrolls them
        text = text.replace(unroll, "")
    else:  # the code unrolls by a literal the model does not read
        text = text.replace(unroll, "#pragma HLS UNROLL factor = 8")
    src.write_text(text)
    problems = cy.check_pragmas(root, perf)
    assert problems, f"the planted {plant} mismatch of {loop} was not caught"
    assert any(loop in p or "PIPELINE" in p for p in problems), problems


def test_a_pingpong_naming_no_loop_fails(tmp_path):
    root = tmp_path / "fused"
    shutil.copytree(cy.FUSED_DIR, root)
    perf = root / "common" / "e4f_perf.h"
    perf.write_text(perf.read_text().replace("X(LMH_WLOAD, LMH_MAC)", "X(LMH_WLOAD, LMH_MACS)"))
    assert any("LMH_MACS" in p for p in cy.check_pragmas(root, perf))
    assert cy.pingpong_pairs(perf)["LMH_WLOAD"] == ("LMH_MACS", "LMH_RED")


def test_pingpong_overlap_in_the_model():
    """The weight tile's read runs beside the MAC array but for the first tile: max(...) + exposed."""
    consts = cy.loop_constants()
    lw, lm, lr, lh = (consts[k][1] for k in ("LMH_WLOAD", "LMH_MAC", "LMH_RED", "LMH_HLOAD"))
    counts = {"loop:LMH_WLOAD": (100 * lw, 0), "loop:LMH_WLOAD@exposed": (10 * lw, 0), "loop:LMH_MAC": (lm * 80, 0),
              "loop:LMH_RED": (lr * 20, 0), "loop:LMH_HLOAD": (lh * 3, 0)}
    sc = cy._cycles_of("fused_draft", 1, counts, {}, consts, "lm_head")
    w = 100
    assert sc.loops["LMH_WLOAD"] == w and sc.loops["LMH_MAC"] == 80 and sc.loops["LMH_RED"] == 20
    assert sc.c_loops == max(w - 10, 80 + 20) + 10 + 3


def test_trip_counts_are_the_loop_iterations():
    """C-sim trips of one fused draft step: LM head MACs = sum over layers of R * Vt * H, weight loads
    = D * Vt * H, one row pass per frontier row."""
    from eagle4.backends import fused_csim as fc

    s = fc.DraftShape(B=2, K=4, widths=[1, 4, 3], H=80, Vt=64, V=200, N=64, M=32, I=16, L=8, verify_num=8,
                      use_hot=True, weight_dtype="int8")  # H = one full beat of int8 (two of bf16) + a tail
    fc.run_draft("fused", s, fc.make_draft_inputs(s))
    t = cy.loop_trips()
    rows = sum(s.B * w for w in s.widths)
    consts = {k: int(v) for k, v in re.findall(r"#define (E4F_\w+) (\d+)", cy.PERF_H.read_text())}
    rt, il, vp, lanes_h, beat, red, hb = (consts[k] for k in ("E4F_LMH_RT", "E4F_LMH_IL", "E4F_LMH_VP", "E4F_LMH_LANES",
                                                              "E4F_LMH_BEAT", "E4F_LANES_LMH_RED", "E4F_LANES_LMH_HLOAD"))
    ports = consts["E4F_LMH_PORTS"]
    assert s.Vt % il == 0  # whole tiles: every weight beat is read in the counted loop
    tiles, words = s.Vt // il, -(-s.H // lanes_h)
    # MAC array: every cycle of a (tile, row block, word, group of VP tile rows) counts its lanes, masked ones too
    assert t["LMH_MAC"] == sum(tiles * -(-(s.B * w) // rt) * words * (il // vp) for w in s.widths) * vp * rt * lanes_h
    assert t["LMH_MAC"] >= rows * s.Vt * s.H  # at least one lane per multiply-add the logits need
    assert t["LMH_RED"] == sum(tiles * -(-(s.B * w) // rt) * il * rt for w in s.widths)  # one lane per tree
    # HBM reads count their full 512-bit beats, one of every weight port per cycle (a row's tail past them is
    # read element-wise, uncounted)
    assert t["LMH_WLOAD"] == s.D * (s.Vt // ports) * (s.H // beat) * beat and t["LMH_HLOAD"] == rows * (s.H // hb) * hb
    assert t["LMH_WLOAD@exposed"] == s.D * (il // ports) * (s.H // beat) * beat  # the first tile of each layer
    assert red >= 1
    row16 = -(-s.Vt // consts["E4F_LANES_ROW_LOAD"]) * consts["E4F_LANES_ROW_LOAD"]
    assert t["ROW_LOAD"] == t["ROW_PROBA"] == rows * row16  # 16-lane row passes, masked tails
    lanes = consts["E4F_LANES_ROW_AMAX"]
    assert t["ROW_AMAX"] == t["ROW_EXP"] == rows * -(-s.Vt // lanes) * lanes  # 16-lane passes, masked tails
    # a verify step resets them: only its own loops count
    v = fc.VerifyShape(B=1, Q=4, S=3, V=50, H=4, temperatures=[0.0])
    fc.run_verify("fused", v, fc.make_verify_inputs(v, parents=np.array([[-1, 0, 1, 2]])), debug=False)
    t = cy.loop_trips()
    beat = consts["E4F_LANES_VROW_LOAD"]
    assert t["LMH_MAC"] == 0 and t["VROW_LOAD"] % (v.V // beat * beat) == 0 and t["VROW_LOAD"] > 0

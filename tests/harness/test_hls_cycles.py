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


@pytest.mark.parametrize("plant", ["literal_ii", "other_constant", "uncounted_pipeline", "lanes_without_unroll"])
def test_a_planted_mismatch_fails(tmp_path, plant):
    root = tmp_path / "fused"
    shutil.copytree(cy.FUSED_DIR, root)
    perf = root / "common" / "e4f_perf.h"
    src = root / "draft_pipeline" / "draft_pipeline.cpp"
    text = src.read_text()
    if plant == "literal_ii":  # the pragma asks Vitis for II=1, the model keeps E4F_II_LMH_MAC
        text = text.replace("#pragma HLS PIPELINE II = E4F_II_LMH_MAC", "#pragma HLS PIPELINE II = 1")
    elif plant == "other_constant":
        text = text.replace("#pragma HLS PIPELINE II = E4F_II_LMH_MAC", "#pragma HLS PIPELINE II = E4F_II_ROW_LOAD")
    elif plant == "uncounted_pipeline":
        text = re.sub(r"E4F_TRIPS\(LMH_MAC, \w+\);", "", text)
    else:  # the model keeps its lanes but the code no longer unrolls the lane loop
        text = text.replace("#pragma HLS UNROLL factor = E4F_LANES_LMH_MAC", "")
    src.write_text(text)
    problems = cy.check_pragmas(root, perf)
    assert problems, f"the planted {plant} mismatch was not caught"
    assert any("LMH_MAC" in p or "PIPELINE" in p for p in problems), problems


def test_trip_counts_are_the_loop_iterations():
    """C-sim trips of one fused draft step: LM head MACs = sum over layers of R * Vt * H, weight loads
    = D * Vt * H, one row pass per frontier row."""
    from eagle4.budget import fused_csim as fc

    s = fc.DraftShape(B=2, K=4, widths=[1, 4, 3], H=16, Vt=64, V=200, N=64, M=32, I=16, L=8, verify_num=8,
                      use_hot=True, weight_dtype="int8")
    fc.run_draft("fused", s, fc.make_draft_inputs(s))
    t = cy.loop_trips()
    rows = sum(s.B * w for w in s.widths)
    consts = {k: int(v) for k, v in re.findall(r"#define (E4F_\w+) (\d+)", cy.PERF_H.read_text())}
    rt, il, vt, beat = (consts[k] for k in ("E4F_LMH_RT", "E4F_LMH_IL", "E4F_LMH_VT", "E4F_LANES_LMH_WLOAD"))
    tiles = -(-s.Vt // (il * vt))
    # MAC array: every cycle of a (tile, row block, h, sub-tile) counts its lanes, masked ones included
    assert t["LMH_MAC"] == sum(tiles * -(-(s.B * w) // rt) * s.H * il for w in s.widths) * rt * vt
    assert t["LMH_MAC"] >= rows * s.Vt * s.H  # at least one lane per multiply-add the logits need
    assert t["LMH_WLOAD"] == s.D * s.Vt * -(-s.H // beat) * beat and t["LMH_HLOAD"] == rows * s.H
    assert t["ROW_LOAD"] == t["ROW_PROBA"] == rows * s.Vt
    lanes = consts["E4F_LANES_ROW_AMAX"]
    assert t["ROW_AMAX"] == t["ROW_EXP"] == rows * -(-s.Vt // lanes) * lanes  # 16-lane passes, masked tails
    # a verify step resets them: only its own loops count
    v = fc.VerifyShape(B=1, Q=4, S=3, V=50, H=4, temperatures=[0.0])
    fc.run_verify("fused", v, fc.make_verify_inputs(v, parents=np.array([[-1, 0, 1, 2]])), debug=False)
    t = cy.loop_trips()
    beat = consts["E4F_LANES_VROW_LOAD"]
    assert t["LMH_MAC"] == 0 and t["VROW_LOAD"] % (-(-v.V // beat) * beat) == 0 and t["VROW_LOAD"] > 0

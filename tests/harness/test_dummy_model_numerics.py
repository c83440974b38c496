"""The deployment model's production forward (RoPE table, q and k rotated together, one additive mask
per forward) computes the plain formulas' function (``reference_forward``), and the floor's FLOP
model counts what the step multiplies."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from eagle4.contract import load_contract
from eagle4.models.dummy import RopeTable, _rope, _rope_rows, check_inputs, load_dummy_pair, reference_forward
from eagle4.workload.tiny_contract import write_tiny_contract

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("dtype,tol,fused", [("float32", 1e-5, False), ("bfloat16", 3e-2, False),
                                             ("float32", 1e-5, True)])
def test_forward_matches_the_reference_formulas(tmp_path, dtype, tol, fused):
    """Eager and compiled (``fused``: the parts through torch.compile, as on CUDA) alike."""
    c = load_contract(write_tiny_contract(tmp_path, ROOT / "contracts" / "deployment-8b.toml", dtype))
    tgt, _ = load_dummy_pair(c.model, "cpu")
    tokens, pos, cache, write, mask = check_inputs(tgt)
    ref_hid, ref_logits = reference_forward(tgt, tokens, pos, cache, write, mask)
    hid, logits = tgt.forward(tokens, pos, cache, write, mask, fused=fused)
    for got, ref in ((hid, ref_hid), (logits, ref_logits)):
        err = float((got.float() - ref).norm() / ref.norm())
        assert err < tol, (dtype, err)


def test_rope_table_is_the_per_layer_formula_exactly():
    x = torch.randn(2, 7, 6, 128)
    pos = torch.randint(0, 5000, (2, 7))
    t = RopeTable(128, 500000.0, "cpu")
    assert torch.equal(_rope(x, pos, 500000.0), _rope_rows(x, t.cos[pos].unsqueeze(2), t.sin[pos].unsqueeze(2)))


def test_floor_flops_count_the_gemms():
    from eagle4.workload.floor import step_flops

    c = load_contract(ROOT / "contracts" / "deployment-8b.toml")
    f1, f2 = step_flops(c, 1, 1024), step_flops(c, 2, 1024)
    assert f2["total"] == pytest.approx(2 * f1["total"])  # linear in the batch
    # the target's weights (~8.0e9 params incl. LM head) times 2 FLOPs times 64 tree tokens dominate
    assert 64 * 2 * 7.5e9 < f1["target"] < 64 * 2 * 8.6e9

"""The §8 host glue (eagle4.kernels.tree_glue) and the chained regressions built on it."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from eagle4 import dtypes as dt
from eagle4.backends.ref import ReferenceBackend
from eagle4.cases import chain
from eagle4.compare import compare_outputs
from eagle4.kernels import tree_glue as glue

REF = ReferenceBackend()


def test_init_draft_state_is_d13():
    st = glue.init_draft_state(torch.tensor([5, 9]), N=6, M=4, K=3, I=2)
    assert st["cumu_tokens"][:, 0].tolist() == [5, 9]
    assert st["cumu_scores"][:, 0].tolist() == [1.0, 1.0]
    assert st["cumu_deltas"][:, 0].tolist() == [0, 0]
    for k in ("prev_indexs", "next_indexs", "side_indexs"):
        assert st[k][:, 0].tolist() == [-1, -1]
    assert st["sort_scores"][:, 0].tolist() == [1.0, 1.0]
    assert (st["sort_scores"][:, 1:] == glue.SENTINELS["sort_scores"]).all()
    assert (st["cumu_tokens"][:, 1:] == -777).all()
    assert st["work_scores"].shape == (2, 7) and st["output_tree_mask"].shape == (2, 3, 3)
    assert glue.ROOT_CC == 1 and glue.ROOT_IC == 1


def test_external_topk_order():
    p = torch.tensor([[0.25, 0.5, 0.25, math.nan, 0.5, 0.0, -0.0, 0.125]])
    vals, idx = glue.external_topk(p, 6)
    assert idx.tolist() == [[1, 4, 0, 2, 7, 5]]
    assert vals.tolist() == [[0.5, 0.5, 0.25, 0.25, 0.125, 0.0]]
    with pytest.raises(ValueError):
        glue.external_topk(p, 9)


def test_frontier_handoff_mask_and_slices():
    B, K, I, H, Ic = 2, 4, 6, 3, 3
    otm = torch.rand((B, K, I + 1)) < 0.5
    hid = torch.randn((B, K, H)).to(torch.float16)
    fr = glue.frontier_handoff(output_tokens=torch.arange(8).view(B, K), output_scores=torch.rand(B, K),
                               output_hidden_states=hid, cache_topk_indices=torch.arange(8).view(B, K) + 100,
                               output_tree_mask=otm, Ic=Ic, W_next=3)
    assert fr.W == 3 and fr.Ic == 6
    assert fr.input_tree_mask.shape == (B, 3, 5)
    assert torch.equal(fr.input_tree_mask[:, :, :2], otm[:, :3, :2])
    assert torch.equal(fr.input_tree_mask[:, :, 2:], torch.eye(3, dtype=torch.bool).expand(B, 3, 3))
    assert fr.tokens.tolist() == [[0, 1, 2], [4, 5, 6]]
    assert fr.topk_indexs.tolist() == [[100, 101, 102], [104, 105, 106]]
    assert torch.equal(fr.hidden.view(torch.int16), hid[:, :3].reshape(6, H).view(torch.int16))
    assert fr.input_tree_mask.is_contiguous()
    with pytest.raises(ValueError):
        glue.frontier_handoff(output_tokens=torch.zeros((B, K), dtype=torch.int64), output_scores=torch.rand(B, K),
                              output_hidden_states=hid, cache_topk_indices=torch.zeros((B, K), dtype=torch.int64),
                              output_tree_mask=otm, Ic=Ic, W_next=K + 1)


def test_draft_tree_parent():
    p1 = torch.zeros((1, 4), dtype=torch.int64)  # root expansion: every parent slot 0
    p2 = torch.tensor([[2, 0, 2, 1]])
    p3 = torch.tensor([[1, 1, 0, 0]])
    par = glue.draft_tree_parent([4, 3, 2], [p1, p2, p3])
    # layer 2: 4 tokens, parent -1; layer 3: off_2 = 0 + p2[:3]; layer 4: off_3 = 4 + p3[:2]
    assert par.tolist() == [[-1, -1, -1, -1, 2, 0, 2, 5, 5]]
    t, p = glue.draft_mask_inputs(widths=[4, 3, 2], parents=[p1, p2, p3], seq_lens=torch.tensor([5]),
                                  req_pool_indices=torch.tensor([0]), req_to_token=torch.zeros((1, 9), dtype=torch.int32),
                                  tree_cache_locs=torch.arange(20).view(1, 20))
    assert p == {"S_max": 9, "B": 1, "T": 9, "Q": 2, "write_bool_mask": True}
    assert t["tree_cache_locs"].shape == (1, 9)


def _naive_verify_set(tokens, scores, prev, cc, Vn, M):
    N = len(scores)
    n = min(cc, N)
    Q = min(min(max(Vn, 1), M), n)
    key = [(-(-math.inf if math.isnan(s) else s), i) for i, s in enumerate(scores[:n]) if i > 0]
    nodes = sorted([0] + [i for _, i in sorted(key)[:Q - 1]])
    loc = {v: t for t, v in enumerate(nodes)}
    parent = [-1] + [loc[prev[v]] for v in nodes[1:]]
    nxt = [next((c for c in range(Q) if parent[c] == t), -1) for t in range(Q)]
    sib = [next((c for c in range(t + 1, Q) if parent[c] == parent[t]), -1) if t else -1 for t in range(Q)]
    return Q, nodes, [tokens[v] for v in nodes], parent, nxt, sib


@pytest.mark.parametrize("seed", range(6))
def test_select_verify_set_matches_naive(seed):
    rng = np.random.default_rng(seed)
    B, N = 3, 40
    cc = int(rng.integers(1, 45))
    tokens = rng.integers(0, 100, (B, N))
    scores = np.full((B, N), -3.0, np.float32)
    prev = np.full((B, N), -1, np.int64)
    scores[:, 0] = 1.0
    for b in range(B):
        for v in range(1, min(cc, N)):
            p = int(rng.integers(0, v))  # parents have lower ids
            prev[b, v] = p
            # quantized probabilities: ties; a few NaN subtrees and zeros
            q = rng.integers(0, 5) / 4.0
            scores[b, v] = np.float32(scores[b, p] * q * np.float32(0.9999))
            if rng.random() < 0.05:
                scores[b, v] = np.nan
    Vn = int(rng.integers(-2, 50))
    vs = glue.select_verify_set(cumu_tokens=torch.from_numpy(tokens), cumu_scores=torch.from_numpy(scores),
                                prev_indexs=torch.from_numpy(prev), cc=cc, verify_num=Vn, M=32)
    for b in range(B):
        Q, nodes, cand, parent, nxt, sib = _naive_verify_set(tokens[b].tolist(), scores[b].tolist(),
                                                              prev[b].tolist(), cc, Vn, 32)
        assert vs.Q == Q
        assert vs.node_ids[b].tolist() == nodes
        assert vs.candidates[b].tolist() == cand
        assert vs.tree_parent[b].tolist() == parent
        assert vs.retrive_next_token[b].tolist() == nxt
        assert vs.retrive_next_sibling[b].tolist() == sib
        assert vs.retrive_index[b].tolist() == [b * Q + t for t in range(Q)]


def test_select_verify_set_rejects_broken_closure():
    scores = torch.tensor([[1.0, 0.1, 0.9]])  # node 2 outranks its parent 1
    prev = torch.tensor([[-1, 0, 1]])
    with pytest.raises(ValueError, match="parent"):
        glue.select_verify_set(cumu_tokens=torch.zeros((1, 3), dtype=torch.int64), cumu_scores=scores,
                               prev_indexs=prev, cc=3, verify_num=2, M=8)


# --- the chained regressions ------------------------------------------------------------------

CASES = chain.cases()
BY_ID = {c.case_id: c for c in CASES}


def test_chain_ids_and_kernels():
    assert len(BY_ID) == len(CASES)
    for c in CASES:
        m = re.fullmatch(r"chain/([\w-]+)/(\d\d)_(\w+?)_(\w+)", c.case_id)
        assert m, c.case_id
        assert m.group(4) == c.kernel
    scen = {c.case_id.split("/")[1] for c in CASES}
    assert scen == {"draft3", "draft3_q1", "draft3_q16", "draft3_q64", "draft3_q16_all_finished", "draft4",
                    "draft4_q128"}


def _out(case_id):
    c = BY_ID[case_id]
    return REF.run(c.kernel, c.inputs, c.params)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.case_id)
def test_chain_case_runs_on_ref(case):
    out = REF.run(case.kernel, case.inputs, case.params)
    assert out


def _same(a, b):
    return a.shape == b.shape and np.array_equal(dt.bits(np.ascontiguousarray(a)), dt.bits(np.ascontiguousarray(b)))


@pytest.mark.parametrize("scen,layers", [("draft3", 3), ("draft4", 4)])
def test_chain_hand_offs(scen, layers):
    """Every draft-layer input is the previous call's output (the glue loses and invents nothing)."""
    ids = sorted(i for i in BY_ID if i.startswith(f"chain/{scen}/"))
    step = {BY_ID[i].kernel + "@" + i.split("_")[1]: i for i in ids}  # e.g. "draft_tree_score@l2"
    prev_k2 = None
    for d in range(1, layers + 1):
        k1c, k2c = BY_ID[step[f"draft_tree_score@l{d}"]], BY_ID[step[f"update_draft_state@l{d}"]]
        k1 = _out(k1c.case_id)
        for a, b in (("topk_probas", "curr_layer_scores"), ("topk_tokens", "topk_tokens_sampling"),
                     ("sorted_scores", "sort_layer_scores"), ("sorted_indexs", "sort_layer_indices"),
                     ("parent_indexs", "parent_indices_in_layer")):
            assert _same(k2c.inputs[a], k1[b]), (d, a)
        k3c = BY_ID[step[f"work_deltas@l{d}"]]
        k2 = _out(k2c.case_id)
        assert _same(k3c.inputs["work_scores"], k2["work_scores"])
        if prev_k2 is not None:
            pk1, pk2 = prev_k2
            W = k1c.params["tree_width"]
            assert _same(k1c.inputs["last_layer_scores"], pk2["output_scores"][:, :W])
            assert _same(k1c.inputs["input_hidden_states"], pk1["output_hidden_states"][:, :W].reshape(-1, 16))
            assert _same(k2c.inputs["topk_indexs"], pk1["cache_topk_indices"][:, :W])
            for name in ("cumu_tokens", "cumu_scores", "next_indexs", "sort_scores", "work_scores"):
                assert _same(k2c.inputs[name], pk2[name]), (d, name)
            Ic = k2c.params["input_count"]
            Ip = BY_ID[step[f"update_draft_state@l{d - 1}"]].params["input_count"]
            assert Ic == Ip + W
            assert _same(k2c.inputs["input_tree_mask"][:, :, :Ip - 1], pk2["output_tree_mask"][:, :W, :Ip - 1])
        prev_k2 = (k1, k2)
    final = BY_ID[step[f"update_draft_state@l{layers}"]]
    cc = final.params["cumu_count"] + final.params["tree_width"] * final.params["node_top_k"]
    assert cc == {"draft3": 97, "draft4": 201}[scen]


def test_chain_draft_mask_cross_check():
    """§4.6 optional cross-check: for each query of the layer-3 K4 call, the tree columns [0, Ic_p-1)
    equal K2's output_tree_mask row of that node (Ic_p = input_count of the layer-2 K2 call that
    emitted it); the remaining columns are the identity the D20 glue appends."""
    k4c = BY_ID["chain/draft3/10_l3_tree_mask"]
    k2c = BY_ID["chain/draft3/08_l2_update_draft_state"]
    k4, k2 = _out(k4c.case_id), _out(k2c.case_id)
    T, Q = k4c.params["T"], k4c.params["Q"]
    prefix = k2c.params["input_count"] - 1
    assert T == prefix + Q  # Ic_3 - 1 = (Ic_2 + W_3) - 1
    L = k4c.inputs["seq_lens"]
    ptr = k4["mask_indptr_bits"]
    for b in range(len(L)):
        seg = k4["mask_bool"][ptr[b]:ptr[b + 1]].reshape(Q, int(L[b]) + T)
        for q in range(Q):
            row = seg[q, int(L[b]):]
            assert row[:prefix].tolist() == k2["output_tree_mask"][b, q, :prefix].tolist()
            assert row[prefix:].tolist() == [j == q for j in range(Q)]


def test_chain_verify_accept_lengths_and_u0():
    for name, want in (("draft3_q1", [0, 0, 0]), ("draft3_q16", [0, 1, 3]), ("draft3_q64", [0, 1, 3]),
                       ("draft4_q128", [0, 1, 4])):
        k6 = _out(f"chain/{name}/03_verify_reject_sample")
        assert k6["accept_length"][:3].tolist() == want, name
    qs = {n: BY_ID[f"chain/{n}/03_verify_reject_sample"].params["Q"]
          for n in ("draft3_q1", "draft3_q16", "draft3_q64", "draft4_q128")}
    assert qs == {"draft3_q1": 1, "draft3_q16": 16, "draft3_q64": 64, "draft4_q128": 128}
    k7 = _out("chain/draft3_q16_all_finished/04_verify_update_verify")
    assert int(k7["unfinished_count"][0]) == 0
    assert k7["next_indptr"][0] == 0 and (k7["next_indptr"][1:] == -1).all()
    k7 = _out("chain/draft3_q64/04_verify_update_verify")
    assert int(k7["unfinished_count"][0]) == 3


def test_chain_verify_inputs_follow_the_draft():
    """K6's inputs are K5's outputs; K7's are K6's (the verify glue passes them through unchanged)."""
    for name in ("draft3_q16", "draft4_q128"):
        k5 = _out(f"chain/{name}/02_verify_logits_to_probas")
        k6c = BY_ID[f"chain/{name}/03_verify_reject_sample"]
        B, Q, V = k6c.params["B"], k6c.params["Q"], k6c.params["V"]
        assert _same(k6c.inputs["target_probs"], k5["probas"].reshape(B, Q, V))
        assert _same(k6c.inputs["target_predict"], k5["argmax_ids"].reshape(B, Q))
        k6 = _out(k6c.case_id)
        k7c = BY_ID[f"chain/{name}/04_verify_update_verify"]
        for n in ("accept_index", "accept_length", "predicts"):
            assert _same(k7c.inputs[n], k6[n])
        res = compare_outputs("reject_sample", k6, REF.run("reject_sample", k6c.inputs, k6c.params), k6c.inputs,
                              k6c.params)
        assert res.ok  # deterministic

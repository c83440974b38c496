"""The fused dataflow designs (hls/fused) against the unfused chain, in C-simulation.

* draft pipeline: EXACT (bitwise) against the unfused chain on §13-style chained cases;
* verify pipeline: EXACT against the unfused chain (same exp), every output incl. sentinel regions;
* draft -> verify chained;
* K5 -> K6 agreement over >= 10,000 random verify cases against an unfused chain whose exp differs
  (f32 exp evaluated in double: what another platform's exp does), and one batch against the
  PyTorch reference K5 -> K6;
* byte counters: the fused verify never moves the [B,Q,V] probabilities.
"""

from __future__ import annotations

import numpy as np
import pytest

from eagle4.backends import fused_csim as fc  # a plain import: an import error fails, never skips

pytestmark = pytest.mark.csim


def _bits(x):
    x = np.asarray(x)
    return x.view(np.uint8) if x.dtype.kind in "fiub" or x.dtype.itemsize else x


def _same(a, b) -> bool:
    return np.array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


DRAFT_CASES = [
    # name, B, K, widths, N, M, I, Vn, hidden, weights, hot
    ("w1-8-3-5_b1", 1, 8, [1, 8, 3, 5], 128, 64, 64, 64, "bfloat16", "int8", True),
    ("w1-8-3-5_b7_f32", 7, 8, [1, 8, 3, 5], 128, 64, 64, 40, "float32", "float32", True),
    ("w1-8-8-8_cc201", 2, 8, [1, 8, 8, 8], 256, 128, 64, 128, "bfloat16", "bfloat16", True),
    ("partial_drop_N64", 3, 8, [1, 8, 3, 5], 64, 32, 64, 20, "float16", "int8", False),
    ("k10_w6", 2, 10, [1, 6, 6], 160, 128, 64, 128, "bfloat16", "int8", True),
    ("k1_chain", 4, 1, [1, 1, 1, 1, 1], 16, 8, 8, 8, "bfloat16", "bfloat16", True),
    ("w1-8-3-5_b3_int4", 3, 8, [1, 8, 3, 5], 128, 64, 64, 64, "bfloat16", "int4", True),  # the synthesized precision
    ("k10_w6_int4_f32", 2, 10, [1, 6, 6], 160, 128, 64, 128, "float32", "int4", False),
]


@pytest.mark.parametrize("case", DRAFT_CASES, ids=[c[0] for c in DRAFT_CASES])
def test_draft_pipeline_exact_vs_unfused(case):
    name, B, K, widths, N, M, I, Vn, hdt, wdt, hot = case
    s = fc.DraftShape(B=B, K=K, widths=widths, H=24, Vt=96, V=500 if hot else 0, N=N, M=M, I=I, L=13,
                      verify_num=Vn, use_hot=hot, hidden_dtype=hdt, weight_dtype=wdt, seed=len(name))
    a = fc.make_draft_inputs(s)
    fo, fcnt = fc.run_draft("fused", s, a)
    uo, _ = fc.run_draft("unfused", s, a)
    D = len(widths)
    for k in fc.DRAFT_OUTPUTS:
        if k in ("out_hidden", "out_tokens"):
            for d in range(D - 1):  # the fused design only emits the W_next rows the next drafter layer reads
                wn = widths[d + 1]
                f = fo[k][d].reshape(B, K, -1)[:, :wn]
                u = uo[k][d].reshape(B, K, -1)[:, :wn]
                assert _same(f, u), f"{name}: {k}[layer {d}] differs"
            continue
        assert _same(fo[k], uo[k]), f"{name}: {k} differs between the fused design and the unfused chain"
    cc = 1 + K * sum(widths)
    assert fo["cc_out"][0] == cc
    Q = fo["cc_out"][1]
    assert Q == min(max(1, min(Vn, M)), min(cc, N))
    # parent closure of the selected verify tree (D14): every parent is selected and earlier
    par = fo["vt_tree_parent"].ravel()[: B * Q].reshape(B, Q)
    assert (par[:, 0] == -1).all() and ((par[:, 1:] >= 0) & (par[:, 1:] < np.arange(1, Q))).all()
    # every m_axi port the design touched was counted
    assert all(fcnt[p][0] > 0 for p in fc.LM_WEIGHT_PORTS) and fcnt["cumu_tokens"][1] > 0


def _verify_case(B, Q, S, V, *, temps, accept=None, remaining=None, eos=-1, seed=0, kind="random"):
    s = fc.VerifyShape(B=B, Q=Q, S=S, V=V, H=6, L=9, eos=eos, temperatures=temps, seed=seed)
    rng = np.random.default_rng(seed)
    par = np.stack([fc.random_tree(rng, Q, kind) for _ in range(B)])
    return s, fc.make_verify_inputs(s, parents=par, accept=accept, remaining=remaining)


VERIFY_CASES = [
    ("q1", dict(B=3, Q=1, S=4, V=50, temps=[1.0, 0.0], accept=[0, 0, 0])),
    ("q16_mixed", dict(B=7, Q=16, S=6, V=300, temps=[0.0, 0.7, 1.0, 1.3], accept=[0, 1, 5, 2, 3, 0, 5], kind="chain")),
    ("q64_sampling", dict(B=2, Q=64, S=9, V=700, temps=[1.0], accept=[8, 1], kind="chain")),
    ("q128_greedy", dict(B=1, Q=128, S=5, V=300, temps=[0.0], accept=[4], kind="chain")),
    ("random_logits", dict(B=5, Q=16, S=6, V=200, temps=[1.0, 0.0])),
    ("all_finished", dict(B=4, Q=16, S=6, V=100, temps=[1.0], accept=[3, 0, 5, 1], remaining=[1, 1, 1, 1],
                          kind="chain")),
    ("eos_finish", dict(B=3, Q=8, S=5, V=80, temps=[0.0, 1.0], accept=[4, 4, 2], eos=7, remaining=[100, 3, 100],
                        kind="chain")),
    ("star", dict(B=2, Q=32, S=4, V=200, temps=[1.0, 0.5], accept=[1, 1], kind="star")),
]


@pytest.mark.parametrize("case", VERIFY_CASES, ids=[c[0] for c in VERIFY_CASES])
def test_verify_pipeline_exact_vs_unfused(case):
    name, kw = case
    s, a = _verify_case(seed=len(name), **kw)
    fo, fcnt = fc.run_verify("fused", s, a)
    uo, ucnt = fc.run_verify("unfused", s, a)
    for k in fo:
        assert _same(fo[k], uo[k]), f"{name}: {k} differs between the fused verify pipeline and the unfused chain"
    if kw.get("accept") is not None and kw.get("remaining") is None:
        want = [min(x, s.S - 1, s.Q - 1) for x in kw["accept"]]
        if kw.get("kind") == "chain":
            assert fo["accept_length"].tolist() == want
    if name == "all_finished":
        assert fo["unfinished_count"][0] == 0 and (fo["next_indptr"][1:] == -1).all()
    # the fused design never writes a [B,Q,V] tensor and reads only the logits rows the walk visits:
    # the root row and the row of every accepted token, once each
    BQV = 4 * s.B * s.Q * s.V
    assert fcnt["logits"][0] == 4 * s.V * int((fo["accept_length"].astype(np.int64) + 1).sum())
    assert ucnt["k5_probas"][1] == BQV  # the unfused K5 writes the probabilities ...
    assert sum(w for _, w in fcnt.values()) < sum(w for _, w in ucnt.values())  # ... the fused design never does


def test_draft_then_verify_chained():
    """Draft step (fused vs unfused) -> selected verify tree -> verify step (fused vs unfused)."""
    s = fc.DraftShape(B=3, K=8, widths=[1, 8, 3, 5], H=16, Vt=64, V=400, N=128, M=64, I=64, L=11, verify_num=16,
                      hidden_dtype="bfloat16", weight_dtype="int8", seed=11)
    a = fc.make_draft_inputs(s)
    fo, _ = fc.run_draft("fused", s, a)
    uo, _ = fc.run_draft("unfused", s, a)
    Q = int(fo["cc_out"][1])
    B = s.B
    tree = {k: fo[k].ravel()[: B * Q].reshape(B, Q) for k in fc.DRAFT_TENSORS[27:33]}
    for k in tree:
        assert _same(tree[k], uo[k].ravel()[: B * Q].reshape(B, Q))
    vs = fc.VerifyShape(B=B, Q=Q, S=len(s.widths) + 1, V=400, H=16, L=11, temperatures=[1.0, 0.0, 0.8], seed=5)
    va = fc.make_verify_inputs(vs, parents=tree["vt_tree_parent"], candidates=tree["vt_candidates"],
                               node_ids=tree["vt_node_ids"], accept=[2, 4, 0])
    assert (va["retrive_next_token"] == tree["vt_next_token"]).all()
    assert (va["retrive_next_sibling"] == tree["vt_next_sibling"]).all()
    f2, _ = fc.run_verify("fused", vs, va)
    u2, _ = fc.run_verify("unfused", vs, va)
    for k in f2:
        assert _same(f2[k], u2[k]), k


def _agreement_batch(seed: int, B=128, Q=16, S=6, V=96):
    """Random verify trees whose candidates are drawn from the parent row's distribution, so the
    acceptance walk goes deep (realistic accept lengths)."""
    rng = np.random.default_rng(seed)
    s = fc.VerifyShape(B=B, Q=Q, S=S, V=V, H=2, L=2, temperatures=[1.0, 0.6, 1.4, 0.0], seed=seed)
    par = np.stack([fc.random_tree(rng, Q) for _ in range(B)])
    logits = (rng.standard_normal((B * Q, V)) * 4.0).astype(np.float32)
    cand = np.zeros((B, Q), np.int64)
    for b in range(B):
        for t in range(1, Q):
            row = logits[b * Q + par[b, t]].astype(np.float64)
            p = np.exp(row - row.max())
            cand[b, t] = rng.choice(V, p=p / p.sum())
    a = fc.make_verify_inputs(s, parents=par, candidates=cand)
    a["logits"] = logits
    return s, a


def _accepted_tokens(o, B, Q, S):
    ai = o["accept_index"].reshape(B, S)
    pr = o["predicts"]
    return [tuple(int(pr[p]) for p in ai[b] if p >= 0) for b in range(B)]


def test_k5_k6_agreement_10k(record_property):
    """Fused K5->K6 (expf, recomputed probabilities) vs an unfused chain with a different exp."""
    n = agree_len = agree_tok = 0
    accept_sum = 0
    for seed in range(80):  # 80 x 128 = 10,240 verify cases
        s, a = _agreement_batch(seed)
        fo, _ = fc.run_verify("fused", s, a)
        uo, _ = fc.run_verify("unfused", s, a, exp_variant=1)
        agree_len += int((fo["accept_length"] == uo["accept_length"]).sum())
        agree_tok += sum(x == y for x, y in zip(_accepted_tokens(fo, s.B, s.Q, s.S), _accepted_tokens(uo, s.B, s.Q, s.S), strict=True))
        accept_sum += int(fo["accept_length"].sum())
        n += s.B
    r_len, r_tok = agree_len / n, agree_tok / n
    record_property("k5k6_cases", n)
    record_property("k5k6_accept_length_agreement", r_len)
    record_property("k5k6_token_agreement", r_tok)
    print(f"\nK5->K6 agreement over {n} random verify cases: accept lengths {r_len:.5%}, accepted+final tokens "
          f"{r_tok:.5%} (mean accept length {accept_sum / n:.2f})")
    assert n >= 10_000
    assert accept_sum / n > 0.5, "the cases must exercise the acceptance walk"
    assert r_len >= 0.999 and r_tok >= 0.999


def test_k5_k6_against_pytorch_reference():
    torch = pytest.importorskip("torch")
    from eagle4 import kernels as K

    s, a = _agreement_batch(1234)
    fo, _ = fc.run_verify("fused", s, a)
    B, Q, S, V = s.B, s.Q, s.S, s.V
    k5 = K.call("logits_to_probas", {"logits": torch.from_numpy(a["logits"]),
                                     "temperatures": torch.from_numpy(a["temperatures"])},
                {"rows_per_req": Q, "write_probas": True})
    t = {n: torch.from_numpy(a[n]) for n in ("candidates", "retrive_index", "retrive_next_token",
                                             "retrive_next_sibling", "coins", "final_coins")}
    t.update(target_probs=k5["probas"].reshape(B, Q, V), target_predict=k5["argmax_ids"].reshape(B, Q),
             is_greedy=k5["is_greedy"])
    k6 = K.call("reject_sample", t, {"threshold_single": 1.0, "threshold_acc": 1.0, "B": B, "Q": Q, "S": S, "V": V})
    agree = (k6["accept_length"].numpy() == fo["accept_length"]).mean()
    tok = np.mean([x == y for x, y in zip(_accepted_tokens(fo, B, Q, S), _accepted_tokens(
        {"accept_index": k6["accept_index"].numpy().ravel(), "predicts": k6["predicts"].numpy()}, B, Q, S), strict=True)])
    print(f"\nfused vs PyTorch reference K5->K6 ({B} cases): accept lengths {agree:.4%}, tokens {tok:.4%}")
    assert agree >= 0.99 and tok >= 0.99


@pytest.mark.parametrize("Vt", [32, 40])  # whole weight tiles only; a last, partial tile (its own spill loop)
def test_draft_lm_head_spill_beyond_the_onchip_tile(Vt):
    """B*W > E4F_LM_ROWS: rows past the on-chip logits tile spill to HBM; weights still stream once."""
    s = fc.DraftShape(B=40, K=8, widths=[1, 8], H=8, Vt=Vt, V=300, N=128, M=64, I=64, L=3, verify_num=16,
                      hidden_dtype="bfloat16", weight_dtype="int8", seed=9)
    a = fc.make_draft_inputs(s)
    fo, fcnt = fc.run_draft("fused", s, a)
    uo, _ = fc.run_draft("unfused", s, a)
    for k in fc.DRAFT_OUTPUTS:
        if k not in ("out_hidden", "out_tokens"):
            assert _same(fo[k], uo[k]), k
    assert sum(fcnt[p][0] for p in fc.LM_WEIGHT_PORTS) == 2 * s.Vt * s.H  # two layers, one pass each
    spilled = (s.B * 8 - fc.LM_ROWS) * s.Vt * 4
    assert fcnt["lm_spill"] == (spilled, spilled)


@pytest.mark.parametrize("case", VERIFY_CASES[1:3] + VERIFY_CASES[5:7], ids=lambda c: c[0])
def test_verify_k4_k7_against_pytorch_reference(case):
    """The stage library's K4 (verify use) and K7 against the PyTorch reference, on the fused design's
    own K6 results (debug taps)."""
    torch = pytest.importorskip("torch")
    from eagle4 import dtypes as dt
    from eagle4 import kernels as K

    name, kw = case
    s, a = _verify_case(seed=len(name), **kw)
    fo, _ = fc.run_verify("fused", s, a)
    B, Q, S = s.B, s.Q, s.S
    t = lambda n: torch.from_numpy(np.ascontiguousarray(a[n]))  # noqa: E731
    k4 = K.call("tree_mask", {"seq_lens": t("seq_lens"), "req_pool_indices": t("req_pool_indices"),
                              "req_to_token": t("req_to_token"), "tree_cache_locs": t("out_cache_loc").reshape(B, Q),
                              "tree_parent": t("tree_parent")},
                {"S_max": a["req_to_token"].shape[1], "B": B, "T": Q, "Q": Q, "write_bool_mask": False})
    for n in ("qo_indptr", "kv_indptr", "positions", "mask_indptr_bits", "mask_indptr_bytes"):
        assert np.array_equal(k4[n].numpy().ravel(), fo[n].ravel()), n
    nkv, nb = int(fo["kv_indptr"][-1]), int(fo["mask_indptr_bytes"][-1])
    assert np.array_equal(k4["kv_indices"].numpy()[:nkv], fo["kv_indices"][:nkv])
    assert np.array_equal(k4["packed_mask"].numpy()[:nb], fo["packed_mask"][:nb])
    hid = dt.to_torch(a["hidden_states"])
    k7 = K.call("update_verify", {
        "accept_index": torch.from_numpy(fo["accept_index"].reshape(B, S)), "accept_length": torch.from_numpy(
            fo["accept_length"]), "predicts": torch.from_numpy(fo["predicts"]), "finish_pos": torch.from_numpy(
            fo["finish_pos"]), "seq_lens": t("seq_lens"), "req_pool_indices": t("req_pool_indices"),
        "req_to_token": t("req_to_token").clone(), "out_cache_loc": t("out_cache_loc"), "hidden_states": hid,
        "verify_node_ids": t("verify_node_ids")}, {"B": B, "Q": Q, "S": S, "H": s.H, "S_max": a["req_to_token"].shape[1]})
    n_unf = int(fo["next_indptr"][int(fo["unfinished_count"][0])])
    for n, v in k7.items():
        ref = v.numpy() if v.dtype != torch.bfloat16 else dt.to_numpy(v)
        mine = fo[n]
        if n == "next_hidden":
            ref, mine = ref[:n_unf], mine.reshape(-1, s.H)[:n_unf]
        assert _same(ref.ravel(), np.asarray(mine).ravel()), f"K7 {n} differs from the PyTorch reference"


@pytest.mark.parametrize("case", [DRAFT_CASES[1], DRAFT_CASES[3], DRAFT_CASES[4]], ids=lambda c: c[0])
def test_draft_chain_against_pytorch_reference(case):
    """The stage library's draft step (K1 -> K2 -> K3 -> hand-off -> K4 -> verify-set selection)
    against the PyTorch reference kernels and the host glue (eagle4.kernels.tree_glue), fed with the
    same per-layer top-K candidates (uncounted taps of the unfused chain)."""
    torch = pytest.importorskip("torch")
    from eagle4 import dtypes as dt
    from eagle4 import kernels as Kr
    from eagle4.kernels import tree_glue as glue

    name, B, K, widths, N, M, I, Vn, hdt, wdt, hot = case
    s = fc.DraftShape(B=B, K=K, widths=widths, H=24, Vt=96, V=500 if hot else 0, N=N, M=M, I=I, L=13,
                      verify_num=Vn, use_hot=hot, hidden_dtype=hdt, weight_dtype=wdt, seed=len(name))
    a = fc.make_draft_inputs(s)
    uo, _ = fc.run_draft("unfused", s, a, debug=True)
    T = torch.from_numpy
    st = glue.init_draft_state(T(a["root_token"]), N=N, M=M, K=K, I=I)
    cc, Ic = glue.ROOT_CC, glue.ROOT_IC
    last = torch.ones((B, 1), dtype=torch.float32)
    topk_idx = torch.zeros((B, 1), dtype=torch.int64)
    mask = torch.zeros((B, 1, 0), dtype=torch.bool)
    parents, fed = [], []
    for d, W in enumerate(widths):
        C = W * K
        hid = dt.to_torch(np.ascontiguousarray(a["draft_hidden"][d][: B * W]))
        k1 = Kr.call("draft_tree_score", {
            "topk_probas_sampling": T(np.ascontiguousarray(uo["dbg_topk_p"][d][:, :C])),
            "topk_tokens_sampling": T(np.ascontiguousarray(uo["dbg_topk_t"][d][:, :C])), "last_layer_scores": last,
            "input_hidden_states": hid, "hot_token_id": T(a["hot_token_id"]) if hot else None},
            {"batch_size": B, "node_top_k": K, "tree_width": W, "cumu_count": cc, "use_hot_token_id": hot})
        out_h = dt.to_numpy(k1["output_hidden_states"]) if hdt != "float32" else k1["output_hidden_states"].numpy()
        assert _same(out_h.reshape(-1), uo["out_hidden"][d].reshape(-1)), f"layer {d}: K1 output_hidden_states"
        k2 = Kr.call("update_draft_state", {
            "topk_probas": k1["curr_layer_scores"], "topk_tokens": k1["topk_tokens_sampling"],
            "sorted_scores": k1["sort_layer_scores"], "sorted_indexs": k1["sort_layer_indices"],
            "parent_indexs": k1["parent_indices_in_layer"], "topk_indexs": topk_idx, "input_tree_mask": mask,
            **{k: st[k] for k in ("cumu_tokens", "cumu_scores", "cumu_deltas", "prev_indexs", "next_indexs",
                                  "side_indexs", "work_scores", "sort_scores", "output_tree_mask")}},
            {"batch_size": B, "node_top_k": K, "tree_width": W, "input_count": Ic, "cumu_count": cc,
             "verify_num": Vn, "curr_depth": d + 1, "max_input_size": I, "max_node_count": N, "max_verify_num": M})
        st.update({k: v for k, v in k2.items() if k in st})
        assert np.array_equal(k2["output_tokens"].numpy(), uo["out_tokens"][d]), f"layer {d}: output_tokens"
        n0 = min(min(max(Vn, 1), M), cc)
        k3 = Kr.call("work_deltas", {"work_scores": st["work_scores"]},
                     {"batch_size": B, "node_count": n0, "node_top_k": K, "verify_num": Vn, "row_stride": M + K})
        assert _same(k3["work_deltas"].numpy(), uo["work_deltas"][d]), f"layer {d}: work_deltas"
        cc += C
        parents.append(k1["parent_indices_in_layer"])
        if d + 1 == len(widths):
            break
        Wn = widths[d + 1]
        fr = glue.frontier_handoff(output_tokens=k2["output_tokens"], output_scores=k2["output_scores"],
                                   output_hidden_states=k1["output_hidden_states"],
                                   cache_topk_indices=k1["cache_topk_indices"], output_tree_mask=k2["output_tree_mask"],
                                   Ic=Ic, W_next=Wn)
        last, topk_idx, mask, Ic = fr.last_layer_scores, fr.topk_indexs, fr.input_tree_mask, fr.Ic
        fed.append(Wn)
        t4, p4 = glue.draft_mask_inputs(widths=fed, parents=parents, seq_lens=T(a["seq_lens"]),
                                        req_pool_indices=T(a["req_pool_indices"]), req_to_token=T(a["req_to_token"]),
                                        tree_cache_locs=T(a["draft_cache_locs"]), write_bool_mask=False)
        k4 = Kr.call("tree_mask", t4, p4)
        for n in ("qo_indptr", "kv_indptr", "mask_indptr_bits", "mask_indptr_bytes"):
            assert np.array_equal(k4[n].numpy(), uo[n][d][: B + 1]), f"layer {d}: K4 {n}"
        nkv, nb = int(uo["kv_indptr"][d][B]), int(uo["mask_indptr_bytes"][d][B])
        assert np.array_equal(k4["kv_indices"].numpy()[:nkv], uo["kv_indices"][d][:nkv])
        assert np.array_equal(k4["positions"].numpy().ravel(), uo["positions"][d][: B * Wn])
        assert np.array_equal(k4["packed_mask"].numpy()[:nb], uo["packed_mask"][d][:nb])
    nn = min(cc, N)
    for k in ("cumu_tokens", "cumu_scores", "cumu_deltas", "prev_indexs", "next_indexs", "side_indexs"):
        assert _same(st[k].numpy()[:, :nn], uo[k][:, :nn]), f"final state {k}"
    vs = glue.select_verify_set(cumu_tokens=st["cumu_tokens"], cumu_scores=st["cumu_scores"],
                                prev_indexs=st["prev_indexs"], cc=cc, verify_num=Vn, M=M)
    Q = vs.Q
    assert Q == uo["cc_out"][1]
    for ref, mine in ((vs.node_ids, "vt_node_ids"), (vs.candidates, "vt_candidates"), (vs.tree_parent, "vt_tree_parent"),
                      (vs.retrive_next_token, "vt_next_token"), (vs.retrive_next_sibling, "vt_next_sibling"),
                      (vs.retrive_index, "vt_retrive_index")):
        assert np.array_equal(ref.numpy(), uo[mine].ravel()[: B * Q].reshape(B, Q)), mine


def _chain_scenarios():
    from eagle4.cases import chain
    groups: dict[str, list] = {}
    for c in chain.cases():
        groups.setdefault(c.case_id.split("/")[1], []).append(c)
    return chain, groups


def _ref(case):
    import torch

    from eagle4 import dtypes as dt
    from eagle4 import kernels as Kr

    out = Kr.call(case.kernel, {k: dt.to_torch(np.ascontiguousarray(v)) for k, v in case.inputs.items()}, case.params)
    return {k: dt.to_numpy(v) if v.dtype == torch.bfloat16 else v.numpy() for k, v in out.items()}


def test_fused_designs_on_the_chained_catalog():
    """The §13 chained catalog (eagle4.cases.chain: whole draft and verify steps recorded kernel by
    kernel): the fused draft pipeline, driven by the catalog's per-layer top-K candidates and hidden
    rows (LM head bypassed), and the fused verify pipeline, driven by the catalog's verify inputs,
    reproduce every reference output of every recorded call; the fused draft's verify tree equals
    the tree the catalog's verify steps consume."""
    chain, groups = _chain_scenarios()
    B, K, H = chain.B, chain.K, chain.H
    checked = 0
    for dname, (N, M, I, Vn) in (("draft3", (128, 64, 64, 64)), ("draft4", (256, 128, 64, 128))):
        calls = groups[dname]
        k1s = [c for c in calls if c.kernel == "draft_tree_score"]
        widths = [c.params["tree_width"] for c in k1s]
        D = len(widths)
        k4s = [c for c in calls if c.kernel == "tree_mask"]
        last_k4 = k4s[-1].inputs
        s = fc.DraftShape(B=B, K=K, widths=widths, H=H, Vt=16, V=0, N=N, M=M, I=I, L=1, verify_num=Vn, use_hot=False,
                          hidden_dtype="bfloat16", weight_dtype="bfloat16")
        a = fc.make_draft_inputs(s)
        a["root_token"] = _chain_root(calls)
        a["seq_lens"], a["req_pool_indices"] = last_k4["seq_lens"], last_k4["req_pool_indices"]
        a["req_to_token"] = np.ascontiguousarray(last_k4["req_to_token"])
        a["draft_cache_locs"] = np.ascontiguousarray(last_k4["tree_cache_locs"])
        T = a["draft_cache_locs"].shape[1]
        capkv, cappack = B * (int(a["seq_lens"].max()) + T), B * ((K * (int(a["seq_lens"].max()) + T) + 7) // 8)
        for n, dt_, ln in (("kv_indices", np.int32, capkv), ("packed_mask", np.uint8, cappack)):
            a[n] = np.full((D, ln), 0xAB if dt_ is np.uint8 else -2, dt_)
        cp = np.zeros((D, B, 64), np.float32)
        ct = np.zeros((D, B, 64), np.int64)
        for d, c in enumerate(k1s):
            W = widths[d]
            cp[d, :, : W * K] = c.inputs["topk_probas_sampling"]
            ct[d, :, : W * K] = c.inputs["topk_tokens_sampling"]
            a["draft_hidden"][d, : B * W] = c.inputs["input_hidden_states"]
        verifies = [v for v in groups if v.startswith(dname + "_")]
        for vname in verifies:
            vcalls = groups[vname]
            v4 = next(c for c in vcalls if c.kernel == "tree_mask")
            Q = v4.params["Q"]
            fo, _ = fc.run_draft("fused", fc.replace(s, vn_final=Q), a, candidates=(cp, ct))
            # ---- draft: every recorded K1/K2/K3/K4 call
            refs = {c.case_id: _ref(c) for c in calls}
            k2s = [c for c in calls if c.kernel == "update_draft_state"]
            k3s = [c for c in calls if c.kernel == "work_deltas"]
            for d in range(D):
                Wn = widths[d + 1] if d + 1 < D else 0
                r1, r2 = refs[k1s[d].case_id], refs[k2s[d].case_id]
                if Wn:
                    got_h = fo["out_hidden"][d].reshape(B, K, H)[:, :Wn]
                    assert _same(got_h, r1["output_hidden_states"][:, :Wn]), f"{vname} layer {d}: K1 hidden"
                    assert (fo["out_tokens"][d][:, :Wn] == r2["output_tokens"][:, :Wn]).all()
                    r4 = refs[k4s[d].case_id]
                    for n in ("qo_indptr", "kv_indptr", "mask_indptr_bits", "mask_indptr_bytes"):
                        assert (fo[n][d][: B + 1] == r4[n]).all(), f"{vname} layer {d}: K4 {n}"
                    nkv, nb = int(r4["kv_indptr"][B]), int(r4["mask_indptr_bytes"][B])
                    assert (fo["kv_indices"][d][:nkv] == r4["kv_indices"][:nkv]).all()
                    assert (fo["positions"][d][: B * Wn] == r4["positions"].ravel()).all()
                    assert (fo["packed_mask"][d][:nb] == r4["packed_mask"][:nb]).all()
                assert _same(fo["work_deltas"][d], refs[k3s[d].case_id]["work_deltas"]), f"{vname} layer {d}: K3"
            cc = int(fo["cc_out"][0])
            nn = min(cc, N)
            rlast = refs[k2s[-1].case_id]
            for n in ("cumu_tokens", "cumu_scores", "cumu_deltas", "prev_indexs", "next_indexs", "side_indexs"):
                assert _same(fo[n][:, :nn], rlast[n][:, :nn]), f"{vname}: final {n}"
            # ---- the verify tree the catalog's verify step consumes
            v6 = next(c for c in vcalls if c.kernel == "reject_sample")
            v5 = next(c for c in vcalls if c.kernel == "logits_to_probas")
            v7 = next(c for c in vcalls if c.kernel == "update_verify")
            assert int(fo["cc_out"][1]) == Q
            tree = {k: fo[k].ravel()[: B * Q].reshape(B, Q) for k in fc.DRAFT_TENSORS[27:33]}
            assert (tree["vt_candidates"] == v6.inputs["candidates"]).all()
            assert (tree["vt_next_token"] == v6.inputs["retrive_next_token"]).all()
            assert (tree["vt_next_sibling"] == v6.inputs["retrive_next_sibling"]).all()
            assert (tree["vt_tree_parent"] == v4.inputs["tree_parent"]).all()
            if "verify_node_ids" in v7.inputs:
                assert (tree["vt_node_ids"] == v7.inputs["verify_node_ids"]).all()
            # ---- fused verify on the catalog's verify inputs
            S = v6.params["S"]
            V = v6.params["V"]
            vs = fc.VerifyShape(B=B, Q=Q, S=S, V=V, H=H, L=1, eos=-1, hidden_dtype="bfloat16",
                                threshold_single=v6.params["threshold_single"], threshold_acc=v6.params["threshold_acc"])
            va = fc.make_verify_inputs(vs, parents=v4.inputs["tree_parent"], candidates=v6.inputs["candidates"])
            fin = v7.inputs["finish_pos"]
            va.update(seq_lens=v4.inputs["seq_lens"], req_pool_indices=v4.inputs["req_pool_indices"],
                      req_to_token=np.ascontiguousarray(v7.inputs["req_to_token"]),
                      out_cache_loc=v7.inputs["out_cache_loc"], logits=np.ascontiguousarray(v5.inputs["logits"]),
                      temperatures=v5.inputs["temperatures"], coins=v6.inputs["coins"],
                      final_coins=v6.inputs["final_coins"], hidden_states=v7.inputs["hidden_states"],
                      remaining=np.where(fin >= 0, fin.astype(np.int64) + 1, 1 << 40).astype(np.int64))
            if "verify_node_ids" in v7.inputs:
                va["verify_node_ids"] = v7.inputs["verify_node_ids"]
            L = int(v4.inputs["seq_lens"].max())
            va["kv_indices"] = np.full(B * (L + Q), -2, np.int32)
            va["packed_mask"] = np.full(B * ((Q * (L + Q) + 7) // 8), 0xAB, np.uint8)
            vo, _ = fc.run_verify("fused", vs, va)
            r4, r6, r7 = _ref(v4), _ref(v6), _ref(v7)
            for n in ("qo_indptr", "kv_indptr", "mask_indptr_bits", "mask_indptr_bytes"):
                assert (vo[n] == r4[n]).all(), f"{vname}: verify K4 {n}"
            nkv, nb = int(r4["kv_indptr"][B]), int(r4["mask_indptr_bytes"][B])
            assert (vo["kv_indices"][:nkv] == r4["kv_indices"][:nkv]).all()
            assert (vo["packed_mask"][:nb] == r4["packed_mask"][:nb]).all()
            assert (vo["positions"] == r4["positions"].ravel()).all()
            assert (vo["accept_length"] == r6["accept_length"]).all(), f"{vname}: K6 accept_length"
            assert (vo["accept_index"] == r6["accept_index"].ravel()).all()
            assert (vo["predicts"] == r6["predicts"]).all()
            assert (vo["finish_pos"] == fin).all()
            n_unf = int(r7["next_indptr"][int(r7["unfinished_count"][0])])
            for n, ref in r7.items():
                mine = vo["req_to_token"] if n == "req_to_token" else vo[n]
                if n == "next_hidden":
                    ref, mine = ref[:n_unf], mine.reshape(-1, H)[:n_unf]
                assert _same(np.asarray(mine).ravel(), ref.ravel()), f"{vname}: K7 {n}"
            checked += 1
    assert checked == 5  # draft3 x {q1, q16, q64, q16_all_finished} + draft4_q128


def _chain_root(calls):
    k2 = next(c for c in calls if c.kernel == "update_draft_state")
    return np.ascontiguousarray(k2.inputs["cumu_tokens"][:, 0]).astype(np.int64)


@pytest.mark.parametrize("tensor", ["root_token", "hot_token_id"])
def test_draft_refuses_token_ids_beyond_its_32bit_state(tensor):
    """The on-chip tree state keeps token ids in 32-bit words: a larger id is refused by name, never truncated."""
    s = fc.DraftShape(B=2, K=4, widths=[1, 4], H=16, Vt=64, V=200, N=64, M=32, I=16, L=8, verify_num=8,
                      use_hot=True, weight_dtype="int8")
    a = fc.make_draft_inputs(s)
    a[tensor] = a[tensor].copy()
    a[tensor][1] = 2**31
    with pytest.raises(fc.FusedCsimError, match=rf"{tensor}\[1\] = 2147483648 does not fit"):
        fc.run_draft("fused", s, a)


def test_lane_topk_equals_one_sequential_scan(tmp_path):
    """The draft top-K in 16 lanes + merge (e4f_stages.hpp topk_row) selects the same K in the same order as one
    sequential insertion scan in (p desc, v asc), on rows with ties, NaN and infinities, every K and short rows."""
    from eagle4.backends import csim_build

    if csim_build.tools_missing():
        pytest.fail(csim_build.tools_missing(), pytrace=False)
    src = tmp_path / "topk.cpp"
    src.write_text(r"""#include <cstdio>
#include <random>
#include "e4f_stages.hpp"
using namespace e4f;
static void ref(const float* row, int V, int K, float* op, int64_t* oi) {  // one sequential insertion scan
  int n = 0;
  for (int v = 0; v < V; ++v) {
    const float p = row[v];
    if (n == K && !before(p, v, op[K - 1], oi[K - 1])) continue;
    int pos = (n < K) ? n++ : K - 1;
    while (pos > 0 && before(p, v, op[pos - 1], oi[pos - 1])) { op[pos] = op[pos - 1]; oi[pos] = oi[pos - 1]; --pos; }
    op[pos] = p; oi[pos] = v;
  }
}
int main() {
  std::mt19937 g(7);
  const float pool[] = {0.5f, 0.25f, 0.125f, 0.0f, -0.0f, __builtin_nanf(""), __builtin_inff(), -__builtin_inff(), 1e-30f};
  int bad = 0, cases = 0;
  for (int t = 0; t < 3000; ++t, ++cases) {
    const int V = 1 + g() % 120, K = 1 + g() % E4F_MAX_K;
    float row[128];
    for (int v = 0; v < V; ++v) row[v] = (g() % 3 == 0) ? pool[g() % 9] : float(g() % 7) / 7.0f;
    float a[E4F_MAX_K], b[E4F_MAX_K]; int64_t ia[E4F_MAX_K], ib[E4F_MAX_K];
    ref(row, V, K, a, ia);
    topk_row(row, V, K, b, ib);
    const int n = V < K ? V : K;
    for (int k = 0; k < n; ++k)
      if (ia[k] != ib[k] || std::memcmp(&a[k], &b[k], 4) != 0) { ++bad; break; }
  }
  std::printf("%d %d\n", cases, bad);
  return 0;
}
""")
    exe = tmp_path / "topk"
    p = csim_build.run_cxx([csim_build.find_cxx(), "-std=c++17", "-O1", "-ffp-contract=off", "-Wno-unknown-pragmas",
                      *csim_build.include_flags(), f"-I{csim_build.HLS_DIR / 'fused' / 'common'}", str(src), "-o", str(exe)],
                     "top-K equivalence", tmp_path)
    assert p.returncode == 0, p.stderr
    import subprocess

    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, check=True).stdout.split()
    assert out == ["3000", "0"], out


@pytest.mark.parametrize("hot", [True, False], ids=["hot", "full"])
def test_int4_lm_head_against_the_python_quantization(hot):
    """The packed int4 LM head (w_code 3, the synthesized precision) against a Python reference of the same
    quantization: approximations.int4's unpacking of the very bytes the C-sim reads, times the per-row scale,
    in float64, then softmax and top-K. Layer 0's top-K (the unfused chain's uncounted taps; the fused design
    is bitwise equal to that chain, test_draft_pipeline_exact_vs_unfused) has the reference's tokens and
    probabilities to f32 rounding."""
    from eagle4.workload.approximations.int4 import unpack_int4_rows

    B, K, H, Vt = 3, 8, 40, 96  # H / 2 = 20 bytes per row: a packed row's tail past its last full beat too
    s = fc.DraftShape(B=B, K=K, widths=[1, 8, 3], H=H, Vt=Vt, V=500 if hot else 0, N=128, M=64, I=64, L=13,
                      verify_num=40, use_hot=hot, hidden_dtype="bfloat16", weight_dtype="int4", seed=17)
    a = fc.make_draft_inputs(s)
    assert a["lm_weight"].dtype == np.uint8 and a["lm_weight"].shape == (Vt, H // 2)
    uo, cnt = fc.run_draft("unfused", s, a, debug=True)
    assert cnt["lmhead_weight"][0] == Vt * (H // 2) * len(s.widths)  # packed bytes, one pass per layer
    w = unpack_int4_rows(a["lm_weight"], H).astype(np.float64) * a["lm_scale"].astype(np.float64)[:, None]
    x = np.asarray(a["draft_hidden"][0][:B]).astype(np.float32).astype(np.float64)
    logits = x @ w.T
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    for b in range(B):
        order = np.lexsort((np.arange(Vt), -p[b]))[:K]
        got_t, got_p = uo["dbg_topk_t"][0][b][:K], uo["dbg_topk_p"][0][b][:K]
        assert np.array_equal(got_t, order), f"request {b}: top-K tokens (rows of the LM head: hot indices before K1)"
        np.testing.assert_allclose(got_p, p[b][order], rtol=2e-5, atol=1e-7)

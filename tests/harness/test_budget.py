"""Byte accounting, workload trace, budget model and roofline (eagle4.budget, eagle4.budget.trace)."""

from __future__ import annotations

import copy
import csv

import numpy as np
import pytest
from pydantic import ValidationError

from eagle4.backends import fused_csim as fc
from eagle4.budget import bytes as bb
from eagle4.budget import model as bm
from eagle4.budget.config import DTYPE_BYTES, fpga_section
from eagle4.budget.trace import build_trace, contract_sha256

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
        w.writerow(["accept_length", "provenance", "contract_sha256"])
        for a in [3, 3, 3, 3]:
            w.writerow([a, "measured", contract_sha256(SMALL)])
        w.writerow([0, "measured", ""])  # a row without the contract's hash is never this contract's
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
                    and x["port"] in ("lmhead_weight", *fc.LM_WEIGHT_PORTS)]
            cycle = rows[0]["cycle"]
            got = sum(x["bytes_read"] for x in rows if x["cycle"] == cycle)  # the fused design's weight ports
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


def test_like_for_like_variants(small_result):
    """Fusion only runs the fused designs at the baseline's precision and vocabulary, approximations only
    the unfused chain with the fused approximations: the shared parts agree byte for byte, every count is
    whole 64-B beats, and the host transfers are the same on every variant."""
    r = small_result
    v = r.variants
    assert set(v) == set(bb.VARIANTS)
    for B in r.batches:
        # the LM-head weight stream is once per layer in both chains: equal at equal precision/vocabulary
        assert v["fused_exact"].by_batch[(B, "draft_lm_head_weights")] == v["unfused"].by_batch[(B, "draft_lm_head_weights")]
        assert v["fused"].by_batch[(B, "draft_lm_head_weights")] == v["unfused_approx"].by_batch[(B, "draft_lm_head_weights")]
        assert v["fused"].by_batch[(B, "drafter_weights")] == v["unfused_approx"].by_batch[(B, "drafter_weights")]
        assert len({bc.by_batch[(B, "host_fpga_transfers")] for bc in v.values()}) == 1
        assert v["fused"].by_batch[(B, "draft_lm_head_weights")] < v["unfused"].by_batch[(B, "draft_lm_head_weights")]
    for bc in v.values():
        assert all(x % bb.BEAT == 0 for x in bc.by_batch.values())
        assert bc.tokens == v["unfused"].tokens
    host = bb.host_transfer_bytes(r.fpga, r.trace.decode, 1, r.trace.prefix_len)
    Q, V = r.trace.decode["Q"], r.fpga.model.vocab_size
    assert host["host_to_fpga"] >= Q * V * 4  # at least the f32 logits of every verify row


def test_early_gate_states_its_verdict_plainly(small_result):
    r = small_result
    B = max(r.batches)
    fo = r.ratio_of("fusion_only", B)
    passing = r.early_gate_lines(threshold=fo * 0.5)
    assert f"B={B}" in passing[0] and "PASS" in passing[0] and len(passing) == 1
    failing = r.early_gate_lines(threshold=fo * 2)
    assert "FAILS" in failing[0] and "escalation" in failing[1]
    assert sum(1 for x in failing if "top contributor" in x) == 3


def test_byte_gates_read_the_per_point_ratios(tmp_path):
    """The early gate judges fusion only at the production point (largest batch), the final gate the
    effective ratio at the worst operating point (not pooled)."""
    from eagle4.gates import evaluate_all

    c = copy.deepcopy(SMALL)
    c["gates"] = [{"name": "bytes_reduction_early", "metric": "bytes_per_token_ratio", "threshold": 2.0,
                   "provenance": ["csim", "computed"]},
                  {"name": "bytes_reduction_final", "metric": "bytes_per_token_ratio", "threshold": 4.0,
                   "provenance": ["csim", "computed"]}]
    r = bb.count_trace(copy.deepcopy(c))  # the gated contract's own artifact (its hash covers the gates)
    bb.write_bytes_csv(r, tmp_path / "reports" / "bytes_per_token.csv")
    rows = bb.read_csv(tmp_path / "reports" / "bytes_per_token.csv")
    per_point = {(x["component"], x["batch"]): float(x["bytes_per_token"]) for x in rows if x["backend"] == "ratio"}
    early, final = evaluate_all(c, tmp_path / "reports", root=tmp_path)
    B = max(r.batches)
    assert early.value == pytest.approx(per_point[("fusion_only", str(B))], rel=1e-6)
    assert early.details["ratio"] == "fusion_only" and early.details["batch"] == B
    worst = min(per_point[("effective", str(b))] for b in r.batches)
    assert final.value == pytest.approx(worst, rel=1e-6) and final.details["ratio"] == "effective"


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


def _sum(port_bytes):
    return (sum(v[0] for v in port_bytes.values()), sum(v[1] for v in port_bytes.values()))


def test_unfused_chain_counts_equal_the_hls_kernels():
    """The unfused reference chain, configured as [fpga.unfused] of the default contract (one K5 logits
    read, packed K4, K6 reading target_probs where it tests), moves exactly the bytes the team's unfused
    HLS kernels (hls/<key>, eagle4.backends.csim) count on the same calls; K1 differs only by the
    optional HLS-extension output_tokens [B,K] the csim backend allocates (not used by the chain)."""
    torch = pytest.importorskip("torch")
    from eagle4.backends import fused_csim as fc
    from eagle4.backends.csim import CsimBackend
    from eagle4.kernels import tree_glue as glue

    be = CsimBackend()
    ok, why = be.available()
    if not ok:
        pytest.fail(f"csim backend unavailable: {why}")
    f = fpga_section("contracts/default.toml").unfused
    kw = dict(k5_passes=f.k5_passes, k4_materialize=f.k4_materialize_bool)
    # ---- verify step: K4, K5, K6, K7
    B, Q, S, V, H = 4, 16, 6, 300, 8
    s = fc.VerifyShape(B=B, Q=Q, S=S, V=V, H=H, L=9, temperatures=[1.0, 0.0], seed=3)
    rng = np.random.default_rng(0)
    a = fc.make_verify_inputs(s, parents=np.stack([fc.random_tree(rng, Q, "chain") for _ in range(B)]),
                              accept=[2, 0, 5, 1])
    uo, ucnt = fc.run_verify("unfused", s, a, k6_sglang=f.k6_sglang_style, **kw)
    mine = {k: _sum({p: v for p, v in ucnt.items() if p.startswith(k + "_")}) for k in ("k4", "k5", "k6", "k7")}
    S_max = a["req_to_token"].shape[1]
    be.run("tree_mask", {"seq_lens": a["seq_lens"], "req_pool_indices": a["req_pool_indices"],
                         "req_to_token": a["req_to_token"], "tree_cache_locs": a["out_cache_loc"].reshape(B, Q),
                         "tree_parent": a["tree_parent"]}, {"S_max": S_max, "B": B, "T": Q, "Q": Q,
                                                            "write_bool_mask": False})
    assert _sum(be.last_port_bytes) == mine["k4"]
    o5 = be.run("logits_to_probas", {"logits": a["logits"], "temperatures": a["temperatures"]},
                {"rows_per_req": Q, "write_probas": True})
    assert _sum(be.last_port_bytes) == mine["k5"]
    k6in = {n: a[n] for n in ("candidates", "retrive_index", "retrive_next_token", "retrive_next_sibling", "coins",
                              "final_coins")}
    k6in.update(target_probs=o5["probas"].reshape(B, Q, V), target_predict=o5["argmax_ids"].reshape(B, Q),
                is_greedy=o5["is_greedy"])
    o6 = be.run("reject_sample", k6in, {"threshold_single": 1.0, "threshold_acc": 1.0, "B": B, "Q": Q, "S": S, "V": V})
    assert _sum(be.last_port_bytes) == mine["k6"]
    assert (o6["accept_length"] == uo["accept_length"]).all() and (o6["predicts"] == uo["predicts"]).all()
    be.run("update_verify", {"accept_index": o6["accept_index"], "accept_length": o6["accept_length"],
                             "predicts": o6["predicts"], "finish_pos": uo["finish_pos"], "seq_lens": a["seq_lens"],
                             "req_pool_indices": a["req_pool_indices"], "req_to_token": a["req_to_token"],
                             "out_cache_loc": a["out_cache_loc"], "hidden_states": a["hidden_states"],
                             "verify_node_ids": a["verify_node_ids"]}, {"B": B, "Q": Q, "S": S, "H": H, "S_max": S_max})
    assert _sum(be.last_port_bytes) == mine["k7"]
    # ---- draft step: K1, K2, K3, K4 (draft use) per layer
    B, K, widths, N, M, I, Vn = 3, 8, [1, 8, 3, 5], 128, 64, 64, 40
    s = fc.DraftShape(B=B, K=K, widths=widths, H=24, Vt=96, V=500, N=N, M=M, I=I, L=13, verify_num=Vn,
                      hidden_dtype="bfloat16", weight_dtype="int8", seed=4)
    a = fc.make_draft_inputs(s)
    uo, ucnt = fc.run_draft("unfused", s, a, debug=True, **kw)
    theirs = {k: [0, 0] for k in ("k1", "k2", "k3", "k4")}

    def add(k):
        r, w = _sum(be.last_port_bytes)
        theirs[k][0] += r
        theirs[k][1] += w
        return be.last_port_bytes

    st = {k: v.numpy() for k, v in glue.init_draft_state(torch.from_numpy(a["root_token"]), N=N, M=M, K=K, I=I).items()}
    cc, Ic = 1, 1
    last, tidx, mask = np.ones((B, 1), np.float32), np.zeros((B, 1), np.int64), np.zeros((B, 1, 0), bool)
    parents, fed, k1_ext = [], [], 0
    for d, W in enumerate(widths):
        C = W * K
        o1 = be.run("draft_tree_score", {
            "topk_probas_sampling": np.ascontiguousarray(uo["dbg_topk_p"][d][:, :C]),
            "topk_tokens_sampling": np.ascontiguousarray(uo["dbg_topk_t"][d][:, :C]), "last_layer_scores": last,
            "input_hidden_states": np.ascontiguousarray(a["draft_hidden"][d][: B * W]), "hot_token_id": a["hot_token_id"]},
            {"batch_size": B, "node_top_k": K, "tree_width": W, "cumu_count": cc, "use_hot_token_id": True})
        k1_ext += add("k1").get("output_tokens", (0, 0))[1]
        o2 = be.run("update_draft_state", {
            "topk_probas": o1["curr_layer_scores"], "topk_tokens": o1["topk_tokens_sampling"],
            "sorted_scores": o1["sort_layer_scores"], "sorted_indexs": o1["sort_layer_indices"],
            "parent_indexs": o1["parent_indices_in_layer"], "topk_indexs": tidx, "input_tree_mask": mask,
            **{k: st[k] for k in ("cumu_tokens", "cumu_scores", "cumu_deltas", "prev_indexs", "next_indexs",
                                  "side_indexs", "work_scores", "sort_scores", "output_tree_mask")}},
            {"batch_size": B, "node_top_k": K, "tree_width": W, "input_count": Ic, "cumu_count": cc, "verify_num": Vn,
             "curr_depth": d + 1, "max_input_size": I, "max_node_count": N, "max_verify_num": M})
        add("k2")
        st.update({k: v for k, v in o2.items() if k in st})
        be.run("work_deltas", {"work_scores": st["work_scores"]},
               {"batch_size": B, "node_count": min(min(max(Vn, 1), M), cc), "node_top_k": K, "verify_num": Vn,
                "row_stride": M + K})
        add("k3")
        cc += C
        parents.append(torch.from_numpy(o1["parent_indices_in_layer"]))
        if d + 1 == len(widths):
            break
        Wn = widths[d + 1]
        fr = glue.frontier_handoff(output_tokens=torch.from_numpy(o2["output_tokens"]),
                                   output_scores=torch.from_numpy(o2["output_scores"]),
                                   output_hidden_states=torch.from_numpy(o1["output_hidden_states"].view(np.int16)),
                                   cache_topk_indices=torch.from_numpy(o1["cache_topk_indices"]),
                                   output_tree_mask=torch.from_numpy(o2["output_tree_mask"]), Ic=Ic, W_next=Wn)
        last, tidx, mask, Ic = fr.last_layer_scores.numpy(), fr.topk_indexs.numpy(), fr.input_tree_mask.numpy(), fr.Ic
        fed.append(Wn)
        t4, p4 = glue.draft_mask_inputs(widths=fed, parents=parents, seq_lens=torch.from_numpy(a["seq_lens"]),
                                        req_pool_indices=torch.from_numpy(a["req_pool_indices"]),
                                        req_to_token=torch.from_numpy(a["req_to_token"]),
                                        tree_cache_locs=torch.from_numpy(a["draft_cache_locs"]), write_bool_mask=False)
        be.run("tree_mask", {k: v.numpy() for k, v in t4.items()}, p4)
        add("k4")
    for k in ("k1", "k2", "k3", "k4"):
        mine = _sum({p: v for p, v in ucnt.items() if p.startswith(k + "_")})
        want = (theirs[k][0], theirs[k][1] - (k1_ext if k == "k1" else 0))
        assert mine == want, f"{k}: unfused chain {mine} vs hls/{k} kernels {want}"


def test_gpu_graph_steps_are_the_contracts_rows(tmp_path):
    """The design report's GPU column: the graph-mode step of the same contract and batch, and the regions the
    fused designs replace (K1-K7 + sort_topk) summed; other contracts' rows and kernel rows are ignored."""
    import csv

    from eagle4.budget import design_report as dr

    cols = ["contract_sha256", "device", "batch", "kind", "name", "seconds_per_step", "step_s", "provenance"]
    rows = [("a" * 64, "H100", 1, "region", "K1", 1e-4, 0.02, "measured"),
            ("a" * 64, "H100", 1, "region", "sort_topk", 2e-4, 0.02, "measured"),
            ("a" * 64, "H100", 1, "region", "gemm", 5e-3, 0.02, "measured"),
            ("a" * 64, "H100", 1, "kernel", "K1", 9.0, 0.02, "measured"),
            ("b" * 64, "H100", 1, "region", "K1", 9.0, 9.0, "measured")]
    (tmp_path / "empty").mkdir()
    with open(tmp_path / "h100_e2e_hotspots.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        w.writerows(rows)
    got = dr.gpu_graph_steps("a" * 64, [tmp_path / "empty", tmp_path])
    assert list(got) == [1] and got[1]["step_us"] == pytest.approx(2e4) and got[1]["k_us"] == pytest.approx(300.0)
    assert "H100" in got[1]["provenance"]
    assert dr.gpu_graph_steps("c" * 64, [tmp_path]) == {}

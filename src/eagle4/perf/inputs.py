"""Inputs of one call at a bench point: random (never zeros), drawn on the device from fixed seeds.

The inputs are well formed the way a serving engine produces them (distinct frontier node ids,
sorted score lists, valid trees), so that the PyTorch anchors of ``perf.anchors`` compute the same
outputs as our kernels on them (``tests/perf/test_kernel_anchors.py`` checks this on the CPU).
"""

from __future__ import annotations

import numpy as np

from eagle4.perf.points import ACCEPTED, Point


def abi_args(kernel: str, tensors: dict, params: dict) -> list:
    from eagle4.backends.cuda import _scalar
    from eagle4.spec import kernel_spec

    spec = kernel_spec(kernel)
    return [(_scalar(a, params[a.name]) if a.role == "scalar" else tensors.get(a.name)) for a in spec.args if a.abi]


def _draft_layer(q: dict, dev, g, rnd, ri) -> tuple[dict, dict, dict, dict]:
    """K1 and K2 tensors of one draft layer at depth 3, sharing K1's outputs as K2's inputs."""
    import torch

    from eagle4 import kernels

    B, K = q["B"], q["K"]
    W = q.get("W", K)
    C = W * K
    Vh = q.get("V_hot", 32768)
    hdt = getattr(torch, q.get("dtype", "float16"))
    t1 = dict(topk_probas_sampling=rnd(B, C), topk_tokens_sampling=ri(0, Vh, B, C), last_layer_scores=rnd(B, W),
              input_hidden_states=torch.randn(B * W, q["H"], generator=g, device=dev).to(hdt),
              hot_token_id=ri(0, 128256, Vh))
    cc = 1 + K + W * K  # node count after two layers
    p1 = dict(batch_size=B, node_top_k=K, tree_width=W, cumu_count=cc, use_hot_token_id=True)
    t1.update(kernels.module("draft_tree_score").allocate(t1, p1, dev))
    I, N, M, Vn = q["I"], q["N"], q["M"], q["Vn"]
    Ic = min(1 + 2 * W, I + 1)
    sc = torch.sort(rnd(B, C), dim=1, descending=True)
    frontier = torch.stack([torch.randperm(cc - 1, generator=g, device=dev)[:W] + 1 for _ in range(B)])
    t2 = dict(topk_probas=rnd(B, C), topk_tokens=ri(0, 128256, B, C), sorted_scores=sc.values, sorted_indexs=sc.indices,
              parent_indexs=sc.indices[:, :K] // K, topk_indexs=frontier, input_tree_mask=rnd(B, W, Ic - 1) < 0.5,
              cumu_tokens=ri(0, 9, B, N), cumu_scores=rnd(B, N), cumu_deltas=ri(0, 9, B, N),
              prev_indexs=ri(0, 9, B, N), next_indexs=ri(0, 9, B, N), side_indexs=ri(0, 9, B, N),
              work_scores=rnd(B, M + K), sort_scores=torch.sort(rnd(B, M), 1, descending=True).values,
              output_scores=torch.empty(B, K, device=dev), output_tokens=torch.empty(B, K, dtype=torch.int64, device=dev),
              output_tree_mask=torch.zeros(B, K, I + 1, dtype=torch.bool, device=dev))
    p2 = dict(batch_size=B, node_top_k=K, tree_width=W, input_count=Ic, cumu_count=max(cc, Vn), verify_num=Vn,
              curr_depth=3, max_input_size=I, max_node_count=max(N, max(cc, Vn) + C), max_verify_num=M)
    if p2["max_node_count"] != N:
        for k in ("cumu_tokens", "cumu_scores", "cumu_deltas", "prev_indexs", "next_indexs", "side_indexs"):
            t = t2[k]
            t2[k] = torch.cat([t, t[:, :1].expand(B, p2["max_node_count"] - N)], 1).contiguous()
    return t1, p1, t2, p2


def make_call(p: Point, dev, seed: int = 1234) -> tuple[dict, dict]:
    """(tensors incl. allocated outputs, params) of one call at point ``p``. For ``draft_step`` the
    tensors are {"k1": ..., "k2": ..., "k3": ...} and params likewise, wired as one draft layer."""
    import torch

    from eagle4 import kernels

    g = torch.Generator(device=dev).manual_seed(seed)
    q = p.params
    B = q["B"]

    def rnd(*shape):
        return torch.rand(*shape, generator=g, device=dev, dtype=torch.float32)

    def ri(lo, hi, *shape):
        return torch.randint(lo, hi, shape, generator=g, device=dev, dtype=torch.int64)

    if p.kernel in ("draft_tree_score", "update_draft_state", "work_deltas", "draft_step"):
        t1, p1, t2, p2 = _draft_layer(dict(q, H=q.get("H", 64), dtype=q.get("dtype", "float16"),
                                           I=q.get("I", 64), N=q.get("N", 1024), M=q.get("M", 64),
                                           Vn=q.get("Vn", 64)), dev, g, rnd, ri)
        K = q["K"]
        n0 = min(p2["verify_num"], p2["max_verify_num"])
        ws = torch.cat([torch.sort(rnd(B, n0), 1, descending=True).values,
                        torch.sort(rnd(B, K), 1, descending=True).values,
                        rnd(B, p2["max_verify_num"] - n0)], 1).contiguous()
        t3 = dict(work_scores=ws, work_deltas=torch.empty(K + 1, device=dev),
                  per_req_deltas=torch.empty(B, K + 1, device=dev))
        p3 = dict(batch_size=B, node_count=n0, node_top_k=K, verify_num=p2["verify_num"],
                  row_stride=p2["max_verify_num"] + K)
        if p.kernel == "draft_tree_score":
            return t1, p1
        if p.kernel == "update_draft_state":
            return t2, p2
        if p.kernel == "work_deltas":
            return t3, p3
        # one draft layer: K2 reads K1's outputs, K3 reads K2's work buffer
        t2.update(topk_probas=t1["curr_layer_scores"], topk_tokens=t1["topk_tokens_sampling"],
                  sorted_scores=t1["sort_layer_scores"], sorted_indexs=t1["sort_layer_indices"],
                  parent_indexs=t1["parent_indices_in_layer"])
        t3["work_scores"] = t2["work_scores"]
        p3["node_count"] = min(p2["verify_num"], p2["cumu_count"])
        return {"k1": t1, "k2": t2, "k3": t3}, {"k1": p1, "k2": p2, "k3": p3}

    t: dict = {}
    if p.kernel == "tree_mask":
        T, Q, L = q["T"], q["Q"], q["L"]
        Smax = L + 2 * T
        par = torch.stack([torch.tensor([-1] + [int(x) for x in np.random.default_rng(seed + b).integers(
            0, np.arange(1, T))], device=dev) for b in range(B)]) if T > 1 else torch.full((B, 1), -1, device=dev)
        t = dict(seq_lens=torch.full((B,), L, dtype=torch.int64, device=dev),
                 req_pool_indices=torch.arange(B, device=dev),
                 req_to_token=torch.randint(0, 2**31 - 1, (B, Smax), generator=g, device=dev, dtype=torch.int32),
                 tree_cache_locs=ri(0, 2**31 - 1, B, T), tree_parent=par.to(torch.int64))
        params = dict(S_max=Smax, B=B, T=T, Q=Q, write_bool_mask=False)
    elif p.kernel == "logits_to_probas":
        R = B * q["Q"]
        t = dict(logits=torch.randn(R, q["V"], generator=g, device=dev) * 4,
                 temperatures=torch.full((B,), 0.7, device=dev))
        params = dict(rows_per_req=q["Q"], write_probas=True)
    elif p.kernel == "reject_sample":
        from eagle4.cases.reject_sample import eagle_parents, links_from_parents

        Q, V, S = q["Q"], q["V"], q["S"]
        rng = np.random.default_rng(seed)
        nxt, sib = zip(*[links_from_parents(eagle_parents(Q, rng)) for _ in range(B)], strict=False)
        probs = torch.softmax(torch.randn(B, Q, V, generator=g, device=dev) * 3, dim=-1)
        cand = probs.argmax(-1)  # draft tokens that mostly agree with the target
        t = dict(candidates=cand, retrive_index=torch.arange(B * Q, device=dev).view(B, Q),
                 retrive_next_token=torch.tensor(np.stack(nxt), device=dev),
                 retrive_next_sibling=torch.tensor(np.stack(sib), device=dev), target_probs=probs,
                 target_predict=cand.clone(), is_greedy=torch.zeros(B, dtype=torch.uint8, device=dev),
                 coins=rnd(B, Q), final_coins=rnd(B))
        params = dict(threshold_single=1.0, threshold_acc=1.0, B=B, Q=Q, S=S, V=V)
    elif p.kernel == "update_verify":
        Q, S, Hh, L = q["Q"], q["S"], q["H"], q["L"]
        a = min(ACCEPTED, Q - 1, S - 1)
        ai = torch.full((B, S), -1, dtype=torch.int32, device=dev)
        ai[:, :a + 1] = (torch.arange(B, device=dev)[:, None] * Q + torch.arange(a + 1, device=dev)[None]).int()
        Smax = L + 2 * S
        t = dict(accept_index=ai, accept_length=torch.full((B,), a, dtype=torch.int32, device=dev),
                 predicts=torch.randint(0, 128256, (B * Q,), generator=g, device=dev, dtype=torch.int32),
                 finish_pos=torch.full((B,), -1, dtype=torch.int32, device=dev),
                 seq_lens=torch.full((B,), L, dtype=torch.int64, device=dev),
                 req_pool_indices=torch.arange(B, device=dev),
                 req_to_token=torch.zeros(B, Smax, dtype=torch.int32, device=dev),
                 out_cache_loc=ri(0, 2**30, B * Q),
                 hidden_states=torch.randn(B * Q, Hh, generator=g, device=dev).to(getattr(torch, q["dtype"])),
                 verify_node_ids=torch.arange(B * Q, device=dev).view(B, Q))
        params = dict(B=B, Q=Q, S=S, H=Hh, S_max=Smax)
    else:
        raise KeyError(p.kernel)
    t.update(kernels.module(p.kernel).allocate(t, params, dev))
    return t, params

"""Host glue between the kernels of a draft/verify step (KERNELS.md §8), as plain torch functions.

* ``init_draft_state``: tree init after a verify (§8.1 step 0, D13);
* ``external_topk``: the draft-side top-K after K5, (prob desc, index asc) (D24);
* ``frontier_handoff``: the next layer's K1/K2 inputs from this layer's outputs (§8.1 step 2, D20);
* ``draft_tree_parent`` / ``draft_mask_inputs``: K4's draft-use inputs (§8.1 step 3);
* ``dense_tree_mask``: K4's packed mask as the dense attention mask of the forward after it;
* ``select_verify_set``: verify-set selection and the sglang-style retrive links (§8.2 step 1,
  D14, D16, D18);
* ``k1_call`` .. ``k7_call``, ``verify_mask_inputs``: (tensors, params) of each kernel call from the
  previous kernels' outputs (the K1 -> K2 -> K3 and K4 -> K5 -> K6 -> K7 hand-offs), written once for
  the engine (``eagle4.workload.engine``) and the chained regressions (``eagle4.cases.chain``).

Everything is device-agnostic and works on batched tensors; nothing here is a kernel, so none of
it has a parity class, but the chained regressions (``eagle4.cases.chain``) feed its results to
every kernel and compare those.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eagle4.kernels.draft_tree_score import sort_key, stable_desc_order

ROOT_CC = 1  # D13: node 0 is the root, so a fresh tree holds one node
ROOT_IC = 1  # D13: the root expansion has an empty draft mask (Ic - 1 = 0 columns)

# fill values of a fresh draft state outside node 0 (the public dumps' sentinels): a kernel that
# reads or writes outside its region shows up in the chained regressions
SENTINELS = {"cumu_tokens": -777, "cumu_scores": -3.0, "cumu_deltas": -1, "prev_indexs": -1, "next_indexs": -2,
             "side_indexs": -3, "work_scores": -123.0, "sort_scores": -5.0}


def init_draft_state(root_tokens: torch.Tensor, *, N: int, M: int, K: int, I: int) -> dict[str, torch.Tensor]:
    """K2's state buffers for a new draft step (§8.1 step 0, D13).

    Node 0 = the root (``next_root_token``): token = root, score 1.0, depth 0, prev/next/side -1;
    ``sort_scores[b, 0] = 1.0``; everything else holds the sentinels above (the output tree mask
    the ``i mod 3 == 0`` pattern). The caller starts with ``cc = ROOT_CC`` and ``Ic = ROOT_IC``.
    """
    if N < 1 or M < 1:
        raise ValueError(f"init_draft_state: need N >= 1 and M >= 1 to hold the root, got N={N}, M={M}")
    B = root_tokens.shape[0]
    dev = root_tokens.device
    st = {name: torch.full((B, N), SENTINELS[name], dtype=torch.int64, device=dev)
          for name in ("cumu_tokens", "cumu_deltas", "prev_indexs", "next_indexs", "side_indexs")}
    st["cumu_scores"] = torch.full((B, N), SENTINELS["cumu_scores"], dtype=torch.float32, device=dev)
    st["cumu_tokens"][:, 0] = root_tokens.to(torch.int64)
    st["cumu_scores"][:, 0] = 1.0
    st["cumu_deltas"][:, 0] = 0
    for name in ("prev_indexs", "next_indexs", "side_indexs"):
        st[name][:, 0] = -1
    st["work_scores"] = torch.full((B, M + K), SENTINELS["work_scores"], dtype=torch.float32, device=dev)
    st["sort_scores"] = torch.full((B, M), SENTINELS["sort_scores"], dtype=torch.float32, device=dev)
    st["sort_scores"][:, 0] = 1.0
    st["output_tree_mask"] = (torch.arange(B * K * (I + 1), device=dev) % 3 == 0).reshape(B, K, I + 1)
    return st


def external_topk(probas: torch.Tensor, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-K of each row of ``probas [R, V]`` by (prob desc, index asc), NaN as -inf (D24, §5.4 step 6).

    Returns (topk_probas [R, K] f32 as bit copies, topk_tokens [R, K] int64).
    """
    if not 1 <= K <= probas.shape[1]:
        raise ValueError(f"external_topk: need 1 <= K <= V = {probas.shape[1]}, got K={K}")
    # (key desc, index asc) as one unique int64 per element, so a top-K selection gives the stable order
    # without sorting all V columns: the key's float bits mapped to a monotone integer, then the index
    bits = sort_key(probas).contiguous().view(torch.int32).to(torch.int64)
    ordered = torch.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)
    V = probas.shape[1]
    composite = ordered * (V + 1) + (V - torch.arange(V, device=probas.device))
    idx = torch.topk(composite, K, dim=1).indices
    vals = probas.view(torch.int32).gather(1, idx).view(torch.float32)
    return vals, idx.to(torch.int64)


@dataclass
class Frontier:
    """K1/K2 inputs of the next layer (``W`` frontier slots, mask width ``Ic - 1``)."""

    W: int
    Ic: int
    tokens: torch.Tensor  # [B, W] i64: the tokens the draft model runs on
    last_layer_scores: torch.Tensor  # [B, W] f32: K1's last_layer_scores
    hidden: torch.Tensor  # [B*W, H]: the frontier's gathered hidden rows, input of the draft model
    topk_indexs: torch.Tensor  # [B, W] i64: K2's topk_indexs (global node ids)
    input_tree_mask: torch.Tensor  # [B, W, Ic-1] bool: K2's input_tree_mask


def frontier_handoff(*, output_tokens: torch.Tensor, output_scores: torch.Tensor,
                     output_hidden_states: torch.Tensor, cache_topk_indices: torch.Tensor,
                     output_tree_mask: torch.Tensor, Ic: int, W_next: int) -> Frontier:
    """§8.1 step 2 (D20): the next frontier is the first ``W_next`` of this layer's K outputs.

    ``output_tokens``/``output_scores``/``output_tree_mask`` are K2's outputs,
    ``output_hidden_states``/``cache_topk_indices`` K1's; ``Ic`` is this layer's input_count.
    The mask is rebuilt contiguous: columns ``[0, Ic-1)`` of row ``w`` come from K2's row ``w``,
    column ``Ic-1+w'`` is ``w' == w`` (each frontier token sees itself).
    """
    B, K = output_tokens.shape
    if not 1 <= W_next <= K:
        raise ValueError(f"frontier_handoff: need 1 <= W_next <= K = {K}, got {W_next}")
    if output_tree_mask.shape[2] < Ic - 1:
        raise ValueError(f"frontier_handoff: output_tree_mask has {output_tree_mask.shape[2]} columns, "
                         f"fewer than Ic - 1 = {Ic - 1}")
    H = output_hidden_states.shape[2]
    Ic_next = Ic + W_next
    mask = torch.zeros((B, W_next, Ic_next - 1), dtype=torch.bool, device=output_tokens.device)
    mask[:, :, :Ic - 1] = output_tree_mask[:, :W_next, :Ic - 1]
    mask[:, :, Ic - 1:] = torch.eye(W_next, dtype=torch.bool, device=output_tokens.device)
    return Frontier(
        W=W_next, Ic=Ic_next,
        tokens=output_tokens[:, :W_next].clone(),
        last_layer_scores=output_scores[:, :W_next].clone(),
        hidden=output_hidden_states[:, :W_next, :].reshape(B * W_next, H).clone(),
        topk_indexs=cache_topk_indices[:, :W_next].clone(),
        input_tree_mask=mask,
    )


def draft_tree_parent(widths: list[int], parents: list[torch.Tensor]) -> torch.Tensor:
    """K4 draft-use ``tree_parent [B, T]`` (§8.1 step 3).

    ``widths[j]`` is the number of tokens fed at layer ``d = j + 2`` (the frontier widths from
    layer 2 on); ``parents[j]`` is K1's ``parent_indices_in_layer`` of layer ``d - 1 = j + 1``
    (``[B, K]``). A layer-2 token has parent -1; the ``w``-th token fed at layer ``d >= 3`` has
    parent ``off_{d-1} + parents_{d-1}[b, w]``, ``off`` being the local index of the first token fed
    at a layer.
    """
    if not widths:
        raise ValueError("draft_tree_parent: no draft tokens fed yet (the root expansion has no K4 call)")
    if len(parents) < len(widths):
        raise ValueError(f"draft_tree_parent: need parent_indices_in_layer of {len(widths)} layers, "
                         f"got {len(parents)}")
    B = parents[0].shape[0]
    dev = parents[0].device
    cols, off, off_prev = [], 0, 0
    for j, w in enumerate(widths):
        if j == 0:
            cols.append(torch.full((B, w), -1, dtype=torch.int64, device=dev))
        else:
            cols.append(off_prev + parents[j][:, :w].to(torch.int64))
        off_prev, off = off, off + w
    return torch.cat(cols, dim=1)


def draft_mask_inputs(*, widths: list[int], parents: list[torch.Tensor], seq_lens: torch.Tensor,
                      req_pool_indices: torch.Tensor, req_to_token: torch.Tensor,
                      tree_cache_locs: torch.Tensor, write_bool_mask: bool = True) -> tuple[dict, dict]:
    """(tensors, params) of a K4 draft-use call: ``T = Ic - 1 = sum(widths)``, ``Q = widths[-1]``.

    ``seq_lens``/``req_pool_indices`` are K7's ``next_seq_lens``/``next_req_pool_indices`` (the root
    is in the draft model's prefix); ``tree_cache_locs [B, >= T]`` are the host-allocated draft KV
    slots of the fed tokens in feed order (only the first ``T`` columns are passed).
    """
    T = sum(widths)
    tensors = {
        "seq_lens": seq_lens.to(torch.int64),
        "req_pool_indices": req_pool_indices.to(torch.int64),
        "req_to_token": req_to_token,
        "tree_cache_locs": tree_cache_locs[:, :T].to(torch.int64).contiguous(),
        "tree_parent": draft_tree_parent(widths, parents),
    }
    params = {"S_max": int(req_to_token.shape[1]), "B": int(seq_lens.shape[0]), "T": T, "Q": int(widths[-1]),
              "write_bool_mask": bool(write_bool_mask)}
    return tensors, params


def dense_tree_mask(kv_indptr: torch.Tensor, mask_indptr_bytes: torch.Tensor, packed_mask: torch.Tensor, Q: int,
                    S_max: int) -> torch.Tensor:
    """K4's packed mask as a dense ``[B, Q, S_max]`` boolean mask over cache positions (column ``c`` =
    cache position ``c``; columns at or past a request's KV length are False): the attention mask of
    the forward that follows K4."""
    B = kv_indptr.shape[0] - 1
    dev = packed_mask.device
    kvlen = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int64)
    base = mask_indptr_bytes[:-1].to(torch.int64) * 8
    c = torch.arange(S_max, device=dev)
    q = torch.arange(Q, device=dev)
    bit = base.view(B, 1, 1) + q.view(1, Q, 1) * kvlen.view(B, 1, 1) + c.view(1, 1, S_max)
    byte = packed_mask[(bit >> 3).clamp(max=packed_mask.numel() - 1)].to(torch.int64)
    return (((byte >> (bit & 7)) & 1) == 1) & (c.view(1, 1, S_max) < kvlen.view(B, 1, 1))


@dataclass
class VerifySet:
    """The verify tree of §8.2 step 1 (all ``[B, Q]`` int64)."""

    Q: int
    node_ids: torch.Tensor  # verify_node_ids: draft node id of local token t (ascending)
    candidates: torch.Tensor  # cumu_tokens[node]
    tree_parent: torch.Tensor  # local index of prev_indexs[node], -1 for the root
    retrive_index: torch.Tensor  # b*Q + t
    retrive_next_token: torch.Tensor  # smallest local child, or -1
    retrive_next_sibling: torch.Tensor  # next larger local index with the same parent, or -1


def verify_size(cc: int, N: int, verify_num: int, M: int) -> int:
    """D16: ``Q = min(clamp(Vn, 1, M), min(cc, N))``."""
    return min(min(max(int(verify_num), 1), int(M)), min(int(cc), int(N)))


def select_verify_set(*, cumu_tokens: torch.Tensor, cumu_scores: torch.Tensor, prev_indexs: torch.Tensor,
                      cc: int, verify_num: int, M: int, check: bool = True) -> VerifySet:
    """§8.2 step 1 (D14, D16, D18): root + the ``Q-1`` best of nodes ``1 .. min(cc, N)-1``.

    Ranking: ``key(cumu_scores)`` descending (NaN as -inf, +0 == -0), node id ascending; the
    selection is then ordered by node id. Raises ValueError if a selected node's parent is not
    selected (impossible for trees built by K2 from probabilities <= 1, checked anyway unless
    ``check=False``: the check reads device data, which a captured CUDA graph must not).
    """
    B, N = cumu_scores.shape
    dev = cumu_scores.device
    n = min(int(cc), N)
    if n < 1:
        raise ValueError(f"select_verify_set: the tree holds no node (cc={cc}, N={N})")
    Q = verify_size(cc, N, verify_num, M)
    rest = stable_desc_order(cumu_scores[:, 1:n])[:, :Q - 1] + 1  # ids 1..n-1, best first
    nodes = torch.cat([torch.zeros((B, 1), dtype=torch.int64, device=dev), rest], dim=1)
    nodes = torch.sort(nodes, dim=1).values
    candidates = cumu_tokens.gather(1, nodes)
    prev = prev_indexs.gather(1, nodes)
    local = torch.searchsorted(nodes, prev.clamp(min=0))
    found = nodes.gather(1, local.clamp(max=Q - 1)) == prev
    t = torch.arange(Q, device=dev)
    parent = torch.where(t == 0, torch.full_like(prev, -1), local)
    bad = (t > 0) & ~(found & (local < t))
    if check and bad.any():
        b, i = (int(x) for x in bad.nonzero()[0])
        raise ValueError(f"select_verify_set: request {b}: node {int(nodes[b, i])} is selected but its parent "
                         f"{int(prev[b, i])} is not (the parent-closure of D14 does not hold)")
    # first child = smallest local index whose parent is t; next sibling = next larger with the same parent
    big = torch.full((B, Q, Q), Q, dtype=torch.int64, device=dev)
    cand = t.view(1, 1, Q).expand(B, Q, Q)
    is_child = parent.unsqueeze(1) == t.view(1, Q, 1)  # [b, p, c]: c's parent is p
    first = torch.where(is_child, cand, big).min(dim=2).values
    later_sib = (parent.unsqueeze(2) == parent.unsqueeze(1)) & (cand > t.view(1, Q, 1)) & (t.view(1, Q, 1) > 0)
    sib = torch.where(later_sib, cand, big).min(dim=2).values
    none = torch.full_like(first, -1)
    return VerifySet(
        Q=Q, node_ids=nodes, candidates=candidates, tree_parent=parent,
        retrive_index=torch.arange(B, device=dev).view(B, 1) * Q + t.view(1, Q),
        retrive_next_token=torch.where(first < Q, first, none),
        retrive_next_sibling=torch.where(sib < Q, sib, none),
    )


# -- the kernel-to-kernel hand-offs: (tensors, params) of each call ------------------------------------
def k1_call(*, probas: torch.Tensor, tokens: torch.Tensor, last_layer_scores: torch.Tensor, hidden: torch.Tensor,
            K: int, W: int, cc: int, hot_token_id: torch.Tensor | None = None,
            use_hot_token_id: bool = False) -> tuple[dict, dict]:
    """K1 after K5 + the external top-K: ``probas``/``tokens [B, W*K]`` of the layer's ``W`` rows."""
    t = {"topk_probas_sampling": probas, "topk_tokens_sampling": tokens, "last_layer_scores": last_layer_scores,
         "input_hidden_states": hidden}
    if hot_token_id is not None:
        t["hot_token_id"] = hot_token_id
    return t, {"batch_size": int(probas.shape[0]), "node_top_k": K, "tree_width": W, "cumu_count": cc,
               "use_hot_token_id": bool(use_hot_token_id)}


def k2_call(k1: dict, state: dict, *, topk_indexs: torch.Tensor, input_tree_mask: torch.Tensor, K: int, W: int,
            Ic: int, cc: int, verify_num: int, depth: int, N: int, M: int, I: int) -> tuple[dict, dict]:
    """K2 on K1's outputs (§8.1 step 1): the layer's scores, tokens, sort and parents, plus the
    state buffers (in/out) and the frontier's ``topk_indexs``/``input_tree_mask``."""
    t = {"topk_probas": k1["curr_layer_scores"], "topk_tokens": k1["topk_tokens_sampling"],
         "sorted_scores": k1["sort_layer_scores"], "sorted_indexs": k1["sort_layer_indices"],
         "parent_indexs": k1["parent_indices_in_layer"], "topk_indexs": topk_indexs,
         "input_tree_mask": input_tree_mask, **state}
    return t, {"batch_size": int(k1["curr_layer_scores"].shape[0]), "node_top_k": K, "tree_width": W,
               "input_count": Ic, "cumu_count": cc, "verify_num": verify_num, "curr_depth": depth,
               "max_input_size": I, "max_node_count": N, "max_verify_num": M}


def k3_call(state: dict, *, K: int, cc: int, verify_num: int, M: int) -> tuple[dict, dict]:
    """K3 on K2's ``work_scores`` (before this layer's ``cc`` advance): ``node_count`` is the verify
    size of the tree so far (D16)."""
    n0 = min(max(min(int(verify_num), int(M)), 1), int(cc))
    return {"work_scores": state["work_scores"]}, {"batch_size": int(state["work_scores"].shape[0]),
                                                  "node_count": n0, "node_top_k": K, "verify_num": verify_num,
                                                  "row_stride": M + K}


def verify_mask_inputs(vs: VerifySet, *, seq_lens: torch.Tensor, req_pool_indices: torch.Tensor,
                       req_to_token: torch.Tensor, tree_cache_locs: torch.Tensor,
                       write_bool_mask: bool = False) -> tuple[dict, dict]:
    """(tensors, params) of the K4 verify call (§8.2 step 2): ``T = Q`` tree tokens at ``tree_cache_locs [B, Q]``."""
    B, Q = vs.candidates.shape
    t = {"seq_lens": seq_lens, "req_pool_indices": req_pool_indices, "req_to_token": req_to_token,
         "tree_cache_locs": tree_cache_locs, "tree_parent": vs.tree_parent}
    return t, {"S_max": int(req_to_token.shape[1]), "B": B, "T": Q, "Q": Q, "write_bool_mask": bool(write_bool_mask)}


def k6_call(vs: VerifySet, k5: dict, *, target_predict: torch.Tensor, coins: torch.Tensor, final_coins: torch.Tensor,
            S: int, V: int, threshold_single: float, threshold_acc: float) -> tuple[dict, dict]:
    """K6 on the verify set and K5's outputs over the target's logits (§8.2 step 4);
    ``target_predict`` is K5's ``argmax_ids`` as ``[B, Q]`` (or a trace-driven replacement)."""
    B, Q = vs.candidates.shape
    t = {"candidates": vs.candidates, "retrive_index": vs.retrive_index,
         "retrive_next_token": vs.retrive_next_token, "retrive_next_sibling": vs.retrive_next_sibling,
         "target_probs": k5["probas"].view(B, Q, V), "target_predict": target_predict,
         "is_greedy": k5["is_greedy"], "coins": coins, "final_coins": final_coins}
    return t, {"threshold_single": threshold_single, "threshold_acc": threshold_acc, "B": B, "Q": Q, "S": S, "V": V}


def k7_call(vs: VerifySet, k6: dict, *, finish_pos: torch.Tensor, seq_lens: torch.Tensor,
            req_pool_indices: torch.Tensor, req_to_token: torch.Tensor, out_cache_loc: torch.Tensor,
            hidden_states: torch.Tensor, S: int) -> tuple[dict, dict]:
    """K7 on K6's outputs (§8.2 step 7): the host's ``finish_pos``, the tree's slots ``out_cache_loc
    [B*Q]`` and the target's hidden states ``[B*Q, H]``."""
    B, Q = vs.candidates.shape
    t = {"accept_index": k6["accept_index"], "accept_length": k6["accept_length"], "predicts": k6["predicts"],
         "finish_pos": finish_pos, "seq_lens": seq_lens, "req_pool_indices": req_pool_indices,
         "req_to_token": req_to_token, "out_cache_loc": out_cache_loc, "hidden_states": hidden_states,
         "verify_node_ids": vs.node_ids}
    return t, {"B": B, "Q": Q, "S": S, "H": int(hidden_states.shape[-1]), "S_max": int(req_to_token.shape[1])}


__all__ = ["ROOT_CC", "ROOT_IC", "SENTINELS", "Frontier", "VerifySet", "dense_tree_mask", "draft_mask_inputs",
           "draft_tree_parent",
           "external_topk", "frontier_handoff", "init_draft_state", "k1_call", "k2_call", "k3_call", "k6_call",
           "k7_call", "select_verify_set", "sort_key", "verify_mask_inputs", "verify_size"]

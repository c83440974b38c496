"""K1 ``draft_tree_layer_score_index_gen_op``: PyTorch reference (KERNELS.md §1).

Per request: one f32 multiply per candidate, optional in-place hot-token remap, a stable
descending sort by key (NaN -> -inf, +0 == -0, ties by lower index), the top-K projection
(global node id, parent slot, optional token) and a bit-copy gather of the parents' hidden rows.
"""

from __future__ import annotations

import torch

from eagle4.kernels import PreconditionError, draft_layer_geometry, poison, require_tensor

_BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32}
HIDDEN_TORCH = tuple(_BITS)


def _bits(t: torch.Tensor) -> torch.Tensor:
    """Integer view of a float tensor: indexing it copies bits, never converts (NaN payloads kept)."""
    return t.view(_BITS[t.dtype]) if t.dtype in _BITS else t


def sort_key(s: torch.Tensor) -> torch.Tensor:
    """§1.5 step 3 key: NaN -> -inf, -0.0 -> +0.0 (so a radix sort on any device treats them as equal)."""
    key = torch.where(torch.isnan(s), torch.full_like(s, float("-inf")), s)
    return torch.where(key == 0, torch.zeros_like(key), key)


def stable_desc_order(s: torch.Tensor) -> torch.Tensor:
    """Permutation of the last dim: key(s) descending, original index ascending among equal keys."""
    return torch.sort(sort_key(s), dim=-1, descending=True, stable=True).indices


def output_shapes(B: int, K: int, C: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """Shape and dtype of K1's fixed-shape outputs (§1.4); the hidden rows and the optional tokens
    take their shape from the inputs."""
    return {"curr_layer_scores": ((B, C), torch.float32), "sort_layer_scores": ((B, C), torch.float32),
            "sort_layer_indices": ((B, C), torch.int64), "cache_topk_indices": ((B, K), torch.int64),
            "parent_indices_in_layer": ((B, K), torch.int64)}


def check_preconditions(*, topk_probas_sampling, topk_tokens_sampling, last_layer_scores, curr_layer_scores,
                        sort_layer_scores, sort_layer_indices, cache_topk_indices, parent_indices_in_layer,
                        input_hidden_states, output_hidden_states, hot_token_id, batch_size, node_top_k,
                        tree_width, cumu_count, use_hot_token_id, output_tokens=None) -> None:
    B, K, W, C = draft_layer_geometry(batch_size, node_top_k, tree_width)
    if K > C:  # unreachable with W >= 1; kept because the spec lists it
        raise PreconditionError(f"node_top_k must be <= C = {C}, got {K}")
    require_tensor(topk_probas_sampling, "topk_probas_sampling", (B, C), torch.float32)
    require_tensor(last_layer_scores, "last_layer_scores", (B, W), torch.float32)
    if input_hidden_states is None or input_hidden_states.dim() != 2:
        raise PreconditionError("input_hidden_states must be a 2-D tensor [B*W, H]")
    H = input_hidden_states.shape[1]
    require_tensor(input_hidden_states, "input_hidden_states", (B * W, H), HIDDEN_TORCH)
    require_tensor(output_hidden_states, "output_hidden_states", (B, K, H), input_hidden_states.dtype)
    given = locals()
    for name, (shape, dtype) in output_shapes(B, K, C).items():
        require_tensor(given[name], name, shape, dtype)
    if topk_tokens_sampling is not None:
        require_tensor(topk_tokens_sampling, "topk_tokens_sampling", (B, C), torch.int64)
    if use_hot_token_id:
        if hot_token_id is None:
            raise PreconditionError("hot_token_id is required when use_hot_token_id is true")
        if hot_token_id.dim() != 1 or hot_token_id.dtype != torch.int64:
            raise PreconditionError(f"hot_token_id must be a 1-D int64 tensor [Vh], got {tuple(hot_token_id.shape)} "
                                    f"{hot_token_id.dtype}")
        if topk_tokens_sampling is None:
            raise PreconditionError("topk_tokens_sampling is required when use_hot_token_id is true")
    if output_tokens is not None:
        require_tensor(output_tokens, "output_tokens", (B, K), torch.int64)
        if topk_tokens_sampling is None:
            raise PreconditionError("output_tokens needs topk_tokens_sampling")


def draft_tree_layer_score_index_gen_op(*, topk_probas_sampling, topk_tokens_sampling, last_layer_scores,
                                        curr_layer_scores, sort_layer_scores, sort_layer_indices,
                                        cache_topk_indices, parent_indices_in_layer, input_hidden_states,
                                        output_hidden_states, hot_token_id, batch_size, node_top_k, tree_width,
                                        cumu_count, use_hot_token_id, output_tokens=None) -> None:
    args = dict(locals())
    check_preconditions(**args)
    B, K, W, cc = int(batch_size), int(node_top_k), int(tree_width), int(cumu_count)
    if B == 0:
        return
    # 1. score: exactly one f32 multiply per candidate (c div K is the parent slot)
    s = topk_probas_sampling * last_layer_scores.repeat_interleave(K, dim=1)
    curr_layer_scores.copy_(s)
    # 2. hot-token remap in place, before anything reads the tokens; out-of-range ids pass through (D4)
    if use_hot_token_id:
        t = topk_tokens_sampling
        Vh = hot_token_id.shape[0]
        if Vh > 0:
            ok = (t >= 0) & (t < Vh)
            topk_tokens_sampling.copy_(torch.where(ok, hot_token_id[t.clamp(0, Vh - 1)], t))
    # 3. stable descending sort on the key; the scores written are s itself (bit copy), not the key
    perm = stable_desc_order(s)
    sort_layer_scores.view(torch.int32).copy_(s.view(torch.int32).gather(1, perm))
    sort_layer_indices.copy_(perm)
    # 4. top-K projection: K2 appends all C candidates in original order from cc
    top = perm[:, :K]
    cache_topk_indices.copy_(top + cc)
    parent = top // K
    parent_indices_in_layer.copy_(parent)
    if output_tokens is not None:
        output_tokens.copy_(topk_tokens_sampling.gather(1, top))
    # 5. hidden gather: pure bit copy of row b*W + parent
    rows = (torch.arange(B, device=parent.device)[:, None] * W + parent).reshape(-1)
    H = input_hidden_states.shape[1]
    _bits(output_hidden_states).copy_(_bits(input_hidden_states).index_select(0, rows).reshape(B, K, H))


def allocate(tensors: dict, params: dict, device) -> dict:
    """Outputs not in ``tensors``, poison-filled; ``output_tokens`` exists only when tokens are given."""
    B = max(int(params["batch_size"]), 0)
    K = max(int(params["node_top_k"]), 0)
    W = max(int(params["tree_width"]), 0)
    out = {}
    for name, (shape, dtype) in output_shapes(B, K, W * K).items():
        if name not in tensors:
            out[name] = poison(shape, dtype, device)
    hin = tensors.get("input_hidden_states")
    if "output_hidden_states" not in tensors and hin is not None and hin.dim() == 2:
        out["output_hidden_states"] = poison((B, K, hin.shape[1]), hin.dtype, device)
    if "output_tokens" not in tensors and tensors.get("topk_tokens_sampling") is not None:
        out["output_tokens"] = poison((B, K), torch.int64, device)
    return out

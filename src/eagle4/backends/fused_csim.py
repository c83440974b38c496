"""C-simulation of the fused dataflow designs (hls/fused/) and of their unfused reference chain.

The designs ``fused_draft`` and ``fused_verify`` (``hls/fused/*/design.desc``) are entries of the one
C-sim library of ``eagle4.backends.csim``; this module shapes their inputs and calls them through the
backend (``CsimBackend.call_entry``), which returns the bytes every port moved. Four entry points share
the uniform C ABI of ``hls/include/eagle4_capi.h``:

* ``eagle4_fused_draft_step`` / ``eagle4_unfused_draft_step``: one whole draft step (init, D layers,
  finalize + verify-set selection) on identical tensors;
* ``eagle4_fused_verify_step`` / ``eagle4_unfused_verify_step``: one verify step (K4 -> K5 -> K6 ->
  finish rule -> K7).

Each call returns the outputs and the bytes every port moved ({port: (read, written)}).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

DRAFT_TENSORS = (
    "root_token", "draft_hidden", "lm_weight", "lm_scale", "hot_token_id", "widths", "verify_nums", "seq_lens",
    "req_pool_indices", "req_to_token", "draft_cache_locs", "out_hidden", "out_tokens", "work_deltas", "qo_indptr",
    "kv_indptr", "kv_indices", "positions", "mask_indptr_bits", "mask_indptr_bytes", "packed_mask", "cumu_tokens",
    "cumu_scores", "cumu_deltas", "prev_indexs", "next_indexs", "side_indexs", "vt_candidates", "vt_retrive_index",
    "vt_next_token", "vt_next_sibling", "vt_tree_parent", "vt_node_ids", "cc_out", "lm_spill", "dbg_topk_p",
    "dbg_topk_t", "cand_p", "cand_t")
DRAFT_OUTPUTS = DRAFT_TENSORS[11:34]
LM_ROWS = 256  # E4F_LM_ROWS of hls/fused/common/e4f_bounds.h
LMH_PORTS = 4  # E4F_LMH_PORTS of hls/fused/common/e4f_perf.h: the draft LM head's weight ports
LM_WEIGHT_PORTS = tuple(f"lm_weight{p}" for p in range(LMH_PORTS))  # the fused design's counters and top ports


def split_lm_weight(w: np.ndarray) -> list[np.ndarray]:
    """The host's layout of the LM head over the fused design's weight ports: port p holds the rows
    ``v = p (mod LMH_PORTS)`` in order (the C-sim entry does the same split; the synthesis top and the xrt
    host take the parts as ``lm_weight0 .. lm_weight3``). A part with no row holds one zero row."""
    w = np.asarray(w)
    return [np.ascontiguousarray(w[p::LMH_PORTS]) if w.shape[0] > p else np.zeros((1, *w.shape[1:]), w.dtype)
            for p in range(LMH_PORTS)]
VERIFY_TENSORS = (
    "seq_lens", "req_pool_indices", "req_to_token", "out_cache_loc", "tree_parent", "logits", "temperatures",
    "candidates", "retrive_index", "retrive_next_token", "retrive_next_sibling", "coins", "final_coins", "remaining",
    "hidden_states", "verify_node_ids", "qo_indptr", "kv_indptr", "kv_indices", "positions", "mask_indptr_bits",
    "mask_indptr_bytes", "packed_mask", "predicts", "accept_index", "accept_length", "finish_pos",
    "accept_index_out", "accept_length_out", "accept_indptr", "accepted_flat", "verified_id", "evict_mask",
    "free_slots", "seq_lens_out", "accepted_node_ids", "unfinished_count", "unfinished_index", "next_accept_length",
    "next_indptr", "next_verified_id", "next_hidden", "next_positions", "next_seq_lens", "next_req_pool_indices",
    "next_root_token", "next_last_flat")
VERIFY_OUTPUTS = ("req_to_token",) + VERIFY_TENSORS[16:]
VERIFY_DEBUG = ("predicts", "accept_index", "accept_length", "finish_pos")

# the unfused chain's ports are "<kernel>_<argument>"; these prefixes name the kernel of a port
KERNEL_OF_PREFIX = {
    "init": "glue", "glue": "glue", "lmhead": "draft_lm_head", "topk": "draft_topk", "k1": "draft_tree_score",
    "k2": "update_draft_state", "k3": "work_deltas", "k4": "tree_mask", "k5": "logits_to_probas",
    "k6": "reject_sample", "k7": "update_verify"}

HIDDEN_CODES = {"float32": 0, "bfloat16": 1, "float16": 2}
W_CODES = {"int8": 1, "bfloat16": 2, "float32": 4, "int4": 3}  # int4: packed two per byte (approximations.int4)


class FusedCsimError(RuntimeError):
    """The fused designs cannot be built here or a call returned an error."""


# ---------------------------------------------------------------------------------------------
# the fused entries of the one C-sim library (eagle4.backends.csim)

_BACKEND = None


def backend():
    """The csim backend the fused entries run on (built once per process, cached by source hash)."""
    global _BACKEND
    if _BACKEND is None:
        from eagle4.backends.csim import CsimBackend

        b = CsimBackend()
        ok, why = b.available()
        if not ok:
            raise FusedCsimError(f"cannot build the fused designs: {why}")
        _BACKEND = b
    return _BACKEND


def load_library():
    """The loaded C-sim library (for callers of the synthesis tops ``fused_draft_top``/``fused_verify_top``)."""
    return backend().library()


def port_names(entry: str) -> list[str]:
    """Ports of an entry (``fused_draft``, ``unfused_draft``, ``fused_verify``, ``unfused_verify``)."""
    return backend().port_names(_DESIGN_OF[entry], f"eagle4_{entry}_ports")


_DESIGN_OF = {"fused_draft": "fused_draft", "unfused_draft": "fused_draft", "fused_verify": "fused_verify",
              "unfused_verify": "fused_verify"}


def _call(entry: str, names, arrays: dict, iscalars, fscalars):
    from eagle4.backends.csim import CsimCallError

    ordered = []
    for name in names:
        if arrays.get(name) is not None:
            arrays[name] = np.ascontiguousarray(arrays[name])
        ordered.append(arrays.get(name))
    try:
        return backend().call_entry(_DESIGN_OF[entry], f"eagle4_{entry}_step", f"eagle4_{entry}_ports", ordered,
                                    iscalars, fscalars)
    except CsimCallError as e:
        raise FusedCsimError(str(e)) from None


# ---------------------------------------------------------------------------------------------
# draft step


@dataclass
class DraftShape:
    B: int
    K: int
    widths: list[int]  # W of every layer; widths[0] = 1 (root expansion)
    H: int
    Vt: int  # rows of the draft LM head (hot vocabulary when use_hot)
    V: int = 0  # full vocabulary (range of hot_token_id values); 0: = Vt
    N: int = 1024
    M: int = 128
    I: int = 64
    L: int = 64  # prefix length of every request
    verify_num: int = 64
    use_hot: bool = True
    hidden_dtype: str = "bfloat16"
    weight_dtype: str = "bfloat16"
    seed: int = 0
    vn_final: int | None = None  # verify budget of the finalize's selection (default: verify_num)

    @property
    def D(self) -> int:
        return len(self.widths)

    @property
    def Tcap(self) -> int:
        return max(1, sum(self.widths[1:]))


def _hidden_np(dtype: str):
    from eagle4 import dtypes as dt

    return {"float32": np.float32, "bfloat16": dt.BF16, "float16": np.float16}[dtype]


def make_draft_inputs(s: DraftShape) -> dict[str, np.ndarray]:
    """Deterministic trace-shaped inputs (and sentinel-filled outputs) of one draft step."""
    rng = np.random.default_rng(s.seed)
    B, K, D, H, Vt = s.B, s.K, s.D, s.H, s.Vt
    V = s.V or Vt
    hdt = _hidden_np(s.hidden_dtype)
    a: dict[str, np.ndarray] = {}
    a["root_token"] = rng.integers(0, V, B, dtype=np.int64)
    a["draft_hidden"] = rng.standard_normal((D, B * K, H)).astype(np.float32).astype(hdt)
    if s.weight_dtype == "int8":
        a["lm_weight"] = rng.integers(-127, 128, (Vt, H), dtype=np.int8)
        a["lm_scale"] = (rng.random(Vt, dtype=np.float32) * np.float32(0.02) + np.float32(0.01)).astype(np.float32)
    elif s.weight_dtype == "int4":  # [Vt, ceil(H / 2)] bytes, the layout of eagle4.dtypes.pack_int4_rows
        from eagle4.dtypes import pack_int4_rows

        a["lm_weight"] = pack_int4_rows(rng.integers(-7, 8, (Vt, H), dtype=np.int8))
        a["lm_scale"] = (rng.random(Vt, dtype=np.float32) * np.float32(0.2) + np.float32(0.1)).astype(np.float32)
    else:
        w = (rng.standard_normal((Vt, H)) * 0.5).astype(np.float32)
        a["lm_weight"] = w.astype(_hidden_np(s.weight_dtype)) if s.weight_dtype != "float32" else w
        a["lm_scale"] = np.ones(1, np.float32)
    a["hot_token_id"] = (np.sort(rng.choice(V, size=Vt, replace=False)).astype(np.int64) if s.use_hot
                         else np.zeros(1, np.int64))
    a["widths"] = np.array(s.widths, np.int64)
    a["verify_nums"] = np.full(D, s.verify_num, np.int64)
    a["seq_lens"] = np.full(B, s.L, np.int64)
    a["req_pool_indices"] = rng.permutation(B).astype(np.int64)
    S_max = s.L + s.Tcap + 8
    a["req_to_token"] = rng.integers(0, 1 << 20, (B, S_max), dtype=np.int32)
    a["draft_cache_locs"] = rng.integers(0, 1 << 20, (B, s.Tcap), dtype=np.int64)
    capkv = B * (s.L + s.Tcap)
    cappack = B * ((K * (s.L + s.Tcap) + 7) // 8)
    a["out_hidden"] = np.zeros((D, B * K, H), hdt)
    a["out_tokens"] = np.full((D, B, K), -777, np.int64)
    a["work_deltas"] = np.full((D, K + 1), -3.0, np.float32)
    for n, dt_, ln in (("qo_indptr", np.int32, B + 1), ("kv_indptr", np.int32, B + 1), ("kv_indices", np.int32, capkv),
                       ("positions", np.int64, B * K), ("mask_indptr_bits", np.int32, B + 1),
                       ("mask_indptr_bytes", np.int32, B + 1), ("packed_mask", np.uint8, cappack)):
        a[n] = np.full((D, ln), 0xAB if dt_ is np.uint8 else -2, dt_)
    for n in ("cumu_tokens", "cumu_deltas", "prev_indexs", "next_indexs", "side_indexs"):
        a[n] = np.full((B, s.N), -777, np.int64)
    a["cumu_scores"] = np.full((B, s.N), -3.0, np.float32)
    for n in DRAFT_TENSORS[27:33]:
        a[n] = np.full((B, s.M), -2, np.int64)
    a["cc_out"] = np.zeros(2, np.int64)
    a["lm_spill"] = np.zeros(max(1, (B * K - LM_ROWS) * Vt), np.float32)  # HBM scratch of the fused LM head
    return a


def _draft_iscalars(s: DraftShape, a) -> list[int]:
    capkv = a["kv_indices"].shape[1]
    cappack = a["packed_mask"].shape[1]
    return [s.B, s.K, s.D, s.H, s.Vt, a["hot_token_id"].shape[0] if s.use_hot else 0, s.N, s.M, s.I,
            a["req_to_token"].shape[1], s.Tcap, capkv, cappack, int(s.use_hot), HIDDEN_CODES[s.hidden_dtype],
            W_CODES[s.weight_dtype], s.verify_num if s.vn_final is None else s.vn_final]


def run_draft(chain: str, s: DraftShape, inputs: dict[str, np.ndarray], *, k5_passes: int = 2,
              k4_materialize: bool = True, debug: bool = False, candidates=None):
    """Run one draft step; returns (outputs, {port: (read, written)}). ``debug`` (unfused only): also
    return ``dbg_topk_p/t [D, B, 64]``, every layer's external top-K (uncounted testbench taps).
    ``candidates`` (fused only, testbench): ``(probas [D,B,64], tokens [D,B,64])`` replace the draft LM
    head and top-K of every layer (to drive the pipeline from a recorded chain)."""
    a = {k: np.array(v, copy=True) for k, v in inputs.items()}
    if candidates is not None:
        a["cand_p"] = np.ascontiguousarray(candidates[0], dtype=np.float32)
        a["cand_t"] = np.ascontiguousarray(candidates[1], dtype=np.int64)
    if debug:
        a["dbg_topk_p"] = np.full((s.D, s.B, 64), np.nan, np.float32)
        a["dbg_topk_t"] = np.full((s.D, s.B, 64), -1, np.int64)
    isc = _draft_iscalars(s, a)
    if chain == "fused":
        counts = _call("fused_draft", DRAFT_TENSORS, a, isc, [0.0])
    elif chain == "unfused":
        counts = _call("unfused_draft", DRAFT_TENSORS, a, isc + [k5_passes, int(k4_materialize)], [0.0])
    else:
        raise ValueError(f"chain must be 'fused' or 'unfused', got {chain!r}")
    outs = {k: a[k] for k in DRAFT_OUTPUTS}
    if debug:
        outs.update(dbg_topk_p=a["dbg_topk_p"], dbg_topk_t=a["dbg_topk_t"])
    return outs, counts


# ---------------------------------------------------------------------------------------------
# verify step


@dataclass
class VerifyShape:
    B: int
    Q: int
    S: int
    V: int
    H: int
    L: int = 64
    eos: int = -1
    hidden_dtype: str = "bfloat16"
    temperatures: list[float] = field(default_factory=lambda: [1.0])
    threshold_single: float = 1.0
    threshold_acc: float = 1.0
    seed: int = 0


def random_tree(rng, Q: int, kind: str = "random") -> np.ndarray:
    """Parent list (local indices, -1 for the root) of a Q-token verify tree in ascending node order."""
    par = np.full(Q, -1, np.int64)
    for t in range(1, Q):
        if kind == "chain":
            par[t] = t - 1
        elif kind == "star":
            par[t] = 0
        else:
            par[t] = int(rng.integers(0, t))
    return par


def tree_links(par: np.ndarray):
    Q = len(par)
    nt = np.full(Q, -1, np.int64)
    ns = np.full(Q, -1, np.int64)
    for t in range(Q - 1, 0, -1):
        p = par[t]
        if p >= 0:
            ns[t] = nt[p]
            nt[p] = t
    return nt, ns


def make_verify_inputs(s: VerifyShape, *, parents: np.ndarray | None = None, candidates: np.ndarray | None = None,
                       accept: list[int] | None = None, remaining: list[int] | None = None,
                       node_ids: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Deterministic verify-step inputs. ``parents`` [B,Q] (default random trees); ``accept``: the
    accept length to provoke per request (the logits make the first child along the path accepted
    and every child of the stop row rejected); None: random logits."""
    rng = np.random.default_rng(s.seed)
    B, Q, S, V, H = s.B, s.Q, s.S, s.V, s.H
    hdt = _hidden_np(s.hidden_dtype)
    a: dict[str, np.ndarray] = {}
    if parents is None:
        parents = np.stack([random_tree(rng, Q) for _ in range(B)])
    if candidates is None:
        candidates = rng.integers(0, V, (B, Q), dtype=np.int64)
    temps = np.array([s.temperatures[b % len(s.temperatures)] for b in range(B)], np.float32)
    logits = (rng.standard_normal((B * Q, V)) * 2.0).astype(np.float32)
    nt_all = np.zeros((B, Q), np.int64)
    ns_all = np.zeros((B, Q), np.int64)
    for b in range(B):
        nt, ns = tree_links(parents[b])
        nt_all[b], ns_all[b] = nt, ns
        if accept is not None:
            row, n = 0, 0
            while True:
                kids = []
                c = nt[row]
                while c != -1:
                    kids.append(int(c))
                    c = ns[c]
                r = b * Q + row
                if not kids:
                    break
                if n < min(accept[b], S - 1):
                    child = kids[0]
                    logits[r, :] = -30.0
                    logits[r, candidates[b, child]] = 30.0
                    row, n = child, n + 1
                    continue
                for k in kids:  # stop here: every child rejected
                    logits[r, candidates[b, k]] = -30.0
                if temps[b] < 1e-6:  # greedy: argmax must differ from every child token
                    free = np.setdiff1d(np.arange(V), candidates[b, kids])
                    logits[r, int(free[0])] = 40.0
                break
    a["seq_lens"] = np.full(B, s.L, np.int64)
    a["req_pool_indices"] = rng.permutation(B).astype(np.int64)
    S_max = s.L + S + 4
    a["req_to_token"] = rng.integers(0, 1 << 20, (B, S_max), dtype=np.int32)
    a["req_to_token"][:, s.L:] = -5
    a["out_cache_loc"] = rng.integers(0, 1 << 20, B * Q, dtype=np.int64)
    a["tree_parent"] = parents.astype(np.int64)
    a["logits"] = logits
    a["temperatures"] = temps
    a["candidates"] = candidates.astype(np.int64)
    a["retrive_index"] = (np.arange(B)[:, None] * Q + np.arange(Q)[None, :]).astype(np.int64)
    a["retrive_next_token"] = nt_all
    a["retrive_next_sibling"] = ns_all
    a["coins"] = (rng.random((B, Q), dtype=np.float32) * np.float32(0.98) + np.float32(0.01)).astype(np.float32)
    a["final_coins"] = rng.random(B, dtype=np.float32)
    a["remaining"] = np.array(remaining if remaining is not None else [1 << 30] * B, np.int64)
    a["hidden_states"] = rng.standard_normal((B * Q, H)).astype(np.float32).astype(hdt)
    a["verify_node_ids"] = (node_ids if node_ids is not None
                            else np.tile(np.arange(Q, dtype=np.int64) * 3, (B, 1))).astype(np.int64)
    capkv = B * (s.L + Q)
    cappack = B * ((Q * (s.L + Q) + 7) // 8)
    for n, dt_, ln in (("qo_indptr", np.int32, B + 1), ("kv_indptr", np.int32, B + 1), ("kv_indices", np.int32, capkv),
                       ("positions", np.int64, B * Q), ("mask_indptr_bits", np.int32, B + 1),
                       ("mask_indptr_bytes", np.int32, B + 1), ("packed_mask", np.uint8, cappack)):
        a[n] = np.full(ln, 0xAB if dt_ is np.uint8 else -2, dt_)
    for n, dt_, ln in (("predicts", np.int32, B * Q), ("accept_index", np.int32, B * S), ("accept_length", np.int32, B),
                       ("finish_pos", np.int32, B), ("accept_index_out", np.int32, B * S),
                       ("accept_length_out", np.int32, B), ("accept_indptr", np.int32, B + 1),
                       ("accepted_flat", np.int32, B * S), ("verified_id", np.int32, B * S),
                       ("evict_mask", np.uint8, B * Q), ("free_slots", np.int64, B * Q), ("seq_lens_out", np.int64, B),
                       ("accepted_node_ids", np.int64, B * S), ("unfinished_count", np.int32, 1),
                       ("unfinished_index", np.int64, B), ("next_accept_length", np.int32, B),
                       ("next_indptr", np.int32, B + 1), ("next_verified_id", np.int32, B * S),
                       ("next_positions", np.int64, B * S), ("next_seq_lens", np.int64, B),
                       ("next_req_pool_indices", np.int64, B), ("next_root_token", np.int32, B),
                       ("next_last_flat", np.int32, B)):
        a[n] = np.full(ln, 7 if dt_ is np.uint8 else -9, dt_)
    a["next_hidden"] = np.zeros((B * S, H), hdt)
    return a


def _verify_iscalars(s: VerifyShape, a) -> list[int]:
    return [s.B, s.Q, s.S, s.V, s.H, a["req_to_token"].shape[1], s.eos, HIDDEN_CODES[s.hidden_dtype],
            a["kv_indices"].shape[0], a["packed_mask"].shape[0]]


def run_verify(chain: str, s: VerifyShape, inputs: dict[str, np.ndarray], *, k5_passes: int = 2,
               k4_materialize: bool = True, k6_sglang: bool = True, debug: bool = True, exp_variant: int = 0):
    """Run one verify step; returns (outputs, {port: (read, written)}). ``debug``: also return the
    K6 results (predicts, accept_index, accept_length, finish_pos) through uncounted taps."""
    a = {k: np.array(v, copy=True) for k, v in inputs.items()}
    if not debug:
        for k in VERIFY_DEBUG:
            a[k] = None
    isc = _verify_iscalars(s, a)
    fsc = [s.threshold_single, s.threshold_acc]
    if chain == "fused":
        counts = _call("fused_verify", VERIFY_TENSORS, a, isc, fsc)
    elif chain == "unfused":
        sampling = any(t >= 1e-6 for t in a["temperatures"].tolist())
        counts = _call("unfused_verify", VERIFY_TENSORS, a,
                       isc + [k5_passes, int(k4_materialize), int(k6_sglang and sampling), exp_variant], fsc)
    else:
        raise ValueError(f"chain must be 'fused' or 'unfused', got {chain!r}")
    outs = {k: a[k] for k in VERIFY_OUTPUTS + (VERIFY_DEBUG if debug else ()) if a.get(k) is not None}
    return outs, counts


def kernel_of_port(chain: str, port: str) -> str:
    """The kernel (unfused) or fused stage a port's bytes are attributed to."""
    if chain == "unfused":
        return KERNEL_OF_PREFIX.get(port.split("_", 1)[0], port)
    return port


__all__ = ["DraftShape", "VerifyShape", "make_draft_inputs", "make_verify_inputs", "run_draft", "run_verify",
           "load_library", "port_names", "FusedCsimError", "random_tree", "tree_links", "replace"]

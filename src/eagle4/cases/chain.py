"""The §13 chained regressions: whole draft steps and verify steps, every kernel call a Case.

Scenarios (``K = 8``, ``B = 4``, hidden bf16 ``H = 16``, vocabulary ``V = 256``):
* ``draft3``: three draft layers with widths 1 -> 8 -> 3, the policy then asks for 5 and stops
  (final ``cc = 97``); verified with ``Q in {1, 16, 64}`` (``draft3_q1``, ``draft3_q16``,
  ``draft3_q64``) and once with every request finished (``draft3_q16_all_finished``, ``U = 0``);
* ``draft4``: four draft layers 1 -> 8 -> 8 -> 8 (``cc = 201``, ``N = 256``, ``Vn = M = 128``),
  verified with ``Q = 128`` (``draft4_q128``).

Each kernel call is recorded before it runs as ``chain/<scenario>/<nn>_<step>_<kernel>``, with
``kernel`` the called kernel's key, so every intermediate is compared on its own. The host side
follows KERNELS.md §8 through ``eagle4.kernels.tree_glue``; the parts that are external models
are seeded stand-ins:
* draft model: logits are seeded normals (x3; numpy's generator, the same on every CPU); its hidden output is its hidden input (identity),
  so K1's gathered rows travel bit-exactly from layer to layer;
* policy: a scripted width schedule (as the public HLS flow's host-supplied schedule); K3 still
  runs on every layer;
* target model: logits are seeded normals (x2), hidden states seeded normals; coins come from
  ``torch.Generator('cpu').manual_seed(seed)`` as f32.
The draft model's prefix holds the root (``seq_lens = L_b + 1`` for the draft-use K4, the root's
draft KV slot at position ``L_b``); K2/K3 run with ``verify_num = M`` on every layer and the
scripted policy's final ``Vn_next`` is the scenario's ``Q``.
Requests 0..2 are greedy and steered to accept 0, 1 and the longest acceptable path (the target
argmax is set to a child's token, or to a token no child carries); request 3 samples (temp 1).
"""

from __future__ import annotations

import numpy as np
import torch

from eagle4 import dtypes as dt
from eagle4 import kernels
from eagle4.cases import Case
from eagle4.kernels import tree_glue as glue
from eagle4.spec import kernel_spec

K = 8
B = 4
H = 16
V = 256
HIDDEN = torch.bfloat16
BIG_LOGIT = 50.0  # far above any N(0, 2^2) draw: makes a token the argmax
PLAN = ("zero", "one", "max", None)  # per request: greedy accept target, or None = sampling
PREFIX = (10, 3, 25, 7)  # committed prefix lengths L_b
POOL = (3, 0, 5, 1)  # req_pool_indices
P_ROWS = 6
KV_SENTINEL, PACKED_SENTINEL = -777, 0x3C


class _Recorder:
    """Runs reference kernels in chain order and records each call's inputs as a Case first."""

    def __init__(self, scenario: str, seed: int):
        self.scenario, self.seed = scenario, seed
        self.cases: list[Case] = []

    def call(self, step: str, kernel: str, tensors: dict, params: dict, note: str = "") -> dict:
        key = kernel_spec(kernel).key
        tensors = {k: v for k, v in tensors.items() if v is not None}
        inputs = {k: dt.to_numpy(v) for k, v in tensors.items()}
        cid = f"chain/{self.scenario}/{len(self.cases) + 1:02d}_{step}_{key}"
        self.cases.append(Case(key, cid, dict(params), inputs, seed=self.seed,
                               tags=("chain", self.scenario.split("_")[0]), note=note))
        return kernels.call(key, {k: v.clone() for k, v in tensors.items()}, params)


def _randn(shape: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
    """Seeded standard normals, the same on every CPU: torch.randn's CPU kernel picks its
    (vectorized) algorithm by the processor's capability, so its draws differ between an AVX2
    and an AVX-512 machine; numpy's generator does not. The seed comes from ``g`` (integer
    draws are capability-independent), so one generator still drives the whole scenario."""
    seed = int(torch.randint(0, 2**62, (1,), generator=g))
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape, dtype=np.float32))


def _tables(S_max: int):
    """req_to_token with each request's prefix slots; past the prefix -777 (never read)."""
    r2t = torch.full((P_ROWS, S_max), KV_SENTINEL, dtype=torch.int32)
    for b, (L, p) in enumerate(zip(PREFIX, POOL, strict=True)):
        r2t[p, :L] = torch.arange(L, dtype=torch.int32) + 100 * (b + 1)
    return r2t, torch.tensor(PREFIX, dtype=torch.int64), torch.tensor(POOL, dtype=torch.int64)


def _k4_buffers(seq_lens: torch.Tensor, T: int, Q: int) -> dict:
    """K4's data-dependent outputs at the D21 caps (+ slack), sentinel-filled: the tail is compared."""
    m = int(seq_lens.max())
    kv, by, bits = B * (m + T), B * ((Q * (m + T) + 7) // 8), B * Q * (m + T)
    return {"kv_indices": torch.full((kv + 3,), KV_SENTINEL, dtype=torch.int32),
            "packed_mask": torch.full((by + 3,), PACKED_SENTINEL, dtype=torch.uint8),
            "mask_bool": torch.arange(bits + 3) % 3 == 0}


def run_draft(rec: _Recorder, *, widths: tuple[int, ...], N: int, M: int, Vn: int, I: int,
              g: torch.Generator) -> tuple[dict, int]:
    """One draft step (§8.1): tree init, root expansion, recurrent layers; returns (state, cc)."""
    root_tokens = torch.randint(0, V, (B,), generator=g)
    state = glue.init_draft_state(root_tokens, N=N, M=M, K=K, I=I)
    cc, Ic = glue.ROOT_CC, glue.ROOT_IC
    r2t, L, pool = _tables(max(PREFIX) + 16)
    r2t_draft = r2t.clone()  # the draft extend wrote the root: it is in the draft prefix
    for b, (l, p) in enumerate(zip(PREFIX, POOL, strict=True)):
        r2t_draft[p, l] = 7000 + b
    seq_draft = L + 1
    draft_locs = (8000 + torch.randperm(B * 64, generator=g)).view(B, 64)  # draft KV slots in feed order
    hidden_in = _randn((B, H), g).to(HIDDEN)  # root hidden from the draft extend
    last_scores = torch.ones((B, 1), dtype=torch.float32)
    topk_indexs = torch.zeros((B, 1), dtype=torch.int64)
    in_mask = torch.zeros((B, 1, 0), dtype=torch.bool)
    fed, parents = [], []
    for d, W in enumerate(widths, 1):
        step = f"l{d}"
        if d >= 2:
            t4, p4 = glue.draft_mask_inputs(widths=fed, parents=parents, seq_lens=seq_draft, req_pool_indices=pool,
                                            req_to_token=r2t_draft, tree_cache_locs=draft_locs)
            assert p4["T"] == Ic - 1  # §4.3: T = Ic - 1
            t4.update(_k4_buffers(seq_draft, p4["T"], p4["Q"]))
            rec.call(step, "tree_mask", t4, p4, note=f"draft use, layer {d}: T = Ic-1 = {Ic - 1}, Q = W = {W}")
        logits = _randn((B * W, V), g) * 3.0  # draft model stand-in
        k5 = rec.call(step, "logits_to_probas", {"logits": logits, "temperatures": torch.ones(B)},
                      {"rows_per_req": W, "write_probas": True})
        tp, tt = glue.external_topk(k5["probas"], K)
        k1 = rec.call(step, "draft_tree_score", *glue.k1_call(
            probas=tp.reshape(B, W * K), tokens=tt.reshape(B, W * K), last_layer_scores=last_scores,
            hidden=hidden_in, K=K, W=W, cc=cc))
        k2 = rec.call(step, "update_draft_state", *glue.k2_call(
            k1, state, topk_indexs=topk_indexs, input_tree_mask=in_mask, K=K, W=W, Ic=Ic, cc=cc, verify_num=Vn,
            depth=d, N=N, M=M, I=I))
        state = {k: k2[k] for k in state}
        rec.call(step, "work_deltas", *glue.k3_call(state, K=K, cc=cc, verify_num=Vn, M=M))
        cc += W * K
        parents.append(k1["parent_indices_in_layer"])
        if d == len(widths):
            break
        fr = glue.frontier_handoff(output_tokens=k2["output_tokens"], output_scores=k2["output_scores"],
                                   output_hidden_states=k1["output_hidden_states"],
                                   cache_topk_indices=k1["cache_topk_indices"],
                                   output_tree_mask=k2["output_tree_mask"], Ic=Ic, W_next=widths[d])
        Ic, last_scores, topk_indexs, in_mask = fr.Ic, fr.last_layer_scores, fr.topk_indexs, fr.input_tree_mask
        fed.append(fr.W)
        hidden_in = fr.hidden  # draft model stand-in: hidden out = hidden in
    return state, cc


def _children(vs: glue.VerifySet, b: int) -> list[list[int]]:
    nxt, sib = vs.retrive_next_token[b].tolist(), vs.retrive_next_sibling[b].tolist()
    out = []
    for t in range(vs.Q):
        c, kids = nxt[t], []
        while c != -1:
            kids.append(c)
            c = sib[c]
        out.append(kids)
    return out


def _greedy_path(vs: glue.VerifySet, b: int, goal: str, S: int) -> tuple[list[int], int]:
    """(rows of the accepted path incl. the root, accept length) a greedy walk can be steered to.

    A greedy walk accepts the first child (in sibling order) whose token equals the row's argmax,
    so only such "first of its token" children are reachable.
    """
    kids = _children(vs, b)
    cand = vs.candidates[b].tolist()

    def reachable(t):
        seen, out = set(), []
        for c in kids[t]:
            if cand[c] not in seen:
                seen.add(cand[c])
                out.append(c)
        return out

    def deepest(t, budget):
        if budget == 0:
            return [t]
        best = [t]
        for c in reachable(t):
            p = [t] + deepest(c, budget - 1)
            if len(p) > len(best):
                best = p
        return best

    if goal == "zero" or not kids[0]:
        path = [0]
    elif goal == "one":
        path = [0, reachable(0)[0]]
    else:
        path = deepest(0, S - 1)
    return path, len(path) - 1


def run_verify(rec: _Recorder, state: dict, cc: int, *, N: int, M: int, Vn_v: int, S: int,
               finish: str, g: torch.Generator) -> None:
    """One verify step (§8.2): selection, K4, K5, K6 (steered), host finish check, K7."""
    vs = glue.select_verify_set(cumu_tokens=state["cumu_tokens"], cumu_scores=state["cumu_scores"],
                                prev_indexs=state["prev_indexs"], cc=cc, verify_num=Vn_v, M=M)
    Q = vs.Q
    r2t, L, pool = _tables(max(PREFIX) + S + 8)
    out_cache_loc = 5000 + torch.randperm(B * Q, generator=g).to(torch.int64)
    t4, p4 = glue.verify_mask_inputs(vs, seq_lens=L, req_pool_indices=pool, req_to_token=r2t,
                                     tree_cache_locs=out_cache_loc.view(B, Q), write_bool_mask=True)
    rec.call("verify", "tree_mask", {**t4, **_k4_buffers(L, Q, Q)}, p4, note=f"verify use: T = Q = {Q}")
    # target model stand-in, steered for the greedy requests
    logits = _randn((B * Q, V), g) * 2.0
    want = {}
    for b, goal in enumerate(PLAN):
        if goal is None:  # sampling request: tilt the target toward the deepest path (acceptance likely)
            path, _ = _greedy_path(vs, b, "max", S)
            cand = vs.candidates[b].tolist()
            for r, nxt in zip(path, path[1:], strict=False):
                logits[b * Q + r, cand[nxt]] += 10.0
            continue
        path, n = _greedy_path(vs, b, goal, S)
        want[b] = n
        cand = vs.candidates[b].tolist()
        for r, nxt in zip(path, path[1:], strict=False):
            logits[b * Q + r, cand[nxt]] = BIG_LOGIT
        if n < S - 1:  # stop here: the argmax is a token no child of the last row carries
            taken = {cand[c] for c in _children(vs, b)[path[-1]]}
            logits[b * Q + path[-1], min(set(range(V)) - taken)] = BIG_LOGIT
    temps = torch.tensor([0.0 if goal else 1.0 for goal in PLAN], dtype=torch.float32)
    k5 = rec.call("verify", "logits_to_probas", {"logits": logits, "temperatures": temps},
                  {"rows_per_req": Q, "write_probas": True})
    coins = torch.rand((B, Q), generator=g, dtype=torch.float32)
    k6 = rec.call("verify", "reject_sample", *glue.k6_call(
        vs, k5, target_predict=k5["argmax_ids"].view(B, Q), coins=coins,
        final_coins=torch.rand((B,), generator=g, dtype=torch.float32), S=S, V=V, threshold_single=1.0,
        threshold_acc=1.0))
    acc = k6["accept_length"]
    for b, n in want.items():
        if int(acc[b]) != n:  # the steering is part of the scenario: fail loudly if it stops working
            raise RuntimeError(f"{rec.scenario}: request {b} accepted {int(acc[b])} tokens, steered to {n}")
    # host finish check (§8.2 step 6)
    if finish == "all":
        fin = [int(acc[b]) if b % 2 == 0 else 0 for b in range(B)]
    elif finish == "one":
        fin = [-1, int(acc[1]), -1, -1]
    else:
        fin = [-1] * B
    rec.call("verify", "update_verify", *glue.k7_call(
        vs, k6, finish_pos=torch.tensor(fin, dtype=torch.int32), seq_lens=L, req_pool_indices=pool, req_to_token=r2t,
        out_cache_loc=out_cache_loc, hidden_states=_randn((B * Q, H), g).to(HIDDEN), S=S),
        note=f"accept lengths {acc.tolist()}, finish_pos {fin}")


def _scenario_draft(name: str, widths, *, N, M, Vn, I, seed):
    rec = _Recorder(name, seed)
    g = torch.Generator("cpu").manual_seed(seed)
    state, cc = run_draft(rec, widths=widths, N=N, M=M, Vn=Vn, I=I, g=g)
    return rec.cases, state, cc


def _scenario_verify(name: str, state, cc, *, N, M, Vn_v, S, finish, seed):
    rec = _Recorder(name, seed)
    run_verify(rec, state, cc, N=N, M=M, Vn_v=Vn_v, S=S, finish=finish, g=torch.Generator("cpu").manual_seed(seed))
    return rec.cases


def cases() -> list[Case]:
    out: list[Case] = []
    # draft3: widths 1 -> 8 -> 3, then the policy asks for 5 and stops; D_max = 4 so S = 5 > depth + 1
    N3, M3 = 128, 64
    c, state, cc = _scenario_draft("draft3", (1, 8, 3), N=N3, M=M3, Vn=64, I=64, seed=31)
    assert cc == 97, cc
    out += c
    for Q, fin, name in ((1, "none", "draft3_q1"), (16, "none", "draft3_q16"), (64, "one", "draft3_q64"),
                         (16, "all", "draft3_q16_all_finished")):
        out += _scenario_verify(name, state, cc, N=N3, M=M3, Vn_v=Q, S=5, finish=fin, seed=310 + Q)
    # draft4: widths 1 -> 8 -> 8 -> 8, cc = 201 <= N, Vn_v = M = 128, Q = 128
    N4, M4 = 256, 128
    c, state, cc = _scenario_draft("draft4", (1, 8, 8, 8), N=N4, M=M4, Vn=128, I=64, seed=41)
    assert cc == 201, cc
    out += c
    out += _scenario_verify("draft4_q128", state, cc, N=N4, M=M4, Vn_v=128, S=5, finish="none", seed=411)
    return out

"""Local speculative-decoding engine: the whole draft/verify loop of KERNELS.md §8 with the seven
P0 kernels run through any backend (``eagle4.backends.get_backend``).

The kernels do the tree bookkeeping (K1, K2), the width signal (K3), the attention metadata
(K4: its ``kv_indices``/``packed_mask`` is the attention the model forward runs, unpacked by
:func:`eagle4.models.llama.meta_from_tree_mask`), the softmax (K5), rejection sampling (K6) and
the compaction and KV commit into the paged cache addressed through ``req_to_token`` (K7). The
host does what §8 leaves to the host: tree init, frontier hand-off, the draft top-K, verify-set
selection, finish detection, slot allocation and the model forwards.

Batching is static: every request of a call starts together (one prefill), and finished
requests leave the batch through K7's compaction (``unfinished_index``).
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from pydantic import Field

from eagle4.backends import Backend, get_backend
from eagle4.contract import Decode
from eagle4.kernels import tree_glue
from eagle4.models.eagle import load_draft
from eagle4.models.llama import causal_meta, load_target, meta_from_tree_mask
from eagle4.models.tokenizer import load_tokenizer
from eagle4.workload.serving_metrics import TokenTimes

F32 = np.float32
I64 = np.int64
I32 = np.int32


class DecodeParams(Decode):
    """The contract's ``[decode]`` (:class:`eagle4.contract.Decode`, same fields, bounds and checks) as
    the engine takes it: temperatures are given to each ``generate`` call, so here they may be left out."""

    temperatures: list[float] = Field(default_factory=lambda: [0.0], min_length=1)

    @classmethod
    def from_contract(cls, c) -> DecodeParams:
        return cls.model_validate(c.decode.model_dump())


@dataclass
class RequestResult(TokenTimes):  # ttft, e2e, itl()
    prompt_ids: list[int]
    output_ids: list[int] = field(default_factory=list)
    token_times: list[float] = field(default_factory=list)   # seconds since start, one per output token
    accept_lengths: list[int] = field(default_factory=list)  # tokens committed per verify step (a+1, untruncated)
    start: float = 0.0
    end: float = 0.0

    @property
    def mean_acceptance(self) -> float:
        return float(np.mean(self.accept_lengths)) if self.accept_lengths else float("nan")


class Profile:
    """Wall time per labelled region (kernels by key, model forwards, host glue)."""

    def __init__(self, sync=None):
        self.total = defaultdict(float)
        self.calls = defaultdict(int)
        self.sync = sync or (lambda: None)
        self.steps = 0
        self.step_time = 0.0

    def timed(self, label):
        prof = self

        class _T:
            def __enter__(self):
                prof.sync()
                self.t = time.perf_counter()

            def __exit__(self, *exc):
                prof.sync()
                prof.total[label] += time.perf_counter() - self.t
                prof.calls[label] += 1

        return _T()

    def table(self) -> list[dict]:
        tot = self.step_time or sum(self.total.values()) or 1.0
        rows = [{"region": k, "seconds": v, "calls": self.calls[k], "share_of_step": v / tot,
                 "kind": "kernel" if k.startswith("K") else ("model" if k.startswith(("target", "draft")) else "host")}
                for k, v in self.total.items()]
        return sorted(rows, key=lambda r: -r["seconds"])


class SlotPool:
    def __init__(self, n: int):
        self.free = list(range(n - 1, 0, -1))  # slot 0 stays unused (padding reads it)

    def alloc(self, n: int) -> np.ndarray:
        if n > len(self.free):
            raise RuntimeError(f"KV cache exhausted: need {n} slots, {len(self.free)} free")
        out = [self.free.pop() for _ in range(n)]
        return np.asarray(out, I64)

    def release(self, slots) -> None:
        self.free.extend(int(s) for s in np.asarray(slots).ravel() if s >= 0)


class FallbackBackend(Backend):
    """``primary`` for the kernels it supports, ``fallback`` (normally ref) for the rest; ``used``
    records which backend ran each kernel so results can say so."""

    def __init__(self, primary: Backend, fallback: Backend):
        self.primary, self.fallback = primary, fallback
        self.name = f"{primary.name}+{fallback.name}"
        self.provenance = primary.provenance
        self.used: dict[str, str] = {}

    def available(self):
        return self.primary.available()

    def run(self, kernel, inputs, params):
        b = self.primary if self.primary.supports(kernel) else self.fallback
        self.used[kernel] = b.name
        return b.run(kernel, inputs, params)

    def device_info(self):
        return self.primary.device_info()


class LocalEngine:
    def __init__(self, target_dir, draft_dir, params: DecodeParams, backend: str | Backend = "ref", *,
                 device: str = "cpu", dtype: str = "float32", backend_options: dict | None = None):
        self.params = params
        self.device = torch.device(device)
        tdtype = getattr(torch, dtype)
        self.target = load_target(target_dir, dtype=tdtype, device=self.device)
        self.draft = load_draft(draft_dir, self.target, dtype=tdtype, device=self.device)
        self.tokenizer = load_tokenizer(target_dir)
        if isinstance(backend, str) and backend.endswith("+ref"):
            backend = FallbackBackend(get_backend(backend[:-4], **(backend_options or {})), get_backend("ref"))
        self.backend = get_backend(backend, **(backend_options or {})) if isinstance(backend, str) else backend
        self.backend.require()
        self.V = self.target.config.vocab_size
        self.H = self.target.config.hidden_size
        if self.draft.config.hidden_size != self.H:
            raise ValueError(f"draft hidden_size {self.draft.config.hidden_size} != target hidden_size {self.H}")
        sync = torch.cuda.synchronize if self.device.type == "cuda" else None
        self.profile = Profile(sync)
        self.paths = (str(target_dir), str(draft_dir))

    @classmethod
    def from_contract(cls, contract, backend="ref", *, device="cpu", backend_options=None) -> LocalEngine:
        return cls(contract.resolve(contract.model.target), contract.resolve(contract.model.draft),
                   DecodeParams.from_contract(contract), backend, device=device, dtype=contract.model.dtype,
                   backend_options=backend_options)

    # -- kernels ----------------------------------------------------------------------------
    def k(self, key: str, label: str, inputs: dict, params: dict) -> dict:
        with self.profile.timed(label):
            return self.backend.run(key, inputs, params)

    def _t(self, a, dtype=None):
        t = torch.from_numpy(np.ascontiguousarray(a)).to(self.device)
        return t if dtype is None else t.to(dtype)

    def _np(self, t: torch.Tensor, dtype=None) -> np.ndarray:
        a = t.detach().to("cpu").numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    # -- setup ------------------------------------------------------------------------------
    def _setup(self, B: int, max_prompt: int, max_new: int):
        p = self.params
        self.S_max = max_prompt + max_new + p.S + 2
        tree_slots = B * (max(p.max_verify_num, 1) + (p.tree_depth + 1) * p.max_tree_width + 4)
        n_slots = B * self.S_max + tree_slots + 1
        self.slots = SlotPool(n_slots)
        self.tcache = self.target.new_cache(n_slots)
        self.dcache = self.draft.new_cache(n_slots)
        self.req_to_token = np.full((B, self.S_max), -1, I32)

    # -- public -----------------------------------------------------------------------------
    def encode_prompts(self, texts: list[str], prompt_tokens: int) -> list[list[int]]:
        return [self.tokenizer.encode(t)[:prompt_tokens] for t in texts]

    def generate(self, prompts: list[list[int]], max_new_tokens: int, temperatures: list[float] | None = None,
                 seed: int = 0, on_step=None) -> list[RequestResult]:
        """Speculative decoding of a static batch. ``on_step(t, {request: [new tokens]})`` is called
        after the prefill and after every verify step."""
        B = len(prompts)
        temps = np.asarray([(temperatures or [0.0])[i % len(temperatures or [0.0])] for i in range(B)], F32)
        gen = torch.Generator("cpu").manual_seed(int(seed))
        self._setup(B, max(len(x) for x in prompts), max_new_tokens)
        res = [RequestResult(list(x)) for x in prompts]
        t0 = time.perf_counter()
        prof = self.profile
        prof.sync()

        # ---- prefill (target) + first token
        with prof.timed("target_prefill"):
            lens = [len(x) for x in prompts]
            slots = [self.slots.alloc(n) for n in lens]
            for b in range(B):
                self.req_to_token[b, : lens[b]] = slots[b]
            ids = torch.tensor(np.concatenate([np.asarray(x, I64) for x in prompts]), device=self.device)
            pos = torch.tensor(np.concatenate([np.arange(n) for n in lens]), device=self.device)
            ws = torch.tensor(np.concatenate(slots), device=self.device)
            offs = np.concatenate([[0], np.cumsum(lens)[:-1]]).tolist()
            meta = causal_meta([np.zeros(0, I64)] * B, slots, offs, self.device)
            h, logits = self.target.forward_cached(ids, pos, ws, meta, self.tcache)
            last = torch.tensor(np.cumsum(lens) - 1, device=self.device)
        first = self._sample_rows(logits[last].float(), temps, gen)
        t_now = time.perf_counter() - t0
        for b in range(B):
            res[b].output_ids.append(int(first[b]))
            res[b].token_times.append(t_now)
        if on_step:
            on_step(t_now, {b: [int(first[b])] for b in range(B)})

        # ---- draft prefill (extend over the prompt): inputs (x_{p+1}, h_p)
        with prof.timed("draft_prefill"):
            shifted = np.concatenate([np.concatenate([np.asarray(x[1:], I64), [int(first[b])]])
                                      for b, x in enumerate(prompts)])
            meta = causal_meta([np.zeros(0, I64)] * B, slots, offs, self.device)
            g, dlog = self.draft.forward_cached(torch.tensor(shifted, device=self.device), h, pos, ws, meta, self.dcache)
            root_g, root_logits = g[last], dlog[last]

        active = np.arange(B)                      # request ids of the rows, in row order
        seq_lens = np.asarray(lens, I64)
        pools = np.arange(B, dtype=I64)
        roots = np.asarray(first, I64)
        done = [max_new_tokens <= 1 or (self.params.stop_on_eos and int(first[b]) == self.tokenizer.eos_id)
                for b in range(B)]
        keep = np.asarray([not d for d in done])
        active, seq_lens, pools, roots = active[keep], seq_lens[keep], pools[keep], roots[keep]
        root_g, root_logits = root_g[torch.from_numpy(keep).to(self.device)], root_logits[torch.from_numpy(keep).to(self.device)]

        while len(active):
            step_t0 = time.perf_counter()
            tree = self._draft_step(seq_lens, pools, roots, root_g, root_logits)
            out = self._verify_step(tree, seq_lens, pools, temps[active], gen, active, res, max_new_tokens)
            t_now = time.perf_counter() - t0
            new_tokens = {}
            for i, b in enumerate(active):
                toks = out["committed"][i]
                res[b].output_ids += toks
                res[b].token_times += [t_now] * len(toks)
                res[b].accept_lengths.append(out["accept_untrunc"][i])
                new_tokens[int(b)] = toks
            if on_step:
                on_step(t_now, new_tokens)
            active, seq_lens, pools, roots = out["active"], out["seq_lens"], out["pools"], out["roots"]
            root_g, root_logits = out["root_g"], out["root_logits"]
            prof.steps += 1
            prof.step_time += time.perf_counter() - step_t0
        end = time.perf_counter() - t0
        for r in res:
            r.end = end
        return res

    def _sample_rows(self, logits: torch.Tensor, temps: np.ndarray, gen) -> np.ndarray:
        """First token after the prefill: K5 (temperatures, softmax) then a host multinomial draw."""
        B = logits.shape[0]
        greedy_all = bool(np.all(temps < F32(1e-6)))
        o = self.k("logits_to_probas", "K5_logits_to_probas", {"logits": self._np(logits, F32), "temperatures": temps},
                   {"rows_per_req": 1, "write_probas": not greedy_all})
        out = o["argmax_ids"].astype(I64).copy()
        for b in range(B):
            if not o["is_greedy"][b]:
                p = torch.from_numpy(np.nan_to_num(o["probas"][b].astype(np.float64), nan=0.0))
                out[b] = int(torch.multinomial(p, 1, generator=gen)) if p.sum() > 0 else out[b]
        return out

    # -- §8.1 draft step ------------------------------------------------------------------------
    def _policy(self, work_deltas: np.ndarray, B: int) -> int:
        p = self.params
        Wmax = min(p.max_tree_width, p.node_top_k)
        if p.width_policy == "fixed":
            return Wmax
        gain = work_deltas[1:]
        n = int(np.sum(gain > 1e-3 * B))
        return int(min(max(n, 1), Wmax))

    def _draft_top_k(self, logits: torch.Tensor, rows_per_req: int, B: int):
        K = self.params.node_top_k
        o = self.k("logits_to_probas", "K5_logits_to_probas",
                   {"logits": self._np(logits, F32), "temperatures": np.ones(B, F32)},
                   {"rows_per_req": rows_per_req, "write_probas": True})
        with self.profile.timed("host_draft_topk"):
            pr, tok = tree_glue.external_topk(torch.from_numpy(o["probas"]), K)
            return (pr.numpy().astype(F32).reshape(B, rows_per_req * K),
                    tok.numpy().astype(I64).reshape(B, rows_per_req * K))

    def _draft_step(self, seq_lens, pools, roots, root_g, root_logits) -> dict:
        p = self.params
        B, K, N, M, I = len(seq_lens), p.node_top_k, p.max_node_count, p.max_verify_num, p.max_input_size
        Vn = p.verify_num
        with self.profile.timed("host_tree_init"):  # §8.1 step 0 (D13)
            st = {k: v.numpy() for k, v in tree_glue.init_draft_state(
                torch.from_numpy(np.asarray(roots, I64)), N=N, M=M, K=K, I=I).items()}
            cc, Ic = tree_glue.ROOT_CC, tree_glue.ROOT_IC
        # root expansion (W = 1)
        probas, tokens = self._draft_top_k(root_logits, 1, B)
        hidden = self._np(root_g, F32).reshape(B, self.H)
        last_scores = np.ones((B, 1), F32)
        topk_prev = np.zeros((B, 1), I64)
        in_mask = np.zeros((B, 1, 0), bool)
        W = 1
        frontier_tokens = np.zeros((B, 0), I64)  # set by the hand-off before layer 2 reads it
        fed_locs, widths, parents = [], [], []  # per layer >= 2: slots [B, W], W; K1 parents per layer
        tree_slots = []
        Vn_next = Vn
        for d in range(1, p.tree_depth + 1):
            if d >= 2:
                # K4 (draft use) + draft forward on the W frontier tokens
                with self.profile.timed("host_frontier"):
                    locs = self.slots.alloc(B * W).reshape(B, W)
                    tree_slots.append(locs)
                    fed_locs.append(locs)
                    widths.append(W)
                    T = sum(widths)
                    assert T == Ic - 1, (T, Ic)
                    tree_parent = tree_glue.draft_tree_parent(widths, parents).numpy()
                    tree_locs = np.concatenate(fed_locs, axis=1)
                k4 = self.k("tree_mask", "K4_tree_mask_draft",
                            {"seq_lens": seq_lens.astype(I64), "req_pool_indices": pools.astype(I64),
                             "req_to_token": self.req_to_token, "tree_cache_locs": tree_locs.astype(I64),
                             "tree_parent": tree_parent}, {"S_max": self.S_max, "B": B, "T": T, "Q": W,
                                                           "write_bool_mask": False})
                with self.profile.timed("draft_layer"):
                    meta = meta_from_tree_mask(k4["qo_indptr"], k4["kv_indptr"], k4["kv_indices"],
                                               k4["mask_indptr_bytes"], k4["packed_mask"], self.device)
                    g, dlog = self.draft.forward_cached(
                        self._t(frontier_tokens.reshape(-1)), self._t(hidden.reshape(B * W, self.H)),
                        self._t(k4["positions"].reshape(-1)), self._t(locs.reshape(-1)), meta, self.dcache)
                probas, tokens = self._draft_top_k(dlog, W, B)
                hidden = self._np(g, F32).reshape(B * W, self.H)
            k1 = self.k("draft_tree_score", "K1_draft_tree_score",
                        {"topk_probas_sampling": probas, "topk_tokens_sampling": tokens,
                         "last_layer_scores": last_scores, "input_hidden_states": hidden.reshape(B * W, self.H)},
                        {"batch_size": B, "node_top_k": K, "tree_width": W, "cumu_count": cc,
                         "use_hot_token_id": False})
            toks = k1.get("topk_tokens_sampling", tokens)
            parents.append(torch.from_numpy(k1["parent_indices_in_layer"]))
            k2_in = {"topk_probas": k1["curr_layer_scores"], "topk_tokens": toks,
                     "sorted_scores": k1["sort_layer_scores"], "sorted_indexs": k1["sort_layer_indices"],
                     "parent_indexs": k1["parent_indices_in_layer"], "topk_indexs": topk_prev,
                     "input_tree_mask": in_mask, **st}
            k2 = self.k("update_draft_state", "K2_update_draft_state", k2_in,
                        {"batch_size": B, "node_top_k": K, "tree_width": W, "input_count": Ic, "cumu_count": cc,
                         "verify_num": Vn, "curr_depth": d, "max_input_size": I, "max_node_count": N,
                         "max_verify_num": M})
            for name in st:
                st[name] = k2[name]
            n0 = min(max(min(Vn, M), 1), cc)
            k3 = self.k("work_deltas", "K3_work_deltas", {"work_scores": st["work_scores"]},
                        {"batch_size": B, "node_count": n0, "node_top_k": K, "verify_num": Vn,
                         "row_stride": M + K})
            cc += W * K
            W_next = self._policy(k3["work_deltas"], B)
            Vn_next = Vn
            if d == p.tree_depth:
                break
            # §8.2 frontier hand-off (D20)
            with self.profile.timed("host_frontier"):
                t = torch.from_numpy
                fr = tree_glue.frontier_handoff(
                    output_tokens=t(k2["output_tokens"]), output_scores=t(k2["output_scores"]),
                    output_hidden_states=t(k1["output_hidden_states"]), cache_topk_indices=t(k1["cache_topk_indices"]),
                    output_tree_mask=t(k2["output_tree_mask"]), Ic=Ic, W_next=W_next)
                frontier_tokens = fr.tokens.numpy()
                last_scores = fr.last_layer_scores.numpy()
                hidden = fr.hidden.numpy()
                topk_prev = fr.topk_indexs.numpy()
                in_mask = fr.input_tree_mask.numpy()
                W, Ic = fr.W, fr.Ic
        for s in tree_slots:
            self.slots.release(s)
        return {**st, "cc": cc, "Vn_next": Vn_next}

    # -- §8.2 verify step --------------------------------------------------------------------
    def _select_verify_set(self, tree: dict, B: int):
        """§8.2 step 1 via the shared host glue (D14, D16, D18)."""
        p = self.params
        vs = tree_glue.select_verify_set(cumu_tokens=torch.from_numpy(tree["cumu_tokens"]),
                                         cumu_scores=torch.from_numpy(tree["cumu_scores"]),
                                         prev_indexs=torch.from_numpy(tree["prev_indexs"]), cc=tree["cc"],
                                         verify_num=tree["Vn_next"], M=p.max_verify_num)
        return (vs.Q, vs.node_ids.numpy(), vs.candidates.numpy(), vs.tree_parent.numpy(),
                vs.retrive_next_token.numpy(), vs.retrive_next_sibling.numpy(), vs.retrive_index.numpy())

    def _verify_step(self, tree, seq_lens, pools, temps, gen, active, res, max_new) -> dict:
        p = self.params
        B, S, H = len(seq_lens), p.S, self.H
        with self.profile.timed("host_verify_select"):
            Q, node_ids, cand, parent, nxt, sib, retr = self._select_verify_set(tree, B)
            out_cache_loc = self.slots.alloc(B * Q)
        k4 = self.k("tree_mask", "K4_tree_mask_verify",
                    {"seq_lens": seq_lens.astype(I64), "req_pool_indices": pools.astype(I64),
                     "req_to_token": self.req_to_token, "tree_cache_locs": out_cache_loc.reshape(B, Q),
                     "tree_parent": parent}, {"S_max": self.S_max, "B": B, "T": Q, "Q": Q, "write_bool_mask": False})
        with self.profile.timed("target_verify"):
            meta = meta_from_tree_mask(k4["qo_indptr"], k4["kv_indptr"], k4["kv_indices"], k4["mask_indptr_bytes"],
                                       k4["packed_mask"], self.device)
            h, logits = self.target.forward_cached(self._t(cand.reshape(-1)), self._t(k4["positions"].reshape(-1)),
                                                   self._t(out_cache_loc), meta, self.tcache)
            logits_np = self._np(logits, F32)
            h_np = self._np(h, F32)
        greedy_all = bool(np.all(temps < F32(1e-6)))
        k5 = self.k("logits_to_probas", "K5_logits_to_probas", {"logits": logits_np, "temperatures": temps},
                    {"rows_per_req": Q, "write_probas": not greedy_all})
        coins = torch.rand((B, Q), generator=gen, dtype=torch.float32).numpy()
        final_coins = torch.rand((B,), generator=gen, dtype=torch.float32).numpy()
        k6 = self.k("reject_sample", "K6_reject_sample",
                    {"candidates": cand, "retrive_index": retr, "retrive_next_token": nxt,
                     "retrive_next_sibling": sib, "target_probs": k5["probas"].reshape(B, Q, self.V),
                     "target_predict": k5["argmax_ids"].reshape(B, Q).astype(I64), "is_greedy": k5["is_greedy"],
                     "coins": coins, "final_coins": final_coins},
                    {"threshold_single": p.threshold_single, "threshold_acc": p.threshold_acc, "B": B, "Q": Q,
                     "S": S, "V": self.V})
        # host: finish conditions (§8.2 step 6)
        with self.profile.timed("host_finish"):
            acc_idx, acc_len, pred = k6["accept_index"], k6["accept_length"], k6["predicts"]
            finish = np.full(B, -1, I32)
            for i, b in enumerate(active):
                have = len(res[b].output_ids)
                for j in range(int(acc_len[i]) + 1):
                    tok = int(pred[acc_idx[i, j]])
                    if have + j + 1 >= max_new or (p.stop_on_eos and tok == self.tokenizer.eos_id):
                        finish[i] = j
                        break
        k7 = self.k("update_verify", "K7_update_verify",
                    {"accept_index": acc_idx, "accept_length": acc_len, "predicts": pred, "finish_pos": finish,
                     "seq_lens": seq_lens.astype(I64), "req_pool_indices": pools.astype(I64),
                     "req_to_token": self.req_to_token, "out_cache_loc": out_cache_loc, "hidden_states": h_np,
                     "verify_node_ids": node_ids},
                    {"B": B, "Q": Q, "S": S, "H": H, "S_max": self.S_max})
        with self.profile.timed("host_commit"):
            self.req_to_token = k7["req_to_token"]
            n_acc = int(k7["accept_indptr"][B])
            self.slots.release(k7["free_slots"][: B * Q - n_acc])
            ind = k7["accept_indptr"]
            committed = [k7["verified_id"][ind[i]: ind[i + 1]].astype(int).tolist() for i in range(B)]
            U = int(k7["unfinished_count"][0])
            unf = k7["unfinished_index"][:U].astype(I64)
        out = {"committed": committed, "accept_untrunc": (acc_len.astype(int) + 1).tolist(),
               "active": np.asarray(active)[unf], "seq_lens": k7["next_seq_lens"][:U].astype(I64),
               "pools": k7["next_req_pool_indices"][:U].astype(I64),
               "roots": k7["next_root_token"][:U].astype(I64), "root_g": None, "root_logits": None}
        if U == 0:
            return out
        # draft extend on the accepted tokens (§8.2 step 8): inputs (next_verified_id, next_hidden)
        with self.profile.timed("draft_extend"):
            nind = k7["next_indptr"][: U + 1].astype(I64)
            n_unf = int(nind[U])
            npos = k7["next_positions"][:n_unf].astype(I64)
            prefix, new, offs = [], [], []
            for u in range(U):
                pool = int(out["pools"][u])
                L0 = int(seq_lens[unf[u]])
                rows = npos[nind[u]: nind[u + 1]]
                prefix.append(self.req_to_token[pool, :L0].astype(I64))
                new.append(self.req_to_token[pool, rows].astype(I64))
                offs.append(int(nind[u]))
            meta = causal_meta(prefix, new, offs, self.device)
            g, dlog = self.draft.forward_cached(
                self._t(k7["next_verified_id"][:n_unf].astype(I64)), self._t(k7["next_hidden"][:n_unf]),
                self._t(npos), self._t(np.concatenate(new)), meta, self.dcache)
            last = self._t(nind[1:] - 1)
            out["root_g"], out["root_logits"] = g[last], dlog[last]
        return out

    # -- baseline ---------------------------------------------------------------------------
    def generate_target_only(self, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        """Greedy decoding of the target alone (one token per step), same model code and cache."""
        B = len(prompts)
        self._setup(B, max(len(x) for x in prompts), max_new_tokens)
        lens = [len(x) for x in prompts]
        slots = [self.slots.alloc(n) for n in lens]
        for b in range(B):
            self.req_to_token[b, : lens[b]] = slots[b]
        ids = torch.tensor(np.concatenate([np.asarray(x, I64) for x in prompts]), device=self.device)
        pos = torch.tensor(np.concatenate([np.arange(n) for n in lens]), device=self.device)
        offs = np.concatenate([[0], np.cumsum(lens)[:-1]]).tolist()
        meta = causal_meta([np.zeros(0, I64)] * B, slots, offs, self.device)
        _, logits = self.target.forward_cached(ids, pos, torch.tensor(np.concatenate(slots), device=self.device),
                                               meta, self.tcache)
        nxt = logits[torch.tensor(np.cumsum(lens) - 1, device=self.device)].float().argmax(-1).cpu().numpy()
        outs = [[int(t)] for t in nxt]
        L = np.asarray(lens)
        for _ in range(max_new_tokens - 1):
            s = self.slots.alloc(B)
            prefix = [self.req_to_token[b, : L[b]].astype(I64) for b in range(B)]
            for b in range(B):
                self.req_to_token[b, L[b]] = s[b]
            meta = causal_meta(prefix, [s[b: b + 1] for b in range(B)], list(range(B)), self.device)
            _, logits = self.target.forward_cached(torch.tensor(nxt, device=self.device),
                                                   torch.tensor(L, device=self.device),
                                                   torch.tensor(s, device=self.device), meta, self.tcache)
            nxt = logits.float().argmax(-1).cpu().numpy()
            L = L + 1
            for b in range(B):
                outs[b].append(int(nxt[b]))
        return outs


def default_model_dirs() -> tuple[Path, Path]:
    root = Path(__file__).resolve().parents[3]
    return root / "models" / "default" / "target", root / "models" / "default" / "draft"

"""The speculative-decoding engine: the draft/verify loop of KERNELS.md §8 with the seven kernels
through a backend, every piece of state on the device (CPU or CUDA) at static shapes.

All state lives on the device (caches, ``req_to_token``, the draft tree, the root of the next step,
the trace cursor). One speculative step is two static-shape functions:

* draft step (KERNELS.md §8.1): tree init, root expansion, then per draft layer: frontier hand-off,
  K4 (draft use), the draft forward on the frontier, K5 + the external top-K, K1, K2, K3;
* verify step (§8.2): verify-set selection, K4 (verify), the target forward over the tree with K4's
  mask, K5, K6, K7, KV compaction and the draft extend on the accepted tokens.

The host glue between the kernels (tree init, external top-K, frontier hand-off, verify-set
selection) is ``eagle4.kernels.tree_glue``, the same functions ``eagle4.cases.chain`` records.

Models: a ``load = "dummy"`` pair (``eagle4.models.dummy``, deployment shape, acceptance from a
trace) or a trained ``load = "local"`` pair (``eagle4.models.static_pair``, acceptance from the
models; the CPU default contract).

On CUDA with a graph-safe backend each step is captured once per shape (batch, prompt and output
length) as a CUDA graph and replayed; the only device-to-host copy of a step is ``out [B, 2 + S]``
(tokens committed, trace length, the committed ids, for streaming). Elsewhere the same functions run
eagerly. On CUDA (``fused``) the step's torch code runs through ``torch.compile``
(``eagle4.compiled``): the dummy models' layer parts (``eagle4.models.dummy.part``, the K/V cache
write inside the QKV + RoPE part) and the glue between the kernels (``eagle4.kernels.tree_glue``,
the trace drive); prefill stays eager. Attention is PyTorch SDPA over each request's cache in place,
with K4's mask as one additive bias per forward. Backends without a device-tensor interface (csim,
xrt, dump) are called through ``eagle4.backends.host_call`` (host copies per kernel call).

Kernels are called through the backend's device-tensor interface (``Backend.call``). Output buffers
are allocated by the first (eager, warm-up) call of each site and passed back on every later call,
so capture and replay allocate nothing that outlives them.

Layout: request row ``b`` owns positions ``0..S_max-1`` of every cache (``req_to_token[b, p] =
b*S_max + p``); tree tokens sit right after the prefix, so K4's column ``c`` is cache position ``c``.
K7 writes the accepted slots into ``req_to_token``; the KV compaction then moves the accepted rows to
their committed positions and ``req_to_token`` is restored to the identity.

Acceptance by trace (``acceptance.source = "trace"``): dummy drafts are meaningless, so K6's
``target_predict`` is set along one root path of the verify tree so that the greedy walk accepts
exactly ``min(trace length, tree depth)`` tokens (``eagle4.workload.accept_trace``); every other
input of K6/K7 is what the models produced.
Batching is static: rows of requests that finished keep running as padding until the batch ends
(their tokens are not counted). ``decode.width_policy`` must be "fixed" (a K3-driven width changes
the shapes every step, which a captured graph cannot).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import torch

from eagle4.backends import Backend, get_backend
from eagle4.backends.host_call import FallbackBackend, HostCall, has_device_interface
from eagle4.compiled import compiled
from eagle4.contract.tree_sizes import TreeSizes
from eagle4.kernels import tree_glue
from eagle4.models.dummy import load_dummy_pair
from eagle4.models.kv_cache import compact_kv, row_block
from eagle4.workload.accept_trace import drive_predict, load_accept_trace
from eagle4.workload.serving_metrics import TokenTimes


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
    """Wall time per labelled region (kernels by key, model forwards, host glue) of eager steps."""

    def __init__(self, sync=None):
        self.total = defaultdict(float)
        self.calls = defaultdict(int)
        self.sync = sync or (lambda: None)
        self.steps = 0
        self.step_time = 0.0

    @contextlib.contextmanager
    def timed(self, label):
        self.sync()
        t = time.perf_counter()
        try:
            yield
        finally:
            self.sync()
            self.total[label] += time.perf_counter() - t
            self.calls[label] += 1

    def table(self) -> list[dict]:
        tot = self.step_time or sum(self.total.values()) or 1.0
        rows = [{"region": k, "seconds": v, "calls": self.calls[k], "share_of_step": v / tot,
                 "kind": "kernel" if k.startswith("K") else ("model" if k.startswith(("target", "draft")) else "host")}
                for k, v in self.total.items()]
        return sorted(rows, key=lambda r: -r["seconds"])


def make_backend(name: str, device: str, options: dict | None = None) -> Backend:
    """A backend by name for the engine on ``device``: ``ref`` on that device, ``cuda`` without its
    host-side validation (graph-safe), ``X+ref``: X where it supports a kernel, ref elsewhere."""
    if name.endswith("+ref"):
        return FallbackBackend(make_backend(name[:-4], device, options), get_backend("ref"))
    if options is not None:
        return get_backend(name, **options)
    return get_backend(name, **({"device": device} if name == "ref" else ({"validate": False} if name == "cuda" else {})))


KERNEL_REGION = {"draft_tree_score": "K1_draft_tree_score", "update_draft_state": "K2_update_draft_state",
                 "work_deltas": "K3_work_deltas", "logits_to_probas": "K5_logits_to_probas",
                 "reject_sample": "K6_reject_sample", "update_verify": "K7_update_verify"}


@dataclass(frozen=True)
class Shape(TreeSizes):
    """The tree sizes and one operating point's batch, prompt and output length: what the engine's
    buffers and graphs are built for."""

    B: int
    P: int  # prompt tokens
    O: int  # output tokens

    @property
    def S_max(self) -> int:
        # prompt + output + the widest tree (verify Q or the draft's T) + accept row + slack, rounded
        # to 16 (the memory-efficient attention kernel wants an aligned mask row)
        n = self.P + self.O + max(self.Vn, (self.D - 1) * self.W) + self.S + 8
        return (n + 15) // 16 * 16


class DeviceEngine:
    """The one engine (module docstring). ``backend``: a name (``make_backend``) or a Backend;
    ``graphs``: CUDA graphs (default: on CUDA with a graph-safe backend); ``trace``: an accept-length
    trace instead of the contract's (trace-driven acceptance only); ``fused``: the step's torch code
    through torch.compile (default: on CUDA); ``tp``: a
    :class:`~eagle4.models.tensor_parallel.TensorParallel` (default: the contract's ``[model] tp``,
    joining the launcher's process group when it is > 1)."""

    def __init__(self, contract, backend: str | Backend = "ref", *, device: str = "cpu", graphs: bool | None = None,
                 trace=None, backend_options: dict | None = None, fused: bool | None = None, tp=None):
        from eagle4.models.tensor_parallel import for_contract

        self.contract = contract
        self.device = torch.device(device)
        self._graphs_wanted = graphs
        self.backend = make_backend(backend, device, backend_options) if isinstance(backend, str) else backend
        self.backend.require()
        self.target_model = self.draft_model = None  # the nn.Modules of a trained pair (approximations edit them)
        self.tp = for_contract(contract, self.device) if tp is None else tp
        if contract.model.load == "dummy":
            self.target, self.draft = load_dummy_pair(contract.model, self.device, tp=self.tp)
            self.tokenizer = None
            self.max_model_len = None
            self.paths = (f"dummy:{contract.contract.name}",) * 2
        else:
            from eagle4.models.static_pair import load_static_pair
            from eagle4.models.tokenizer import load_tokenizer

            self.target, self.draft = load_static_pair(contract, self.device)
            self.target_model, self.draft_model = self.target.m, self.draft.m
            self.tokenizer = load_tokenizer(contract.resolve(contract.model.target))
            self.max_model_len = self.target_model.config.max_position_embeddings
            self.paths = (str(contract.resolve(contract.model.target)), str(contract.resolve(contract.model.draft)))
        self.by_trace = contract.acceptance.source == "trace"
        self.trace = (trace if trace is not None else load_accept_trace(contract)) if self.by_trace else None
        d = contract.decode
        if d.width_policy != "fixed":
            raise ValueError(f"{contract.source_path}: decode.width_policy = {d.width_policy!r}: the engine runs "
                             "static shapes (a K3-driven width changes them every step); use 'fixed'")
        self._check_temperatures(d.temperatures)
        self.params = d
        self._d = d
        self.sampling = any(t > 0 for t in d.temperatures)
        # the step's model forwards (eagle4.models.dummy.part) and the glue between the kernels through
        # torch.compile: on CUDA by default, eager steps and graph replays alike (so eager == graph
        # replay holds); prefill stays eager
        can = getattr(self.target, "fusable", False)
        self.fused = (self.device.type == "cuda" and can) if fused is None else bool(fused)
        if self.fused and not can:
            raise ValueError(f"{type(self.target).__name__} has no compiled layer parts (fused=True)")
        self._c = functools.partial(compiled, on=self.fused)
        self.shape: Shape | None = None
        # sampling coins: the default generator on CUDA (graph-safe), a seeded one on the CPU
        self.gen = None if self.device.type == "cuda" else torch.Generator("cpu")
        # wall time per region in eager steps; graph replays are timed as whole steps only (WP2 on
        # graphs: eagle4.workload.step_profile)
        self.profile = Profile(torch.cuda.synchronize if self.device.type == "cuda" else None)
        self._capturing = False
        # set to a list to collect (start, after draft, after verify) CUDA events of every replayed step
        self.split_events: list | None = None

    @property
    def backend(self) -> Backend:
        return self._backend

    @backend.setter
    def backend(self, b: Backend) -> None:
        """A backend may be swapped (a wrapper such as the hot-vocabulary one); one without a
        device-tensor interface is called through host copies (eagle4.backends.host_call)."""
        self._backend = b
        self._caller = b if has_device_interface(b) else HostCall(b, self.device)
        want = self.device.type == "cuda" and self._caller.graph_safe
        g = getattr(self, "_graphs_wanted", None)
        if g and not want:
            raise ValueError(f"CUDA graphs need a CUDA device and a graph-safe backend (got {self.device}, {b.name})")
        self.graphs = want if g is None else bool(g)
        self.shape = None  # buffers and graphs are the old backend's

    def _check_temperatures(self, temps) -> None:
        if self.by_trace and any(t > 0 for t in temps):
            raise ValueError("trace-driven acceptance verifies greedily: decode.temperatures must be 0")

    @staticmethod
    def split_times(events: list) -> tuple[list[float], list[float]]:
        """Seconds of the draft graph and of the verify graph per step, from ``split_events``
        (call after a synchronize)."""
        return ([a.elapsed_time(b) * 1e-3 for a, b, _ in events], [b.elapsed_time(c) * 1e-3 for _, b, c in events])

    # -- setup per operating point ---------------------------------------------------------------
    def setup(self, B: int, P: int | None = None, O: int | None = None) -> None:
        """Buffers (and, later, graphs) for ``B`` rows of at most ``P`` prompt and ``O`` output tokens
        (default: the contract's)."""
        d, c = self._d, self.contract
        sh = Shape.from_decode(d, B=B, P=P or c.prompts.prompt_tokens, O=O or c.prompts.output_tokens)
        self.shape = sh
        dev, H = self.device, self.target.a.hidden
        S_max = sh.S_max
        rope = getattr(self.target, "rope", None)
        if rope is not None and S_max + max(sh.Vn, sh.M, (sh.D - 1) * sh.W) > rope.cos.shape[0]:
            raise ValueError(f"S_max {S_max} + the tree exceeds the RoPE table ({rope.cos.shape[0]} rows)")
        self.tcache = self.target.new_cache(B, S_max)
        self.dcache = self.draft.new_cache(B, S_max)
        ar = torch.arange(S_max, device=dev, dtype=torch.int32)
        self.base = torch.arange(B, device=dev, dtype=torch.int64) * S_max
        self.identity = (self.base.to(torch.int32).unsqueeze(1) + ar).contiguous()
        self.req_to_token = self.identity.clone()
        self.pools = torch.arange(B, device=dev, dtype=torch.int64)
        self.seq_lens = torch.zeros(B, device=dev, dtype=torch.int64)
        self.root_tok = torch.zeros(B, device=dev, dtype=torch.int64)
        self.root_g = torch.zeros(B, H, device=dev, dtype=self.target.dtype)
        self.root_logits = torch.zeros(B, self.draft.lm_head.shape[1], device=dev, dtype=self.target.dtype)
        temps = self._d.temperatures
        self.temps_req = torch.tensor([temps[i % len(temps)] for i in range(B)], device=dev, dtype=torch.float32)
        self.trace_dev = torch.as_tensor(self.trace.lengths if self.by_trace else [0], device=dev, dtype=torch.int64)
        self.cursor = torch.zeros(B, device=dev, dtype=torch.int64)
        self.out = torch.zeros(B, 2 + sh.S, device=dev, dtype=torch.int32)  # [committed, trace len, ids...]
        self.out_host = torch.zeros(B, 2 + sh.S, dtype=torch.int32, pin_memory=dev.type == "cuda")
        self.temps = torch.zeros(B, device=dev, dtype=torch.float32)
        # rows whose request finished are parked: their prefix stops growing (static batch padding)
        self.active = torch.ones(B, device=dev, dtype=torch.bool)
        self.active_host = torch.ones(B, dtype=torch.bool, pin_memory=dev.type == "cuda")
        self.finish = torch.full((B,), -1, device=dev, dtype=torch.int32)
        cc_final = 1 + sh.K + (sh.D - 1) * sh.W * sh.K
        self.Q = tree_glue.verify_size(cc_final, sh.N, sh.Vn, sh.M)
        self.coins = torch.zeros(B, self.Q, device=dev, dtype=torch.float32)
        self.final_coins = torch.zeros(B, device=dev, dtype=torch.float32)
        self.ones_b = torch.ones(B, device=dev, dtype=torch.float32)  # the draft's K5 temperature (1)
        self.ones_w1 = torch.ones(B, 1, device=dev, dtype=torch.float32)
        self.zeros_w1 = torch.zeros(B, 1, device=dev, dtype=torch.int64)
        self.no_mask = torch.zeros(B, 1, 0, device=dev, dtype=torch.bool)
        self._bufs: dict[str, dict] = {}
        self._k4_prealloc(sh)
        self._draft_graph = self._verify_graph = None

    def _k4_prealloc(self, sh: Shape) -> None:
        """K4's data-dependent buffers at their caps for the largest prefix (its allocator reads the
        lengths, which a graph must not)."""
        dev = self.device
        for label, T, Q in [(f"K4_draft_{d}", (d - 1) * sh.W, sh.W) for d in range(2, sh.D + 1)] + \
                [("K4_verify", self.Q, self.Q)]:
            kv = sh.S_max + T
            self._bufs[label] = {
                "qo_indptr": torch.zeros(sh.B + 1, device=dev, dtype=torch.int32),
                "kv_indptr": torch.zeros(sh.B + 1, device=dev, dtype=torch.int32),
                "kv_indices": torch.zeros(sh.B * kv, device=dev, dtype=torch.int32),
                "positions": torch.zeros(sh.B, Q, device=dev, dtype=torch.int64),
                "mask_indptr_bits": torch.zeros(sh.B + 1, device=dev, dtype=torch.int32),
                "mask_indptr_bytes": torch.zeros(sh.B + 1, device=dev, dtype=torch.int32),
                "packed_mask": torch.zeros(sh.B * ((Q * kv + 7) // 8), device=dev, dtype=torch.uint8),
                "mask_bool": torch.zeros(0, device=dev, dtype=torch.bool)}  # not written (write_bool_mask off)

    # -- kernels ----------------------------------------------------------------------------------
    def _region(self, label: str):
        return contextlib.nullcontext() if self._capturing else self.profile.timed(label)

    def _k(self, label: str, key: str, tensors: dict, params: dict) -> dict:
        saved = self._bufs.get(label)
        region = KERNEL_REGION[key] if key != "tree_mask" else (
            "K4_tree_mask_verify" if label == "K4_verify" else "K4_tree_mask_draft")
        with self._region(region):
            out = self._caller.call(key, {**tensors, **(saved or {})}, params)
        if saved is None:  # first call (eager): keep the pure outputs for every later call
            self._bufs[label] = {k: v for k, v in out.items() if k not in tensors}
        return out

    def _topk(self, label: str, logits: torch.Tensor, rows_per_req: int):
        B, K = self.shape.B, self.shape.K
        o = self._k(f"K5_{label}", "logits_to_probas", {"logits": logits, "temperatures": self.ones_b},
                    {"rows_per_req": rows_per_req, "write_probas": True})
        with self._region("host_draft_topk"):
            pr, tok = self._c(tree_glue.external_topk)(o["probas"], K)
        return pr.reshape(B, rows_per_req * K).contiguous(), tok.reshape(B, rows_per_req * K).contiguous()

    def _mask(self, k4: dict, Q: int) -> torch.Tensor:
        return self._c(tree_glue.dense_tree_mask)(k4["kv_indptr"], k4["mask_indptr_bytes"], k4["packed_mask"], Q,
                                                  self.shape.S_max)

    # -- prefill (eager; per wave) ---------------------------------------------------------------
    def prefill(self, prompts: torch.Tensor, cursors: torch.Tensor, lens: torch.Tensor | None = None,
                chunk: int = 4) -> torch.Tensor:
        """prompts [B, P] int64 on the device (row b's first ``lens[b]`` tokens; default all P);
        cursors [B]: trace offsets of the rows' requests. Returns the first tokens [B] (device)."""
        sh = self.shape
        B, P, dev = sh.B, prompts.shape[1], self.device
        lens = torch.full((B,), P, device=dev, dtype=torch.int64) if lens is None else lens.to(dev)
        pos = torch.arange(P, device=dev).unsqueeze(0)
        cols = torch.arange(sh.S_max, device=dev).view(1, 1, -1)
        first = torch.empty(B, device=dev, dtype=torch.int64)
        self.temps.copy_(self.temps_req)
        for b0 in range(0, B, chunk):
            b1 = min(B, b0 + chunk)
            n, ln = b1 - b0, lens[b0:b1]
            p = pos.expand(n, P)
            mask = (cols <= pos.view(1, P, 1)) & (cols < ln.view(n, 1, 1))
            with self._region("target_prefill"), row_block(self.tcache, b0, b1) as tc:  # [layers, 2, n, nkv, S, hd]
                hid, logits = self.target.forward(prompts[b0:b1], p, tc, p, mask, logits_rows=(ln - 1).view(n, 1))
            first[b0:b1] = self._sample_first(logits, b0, b1)
            shifted = torch.cat([prompts[b0:b1, 1:], prompts[b0:b1, :1]], 1)
            shifted.scatter_(1, (ln - 1).view(n, 1), first[b0:b1, None])
            with self._region("draft_prefill"), row_block(self.dcache, b0, b1) as dc:
                g, dlog = self.draft.forward(shifted, hid, p, dc, p, mask)
            ar = torch.arange(n, device=dev)
            self.root_g[b0:b1] = g[ar, ln - 1]
            self.root_logits[b0:b1] = dlog.view(n, P, -1)[ar, ln - 1]
        self.root_tok.copy_(first)
        self.seq_lens.copy_(lens)
        self.req_to_token.copy_(self.identity)
        self.cursor.copy_(cursors)
        self.active.fill_(True)
        return first

    def _sample_first(self, logits, b0, b1):
        """First token after the prefill: K5 (temperatures, softmax) then a multinomial draw where sampled."""
        t = self.temps[b0:b1]
        k5 = self._caller.call("logits_to_probas", {"logits": logits, "temperatures": t},
                               {"rows_per_req": 1, "write_probas": self.sampling})
        if not self.sampling:
            return k5["argmax_ids"]
        draw = torch.multinomial(torch.nan_to_num(k5["probas"], nan=0.0), 1, generator=self.gen).view(-1)
        return torch.where(t > 1e-6, draw, k5["argmax_ids"])

    # -- §8.1 draft step -----------------------------------------------------------------------------
    def draft_step(self) -> None:
        sh = self.shape
        B, K, W, D, N, M, I, Vn, H = sh.B, sh.K, sh.W, sh.D, sh.N, sh.M, sh.I, sh.Vn, self.target.a.hidden
        dev = self.device
        st = self._c(tree_glue.init_draft_state)(self.root_tok, N=N, M=M, K=K, I=I)
        cc, Ic = tree_glue.ROOT_CC, tree_glue.ROOT_IC
        probas, tokens = self._topk("root", self.root_logits, 1)
        hidden = self.root_g
        last_scores, topk_prev, in_mask = self.ones_w1, self.zeros_w1, self.no_mask
        Wc, widths, parents = 1, [], []
        frontier = None
        for d in range(1, D + 1):
            if d >= 2:
                widths.append(Wc)
                T = sum(widths)
                t = torch.arange(T, device=dev)
                locs = self.base.view(B, 1) + self.seq_lens.view(B, 1) + t.view(1, T)
                k4 = self._k(f"K4_draft_{d}", "tree_mask", *self._c(tree_glue.draft_mask_inputs)(
                    widths=widths, parents=parents, seq_lens=self.seq_lens, req_pool_indices=self.pools,
                    req_to_token=self.req_to_token, tree_cache_locs=locs, write_bool_mask=False))
                mask = self._mask(k4, Wc)
                wpos = self.seq_lens.view(B, 1) + (T - Wc) + torch.arange(Wc, device=dev).view(1, Wc)
                with self._region("draft_layer"):
                    g, dlog = self.draft.forward(frontier.tokens, frontier.hidden.view(B, Wc, H), k4["positions"],
                                                 self.dcache, wpos, mask, fused=self.fused)
                probas, tokens = self._topk(f"d{d}", dlog, Wc)
                hidden = g.reshape(B * Wc, H)
            k1 = self._k(f"K1_{d}", "draft_tree_score", *tree_glue.k1_call(
                probas=probas, tokens=tokens, last_layer_scores=last_scores, hidden=hidden.contiguous(), K=K, W=Wc,
                cc=cc, hot_token_id=self.draft.hot_token_id, use_hot_token_id=self.draft.uses_hot_vocab))
            parents.append(k1["parent_indices_in_layer"])
            k2 = self._k(f"K2_{d}", "update_draft_state", *tree_glue.k2_call(
                k1, st, topk_indexs=topk_prev, input_tree_mask=in_mask, K=K, W=Wc, Ic=Ic, cc=cc, verify_num=Vn,
                depth=d, N=N, M=M, I=I))
            self._k(f"K3_{d}", "work_deltas", *tree_glue.k3_call(st, K=K, cc=cc, verify_num=Vn, M=M))
            cc += Wc * K
            if d == D:
                break
            frontier = self._c(tree_glue.frontier_handoff)(
                output_tokens=k2["output_tokens"], output_scores=k2["output_scores"],
                output_hidden_states=k1["output_hidden_states"], cache_topk_indices=k1["cache_topk_indices"],
                output_tree_mask=k2["output_tree_mask"], Ic=Ic, W_next=W)
            last_scores, topk_prev, in_mask = frontier.last_layer_scores, frontier.topk_indexs, frontier.input_tree_mask
            Wc, Ic = frontier.W, frontier.Ic
        self.tree = {**st, "cc": cc}

    # -- §8.2 verify step ----------------------------------------------------------------------------
    def verify_step(self) -> None:
        sh = self.shape
        B, S, H, V, dev = sh.B, sh.S, self.target.a.hidden, self.target.a.vocab, self.device
        tr = self.tree
        with self._region("host_verify_select"):
            vs = self._c(tree_glue.select_verify_set)(cumu_tokens=tr["cumu_tokens"], cumu_scores=tr["cumu_scores"],
                                             prev_indexs=tr["prev_indexs"], cc=tr["cc"], verify_num=sh.Vn, M=sh.M,
                                             check=False)
        Q = vs.Q
        L = self.seq_lens
        tq = torch.arange(Q, device=dev).view(1, Q)
        locs = self.base.view(B, 1) + L.view(B, 1) + tq
        k4 = self._k("K4_verify", "tree_mask", *tree_glue.verify_mask_inputs(
            vs, seq_lens=L, req_pool_indices=self.pools, req_to_token=self.req_to_token, tree_cache_locs=locs))
        mask = self._mask(k4, Q)
        with self._region("target_verify"):
            hid, logits = self.target.forward(vs.candidates, k4["positions"], self.tcache, L.view(B, 1) + tq, mask,
                                              fused=self.fused)
        k5 = self._k("K5_verify", "logits_to_probas", {"logits": logits, "temperatures": self.temps},
                     {"rows_per_req": Q, "write_probas": self.sampling})
        if self.by_trace:
            pred, a_trace = self._c(drive_predict)(k5["argmax_ids"].view(B, Q), vs.candidates, vs.tree_parent,
                                                   k4["positions"] - L.view(B, 1), self.trace_dev, self.cursor,
                                                   sh.D, V)
        else:
            pred, a_trace = k5["argmax_ids"].view(B, Q), None
        if self.sampling:
            self.coins.uniform_(generator=self.gen)
            self.final_coins.uniform_(generator=self.gen)
        k6 = self._k("K6", "reject_sample", *tree_glue.k6_call(
            vs, k5, target_predict=pred, coins=self.coins, final_coins=self.final_coins, S=S, V=V,
            threshold_single=self._d.threshold_single, threshold_acc=self._d.threshold_acc))
        k7 = self._k("K7", "update_verify", *tree_glue.k7_call(
            vs, k6, finish_pos=self.finish, seq_lens=L, req_pool_indices=self.pools, req_to_token=self.req_to_token,
            out_cache_loc=locs.reshape(-1).contiguous(), hidden_states=hid.reshape(B * Q, H), S=S))
        # KV compaction: K7 pointed req_to_token[b, L+i] at the accepted tree slot; move those rows to
        # their committed positions and restore the identity layout
        si = torch.arange(S, device=dev).view(1, S)
        dst = (L.view(B, 1) + si).clamp(max=sh.S_max - 1)
        src = (self.req_to_token.gather(1, dst).to(torch.int64) - self.base.view(B, 1)).clamp(0, sh.S_max - 1)
        bi = self.pools.view(B, 1).expand(B, S)
        with self._region("kv_compaction"):
            compact_kv(self.tcache, bi, dst, src)
        self.req_to_token.copy_(self.identity)
        # draft extend on the accepted tokens (§8.2 step 8), padded to S per row
        ind = k7["next_indptr"].to(torch.int64)
        n = ind[1:] - ind[:-1]
        flat = torch.minimum(ind[:-1].view(B, 1) + si, (ind[1:] - 1).view(B, 1))
        toks = k7["next_verified_id"].to(torch.int64)[flat]
        hidn = k7["next_hidden"][flat]
        pos = L.view(B, 1) + si
        emask = torch.arange(sh.S_max, device=dev).view(1, 1, -1) <= pos.view(B, S, 1)
        with self._region("draft_extend"):
            g, dlog = self.draft.forward(toks, hidn, pos, self.dcache, pos.clamp(max=sh.S_max - 1), emask,
                                         fused=self.fused)
        last = (n - 1).clamp(min=0)
        self.root_g.copy_(g[self.pools, last])
        self.root_logits.copy_(dlog.view(B, S, -1)[self.pools, last])
        self.root_tok.copy_(k7["next_root_token"])
        self.seq_lens.copy_(torch.where(self.active, k7["next_seq_lens"], L))
        self.cursor.add_(1)
        self.out[:, 0] = n.to(torch.int32)
        self.out[:, 1] = (a_trace if a_trace is not None else k6["accept_length"]).to(torch.int32)
        self.out[:, 2:] = torch.where(si < n.view(B, 1), toks, torch.full_like(toks, -1)).to(torch.int32)

    # -- graphs ----------------------------------------------------------------------------------
    def capture(self, warmup: int = 2) -> None:
        """Eager warm-up steps (allocate every output buffer), then one CUDA graph per step."""
        snap = self._snapshot()
        s = torch.cuda.Stream(self.device)
        s.wait_stream(torch.cuda.current_stream(self.device))
        self._capturing = True  # no region timing (its syncs) on the side stream either
        with torch.cuda.stream(s):
            for _ in range(warmup):
                self.draft_step()
                self.verify_step()
        self._capturing = False
        torch.cuda.current_stream(self.device).wait_stream(s)
        torch.cuda.synchronize(self.device)
        self._restore(snap)
        self._draft_graph, self._verify_graph = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        self._capturing = True
        try:
            with torch.cuda.graph(self._draft_graph):
                self.draft_step()
            with torch.cuda.graph(self._verify_graph):
                self.verify_step()
        finally:
            self._capturing = False
        torch.cuda.synchronize(self.device)
        self._restore(snap)  # capture does not run the work, but keep the state exactly as before

    def _snapshot(self):
        return {k: getattr(self, k).clone() for k in ("seq_lens", "root_tok", "root_g", "root_logits", "cursor",
                                                      "active")}

    def _restore(self, snap):
        for k, v in snap.items():
            getattr(self, k).copy_(v)
        self.req_to_token.copy_(self.identity)

    def park(self, finished) -> None:
        """Rows of finished requests stop growing (a small host-to-device copy, before the step)."""
        self.active_host.copy_(~torch.as_tensor(finished, dtype=torch.bool))
        self.active.copy_(self.active_host, non_blocking=True)

    def step(self):
        """One speculative step; returns the host copy of ``out`` ([B, 2 + S] int32: tokens committed,
        trace length, committed ids) -- the step's one device-to-host copy."""
        t0 = time.perf_counter()
        if self._draft_graph is not None:
            ev = self.split_events
            if ev is not None:  # draft and verify timed apart: CUDA events around each graph, no sync
                e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
                e[0].record()
            self._draft_graph.replay()
            if ev is not None:
                e[1].record()
            self._verify_graph.replay()
            if ev is not None:
                e[2].record()
                ev.append(e)
        else:
            self.draft_step()
            self.verify_step()
        self.out_host.copy_(self.out, non_blocking=True)
        if self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()
        self.profile.steps += 1
        self.profile.step_time += time.perf_counter() - t0
        return self.out_host

    # -- requests -----------------------------------------------------------------------------------
    def encode_prompts(self, texts: list[str], prompt_tokens: int) -> list[list[int]]:
        if self.tokenizer is None:
            raise ValueError("a dummy-loaded pair has no tokenizer: prompts are token ids drawn from the seed")
        return [self.tokenizer.encode(t)[:prompt_tokens] for t in texts]

    def prepare(self, B: int, P: int, O: int, temperatures=None) -> None:
        """Set up for ``B`` rows of ``P`` prompt and ``O`` output tokens at ``temperatures`` (cycled
        over the rows; default the contract's), keeping the current buffers and graphs when they fit."""
        temps = list(temperatures) if temperatures else list(self._d.temperatures)
        self._check_temperatures(temps)
        sampling = any(t > 0 for t in temps)
        sh = self.shape
        if sh is None or sh.B != B or sh.P < P or sh.O < O or sampling != self.sampling:
            self.sampling = sampling  # K5 writes probabilities only when a row samples
            c = self.contract.prompts
            self.setup(B, max(P, c.prompt_tokens if sh is None else sh.P), max(O, c.output_tokens if sh is None else sh.O))
        self.temps_req.copy_(torch.tensor([temps[i % len(temps)] for i in range(B)], dtype=torch.float32))

    def generate(self, prompts: list[list[int]], max_new_tokens: int, temperatures: list[float] | None = None,
                 seed: int = 0, on_step=None) -> list[RequestResult]:
        """Speculative decoding of a static batch; ``temperatures`` cycle over the requests (default:
        the contract's). ``on_step(t, {request: [new tokens]})`` is called after the prefill and after
        every verify step. The rows of finished requests are parked until the batch is done."""
        B = len(prompts)
        self.prepare(B, max(len(x) for x in prompts), max_new_tokens, temperatures)
        if self.gen is not None:
            self.gen.manual_seed(int(seed))
        elif self.device.type == "cuda":
            torch.cuda.manual_seed(int(seed))  # the sampling coins' generator (graph-safe): runs are reproducible
        dev = self.device
        ids = torch.zeros(B, max(len(x) for x in prompts), dtype=torch.int64)
        for b, x in enumerate(prompts):
            ids[b, : len(x)] = torch.as_tensor(x)
        lens = torch.as_tensor([len(x) for x in prompts])
        eos = self.tokenizer.eos_id if self._d.stop_on_eos and self.tokenizer is not None else None
        res = [RequestResult(list(x)) for x in prompts]
        done = [False] * B
        t0 = time.perf_counter()
        first = self.prefill(ids.to(dev), torch.arange(B, device=dev) * 257, lens).cpu()
        if self.graphs and self._draft_graph is None:
            self.capture()  # once per shape: later generations replay the same graphs

        def commit(b, toks, now):
            r = res[b]
            toks = toks[: max_new_tokens - len(r.output_ids)]
            if eos is not None and eos in toks:
                toks = toks[: toks.index(eos) + 1]
                done[b] = True
            r.output_ids += toks
            r.token_times += [now] * len(toks)
            done[b] = done[b] or len(r.output_ids) >= max_new_tokens
            return toks

        now = time.perf_counter() - t0
        new = {b: commit(b, [int(first[b])], now) for b in range(B)}
        if on_step:
            on_step(now, new)
        while not all(done):
            self.park(done)
            out = self.step().numpy()
            now = time.perf_counter() - t0
            new = {}
            for b in range(B):
                if not done[b]:
                    res[b].accept_lengths.append(int(out[b, 0]))
                    new[b] = commit(b, [int(t) for t in out[b, 2: 2 + out[b, 0]]], now)
            if on_step:
                on_step(now, new)
        end = time.perf_counter() - t0
        for r in res:
            r.end = end
        return res

    @torch.no_grad()
    def generate_target_only(self, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        """Greedy decoding of the target alone, one token per forward, on the same model code and
        cache layout (the losslessness baseline of greedy speculative decoding)."""
        B, P = len(prompts), max(len(x) for x in prompts)
        self.prepare(B, P, max_new_tokens, [0.0])
        dev, S_max = self.device, self.shape.S_max
        ids = torch.zeros(B, P, dtype=torch.int64)
        for b, x in enumerate(prompts):
            ids[b, : len(x)] = torch.as_tensor(x)
        lens = torch.as_tensor([len(x) for x in prompts], device=dev)
        cols = torch.arange(S_max, device=dev).view(1, 1, -1)
        pos = torch.arange(P, device=dev).unsqueeze(0).expand(B, P)
        mask = (cols <= pos.unsqueeze(-1)) & (cols < lens.view(B, 1, 1))
        _, logits = self.target.forward(ids.to(dev), pos, self.tcache, pos, mask, logits_rows=(lens - 1).view(B, 1))
        nxt = logits.float().argmax(-1)
        outs = [[t] for t in nxt.tolist()]
        L = lens.clone()
        for _ in range(max_new_tokens - 1):
            p = L.view(B, 1)
            _, logits = self.target.forward(nxt.view(B, 1), p, self.tcache, p, cols <= p.view(B, 1, 1))
            nxt = logits.float().argmax(-1)
            L += 1
            for b, t in enumerate(nxt.tolist()):
                outs[b].append(t)
        return outs


__all__ = ["DeviceEngine", "Profile", "RequestResult", "Shape", "make_backend"]

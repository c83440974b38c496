"""H100 kernel latency of the seven CUDA ops at the operating points, one process per run.

``python -m eagle4.perf.kernel_bench run --run-index I --out raw_I.csv`` measures every operating
point once in this process (one *run*) and writes one CSV row per (kernel, point, impl, mode):

* ``impl=cuda, mode=eager``: back-to-back launches of the op from Python, in batches each timed by
  one CUDA event pair (host launch overhead included, as a caller sees it); per-launch time =
  batch time / launches; median, p10 and p90 over the batches;
* ``impl=cuda, mode=graph``: a CUDA graph of ``g`` launches replayed many times; per-launch time
  = replay time / g (launch gaps removed; the GPU execution time);
* ``impl=torch_eager_ref, mode=eager``: the PyTorch reference (``eagle4.kernels``) on the same
  GPU tensors, events around each call, fewer calls (it is slow by design), at batch 1 only.

Independence between runs comes from separate processes (``scripts/bench_h100_kernels.sh`` starts
``--runs`` of them); ``summarize`` merges the raw files into the summary (median over runs and the
coefficient of variation per point), the bytes-per-token table and the hotspot ranking.
Inputs are random (never zeros), drawn on the GPU once per point; every run uses the same seeds.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from eagle4 import stats
from eagle4.contract import Runs
from eagle4.perf import bytes_model as bm
from eagle4.report import atomic
from eagle4.vcs import git_commit

REPO = Path(__file__).resolve().parents[3]

RAW_FIELDS = ["kernel", "label", "impl", "mode", "point", "B", "W", "K", "H", "Q", "V", "L", "dtype", "run_index",
              "median_us", "p10_us", "p90_us", "mean_us", "n_launches", "launches_per_sample", "device", "driver", "torch",
              "cuda", "git_commit", "contract_hash", "provenance", "timestamp_utc"]

BATCHES = (1, 8, 32, 128)
VERIFY_Q = (8, 32, 64)
W = K = 8
H = 4096
V_VERIFY = 128256
V_DRAFT = 32000
L_PREFIX = 2048
S_ACC = 9  # S = D_max + 1 (KERNELS.md §9.3 example)
ACCEPTED = 3  # a_b of the byte model's example: 4 committed tokens per request per cycle


@dataclass
class Point:
    kernel: str  # spec key
    label: str  # K1..K7
    params: dict = field(default_factory=dict)  # B, W, K, H, Q, V, L, dtype, variant

    @property
    def pid(self) -> str:
        p = self.params
        parts = [self.kernel, p.get("variant", "")]
        for k in ("B", "Q", "V", "dtype"):
            if k in p:
                parts.append(f"{k}{p[k]}")
        return "/".join(x for x in parts if x)


def operating_points(which: str = "all") -> list[Point]:
    pts: list[Point] = []
    for B in BATCHES:
        for dt in ("float16", "bfloat16"):
            pts.append(Point("draft_tree_score", "K1", dict(B=B, W=W, K=K, H=H, dtype=dt)))
        pts.append(Point("update_draft_state", "K2", dict(B=B, W=W, K=K)))
        pts.append(Point("work_deltas", "K3", dict(B=B, K=K)))
        pts.append(Point("tree_mask", "K4", dict(B=B, Q=W, T=32, L=L_PREFIX, variant="draft")))
        pts.append(Point("logits_to_probas", "K5", dict(B=B, Q=W, V=V_DRAFT, variant="draft")))
        for Q in VERIFY_Q:
            pts.append(Point("tree_mask", "K4", dict(B=B, Q=Q, T=Q, L=L_PREFIX, variant="verify")))
            pts.append(Point("logits_to_probas", "K5", dict(B=B, Q=Q, V=V_VERIFY, variant="verify")))
            pts.append(Point("reject_sample", "K6", dict(B=B, Q=Q, V=V_VERIFY, S=S_ACC)))
            pts.append(Point("update_verify", "K7", dict(B=B, Q=Q, S=S_ACC, H=H, dtype="float16")))
    if which == "B1":
        pts = [p for p in pts if p.params["B"] == 1]
    elif which == "smoke":
        pts = [p for p in pts if p.params["B"] == 1 and p.params.get("Q", 8) == 8]
    return pts


def model_bytes(p: Point) -> tuple[int, int]:
    q = p.params
    B = q["B"]
    if p.kernel == "draft_tree_score":
        return bm.k1(B, q["W"], q["K"], q["H"], 2, hot=True)
    if p.kernel == "update_draft_state":
        return bm.k2(B, q["W"], q["K"], 64, 64, 64)
    if p.kernel == "work_deltas":
        return bm.k3(B, q["K"], 64)
    if p.kernel == "tree_mask":
        return bm.k4(B, q["T"], q["Q"], q["L"])
    if p.kernel == "logits_to_probas":
        return bm.k5(B * q["Q"], q["V"], B)
    if p.kernel == "reject_sample":
        return bm.k6(B, q["Q"], q["S"], q["V"])
    if p.kernel == "update_verify":
        n = B * (ACCEPTED + 1)
        return bm.k7(B, q["Q"], q["S"], q["H"], 2, n, B, n)
    raise KeyError(p.kernel)


# ------------------------------------------------------------------------------------------
# inputs (torch, on the GPU)


def make_call(p: Point, dev, seed: int = 1234) -> tuple[dict, dict]:
    """(tensors incl. allocated outputs, params) of one call at point ``p``."""
    import torch

    from eagle4 import kernels

    g = torch.Generator(device=dev).manual_seed(seed)
    q = p.params
    B = q["B"]

    def rnd(*shape):
        return torch.rand(*shape, generator=g, device=dev, dtype=torch.float32)

    def ri(lo, hi, *shape):
        return torch.randint(lo, hi, shape, generator=g, device=dev, dtype=torch.int64)

    t: dict = {}
    if p.kernel == "draft_tree_score":
        C = W * K
        hdt = getattr(torch, q["dtype"])
        Vh = 32000
        t = dict(topk_probas_sampling=rnd(B, C), topk_tokens_sampling=ri(0, Vh, B, C), last_layer_scores=rnd(B, W),
                 input_hidden_states=torch.randn(B * W, H, generator=g, device=dev).to(hdt),
                 hot_token_id=ri(0, V_VERIFY, Vh))
        params = dict(batch_size=B, node_top_k=K, tree_width=W, cumu_count=17, use_hot_token_id=True)
    elif p.kernel == "update_draft_state":
        C, I, N, M, Ic = W * K, 64, 1024, 64, 65
        sc = torch.sort(rnd(B, C), dim=1, descending=True)
        t = dict(topk_probas=rnd(B, C), topk_tokens=ri(0, V_VERIFY, B, C), sorted_scores=sc.values,
                 sorted_indexs=sc.indices, parent_indexs=sc.indices[:, :K] // K, topk_indexs=ri(1, 73, B, W),
                 input_tree_mask=rnd(B, W, Ic - 1) < 0.5,
                 cumu_tokens=ri(0, 9, B, N), cumu_scores=rnd(B, N), cumu_deltas=ri(0, 9, B, N),
                 prev_indexs=ri(0, 9, B, N), next_indexs=ri(0, 9, B, N), side_indexs=ri(0, 9, B, N),
                 work_scores=rnd(B, M + K), sort_scores=torch.sort(rnd(B, M), 1, descending=True).values,
                 output_tree_mask=torch.zeros(B, K, I + 1, dtype=torch.bool, device=dev))
        params = dict(batch_size=B, node_top_k=K, tree_width=W, input_count=Ic, cumu_count=73, verify_num=64,
                      curr_depth=3, max_input_size=I, max_node_count=N, max_verify_num=M)
    elif p.kernel == "work_deltas":
        n0, stride = 64, 64 + K
        ws = torch.cat([torch.sort(rnd(B, n0), 1, descending=True).values,
                        torch.sort(rnd(B, K), 1, descending=True).values, rnd(B, stride - n0 - K)], 1)
        t = dict(work_scores=ws.contiguous(), per_req_deltas=torch.empty(B, K + 1, device=dev))
        params = dict(batch_size=B, node_count=n0, node_top_k=K, verify_num=64, row_stride=stride)
    elif p.kernel == "tree_mask":
        T, Q, L, Smax = q["T"], q["Q"], q["L"], 4096
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
        Q, S, Hh = q["Q"], q["S"], q["H"]
        a = min(ACCEPTED, Q - 1, S - 1)
        ai = torch.full((B, S), -1, dtype=torch.int32, device=dev)
        ai[:, :a + 1] = (torch.arange(B, device=dev)[:, None] * Q + torch.arange(a + 1, device=dev)[None]).int()
        Smax = L_PREFIX + 2 * S
        t = dict(accept_index=ai, accept_length=torch.full((B,), a, dtype=torch.int32, device=dev),
                 predicts=torch.randint(0, V_VERIFY, (B * Q,), generator=g, device=dev, dtype=torch.int32),
                 finish_pos=torch.full((B,), -1, dtype=torch.int32, device=dev),
                 seq_lens=torch.full((B,), L_PREFIX, dtype=torch.int64, device=dev),
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


def abi_args(kernel: str, tensors: dict, params: dict) -> list:
    from eagle4.backends.cuda import _scalar
    from eagle4.spec import kernel_spec

    spec = kernel_spec(kernel)
    return [(_scalar(a, params[a.name]) if a.role == "scalar" else tensors.get(a.name)) for a in spec.args if a.abi]


# ------------------------------------------------------------------------------------------
# timing


_pct = stats.percentile


def time_eager(fn, n: int, warmup: int = 3) -> list[float]:
    """Per-call µs from CUDA events around each of ``n`` calls (used for the slow reference)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in ev:
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in ev]


def time_eager_batches(fn, per_batch: int, batches: int, warmup: int = 20) -> list[float]:
    """Per-launch µs of back-to-back eager launches: each of ``batches`` batches of ``per_batch``
    launches is timed by one event pair (host launch overhead included, averaged within a batch)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(batches)]
    for s, e in ev:
        s.record()
        for _ in range(per_batch):
            fn()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 / per_batch for s, e in ev]


def time_graph(fn, per_graph: int, replays: int) -> list[float]:
    """Per-launch µs: a CUDA graph of ``per_graph`` launches, each replay timed with events."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(per_graph):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    out = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e3 / per_graph)
    del graph
    return out


def env_fields(git_commit: str | None = None) -> dict:
    import torch

    from eagle4.backends.cuda import nvidia_driver

    return {"device": torch.cuda.get_device_name(0), "driver": nvidia_driver() or "unknown",
            "torch": torch.__version__, "cuda": str(torch.version.cuda),
            "git_commit": git_commit or os.environ.get("EAGLE4_GIT_COMMIT") or _git_commit(),
            "contract_hash": contract_hash(), "provenance": "measured"}


def _git_commit() -> str:
    return git_commit(REPO)


def contract_hash() -> str:
    """The default contract's canonical sha256 (``Contract.sha256``, the hash every result row
    carries), or "none" when the file does not exist."""
    path = REPO / "contracts" / "default.toml"
    if not path.is_file():
        return "none"
    from eagle4.contract import load_contract

    return load_contract(path, verify_files=False).sha256


def run_points(points: list[Point], run_index: int, eager_ref_batches=(1,), log=print) -> list[dict]:
    import torch

    from eagle4 import kernels
    from eagle4.backends.cuda import CudaBackend
    from eagle4.spec import kernel_spec

    backend = CudaBackend()
    backend.require()
    dev = torch.device("cuda", 0)
    env = env_fields()
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    rows = []

    def row(p, impl, mode, times, n, g=0):
        q = p.params
        r = {"kernel": p.kernel, "label": p.label, "impl": impl, "mode": mode, "point": p.pid,
             "B": q.get("B", ""), "W": q.get("W", W if p.kernel in ("draft_tree_score", "update_draft_state") else ""),
             "K": q.get("K", ""), "H": q.get("H", ""), "Q": q.get("Q", ""), "V": q.get("V", ""), "L": q.get("L", ""),
             "dtype": q.get("dtype", "float32"), "run_index": run_index,
             "median_us": f"{float(np.median(times)):.4f}", "p10_us": f"{_pct(times, 10):.4f}",
             "p90_us": f"{_pct(times, 90):.4f}", "mean_us": f"{float(np.mean(times)):.4f}", "n_launches": n,
             "launches_per_sample": g or 1, "timestamp_utc": stamp, **env}
        rows.append(r)
        return r

    for p in points:
        tensors, params = make_call(p, dev)
        op = backend.op(p.kernel)
        args = abi_args(p.kernel, tensors, params)
        fn = lambda op=op, args=args: op(*args)  # noqa: E731
        probe = time_eager(fn, 5, warmup=5)
        t0 = max(float(np.median(probe)), 1.0)
        per_batch = int(min(100, max(5, 3000 / t0)))
        batches = 25
        per_graph = int(min(50, max(2, 4000 / t0)))
        replays = int(min(40, max(10, 200000 / (t0 * per_graph))))
        # short kernels: three eager windows interleaved with the graph ones, so that one slow
        # stretch of the host (eager times include the launch overhead) cannot move the median
        windows = 3 if t0 < 200 else 1
        te, tg = [], []
        for _ in range(windows):
            te += time_eager_batches(fn, per_batch, batches)
            tg += time_graph(fn, per_graph, replays)
        r = row(p, "cuda", "eager", te, per_batch * batches * windows, per_batch)
        rg = row(p, "cuda", "graph", tg, per_graph * replays * windows, per_graph)
        msg = f"run {run_index} {p.pid:42s} eager {float(r['median_us']):10.2f} us  graph {float(rg['median_us']):10.2f} us"
        if p.params["B"] in eager_ref_batches:
            spec = kernel_spec(p.kernel)
            ref_fn_raw = getattr(kernels.module(p.kernel), spec.op)
            rt, rp = make_call(p, dev)
            kw = {a.name: (rp[a.name] if a.role == "scalar" else rt.get(a.name)) for a in spec.args}
            ref_fn = lambda f=ref_fn_raw, kw=kw: f(**kw)  # noqa: E731
            probe = time_eager(ref_fn, 1, warmup=1)[0]
            nr = int(min(20, max(3, 200000 / max(probe, 1.0))))
            rr = row(p, "torch_eager_ref", "eager", time_eager(ref_fn, nr, warmup=0), nr)
            msg += f"  ref {float(rr['median_us']):10.1f} us"
            del rt
        log(msg)
        del tensors, args, fn
        torch.cuda.empty_cache()
    return rows


def write_csv(path: Path, rows: list[dict], fields: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic.atomic_open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def read_csv(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------------------------------------------
# summaries

MAX_COV = Runs.model_fields["cov_max"].default  # the contract schema's runs.cov_max (one literal, there)

SUMMARY_FIELDS = ["kernel", "label", "impl", "mode", "point", "B", "W", "K", "H", "Q", "V", "L", "dtype", "n_runs",
                  "median_us", "cov", "cov_ok", "min_run_us", "max_run_us", "bytes_model", "roofline_us", "roofline_ratio",
                  "speedup_vs_eager_ref", "device", "driver", "torch", "cuda", "git_commit", "contract_hash",
                  "provenance"]


cov = stats.cov


def summarize(raw: list[dict]) -> list[dict]:
    pts = {p.pid: p for p in operating_points()}
    groups: dict[tuple, list[dict]] = {}
    for r in raw:
        groups.setdefault((r["point"], r["impl"], r["mode"]), []).append(r)
    out = []
    for (pid, _impl, _mode), rs in sorted(groups.items()):
        meds = [float(r["median_us"]) for r in rs]
        first = rs[0]
        s = {k: first.get(k, "") for k in SUMMARY_FIELDS}
        s["n_runs"] = len(rs)
        s["median_us"] = f"{float(np.median(meds)):.4f}"
        s["cov"] = f"{cov(meds):.6f}" if len(meds) >= 2 else "nan"
        # a point over the contract's CoV limit is kept, flagged, and does not count as a baseline
        s["cov_ok"] = str(len(meds) >= 2 and cov(meds) <= MAX_COV).lower()
        s["min_run_us"] = f"{min(meds):.4f}"
        s["max_run_us"] = f"{max(meds):.4f}"
        if pid in pts:
            bi, bo = model_bytes(pts[pid])
            s["bytes_model"] = bi + bo
            s["roofline_us"] = f"{bm.roofline_us(bi + bo):.4f}"
            s["roofline_ratio"] = f"{bm.roofline_us(bi + bo) / float(np.median(meds)):.4f}"
        s["speedup_vs_eager_ref"] = ""
        out.append(s)
    ref = {(s["point"]): float(s["median_us"]) for s in out if s["impl"] == "torch_eager_ref"}
    for s in out:
        if s["impl"] == "cuda" and s["point"] in ref:
            s["speedup_vs_eager_ref"] = f"{ref[s['point']] / float(s['median_us']):.2f}"
    return out


def bytes_per_token_rows(summary: list[dict], ncu: dict[str, float] | None = None) -> list[dict]:
    """Bytes per kernel per call (model, and ncu-measured where available) and per committed token.

    One decode cycle = ``S-1`` draft layers (K1, K2, K3, K4-draft, K5-draft once per layer) plus one
    verify step (K4-verify, K5, K6, K7); it commits ``a_b + 1 = 4`` tokens per request.
    """
    layers = S_ACC - 1
    rows = []
    for p in operating_points():
        q = p.params
        if p.kernel in ("tree_mask", "logits_to_probas", "reject_sample", "update_verify") and \
                q.get("variant") != "draft" and q.get("Q") != 64:
            continue  # verify side at Q = 64 (the byte model's example) only
        if p.kernel == "draft_tree_score" and q["dtype"] != "float16":
            continue
        calls = layers if (p.kernel in ("draft_tree_score", "update_draft_state", "work_deltas")
                           or q.get("variant") == "draft") else 1
        tokens = q["B"] * (ACCEPTED + 1)
        bi, bo = model_bytes(p)
        base = {"kernel": p.kernel, "label": p.label, "point": p.pid, "B": q["B"], "calls_per_cycle": calls,
                "tokens_per_cycle": tokens, "draft_layers_per_cycle": layers, "accepted_per_request": ACCEPTED}
        rows.append({**base, "source": "model", "bytes_in": bi, "bytes_out": bo, "bytes_per_call": bi + bo,
                     "bytes_per_cycle": calls * (bi + bo), "bytes_per_token": f"{calls * (bi + bo) / tokens:.1f}",
                     "provenance": "model"})
        if ncu and p.pid in ncu:
            m = ncu[p.pid]
            rows.append({**base, "source": "ncu dram__bytes_read.sum+dram__bytes_write.sum (one launch; "
                         "caches flushed before it; writes still in L2 at kernel end are not counted)", "bytes_in": "",
                         "bytes_out": "", "bytes_per_call": int(m), "bytes_per_cycle": int(calls * m),
                         "bytes_per_token": f"{calls * m / tokens:.1f}", "provenance": "measured"})
    return rows


BPT_FIELDS = ["kernel", "label", "point", "B", "source", "provenance", "bytes_in", "bytes_out", "bytes_per_call",
              "calls_per_cycle", "bytes_per_cycle", "tokens_per_cycle", "bytes_per_token", "draft_layers_per_cycle",
              "accepted_per_request"]


def hotspots_md(summary: list[dict], bpt: list[dict]) -> str:
    lines = ["# H100 kernel hotspots (CUDA baseline)", "",
             "Ranked from `reports/cuda_kernel_times.csv` (measured, graph-replay medians over independent runs) and "
             "`reports/cuda_bytes_per_token.csv` (byte model of KERNELS.md §10). One decode cycle = "
             f"{S_ACC - 1} draft layers (K1, K2, K3, K4-draft, K5-draft per layer) + one verify step "
             f"(K4, K5, K6, K7 at Q = 64); {ACCEPTED + 1} committed tokens per request.", ""]
    for B in BATCHES:
        per_kernel_t: dict[str, float] = {}
        for s in summary:
            if s["impl"] != "cuda" or s["mode"] != "graph" or int(s["B"]) != B:
                continue
            pid = s["point"]
            if s["kernel"] == "draft_tree_score" and s["dtype"] != "float16":
                continue
            is_draft = s["kernel"] in ("draft_tree_score", "update_draft_state", "work_deltas") or "/draft/" in pid
            if not is_draft and s["Q"] not in ("64", 64):
                continue
            calls = (S_ACC - 1) if is_draft else 1
            name = f"{s['label']} {s['kernel']}" + (" (draft)" if "/draft/" in pid else "")
            per_kernel_t[name] = per_kernel_t.get(name, 0.0) + calls * float(s["median_us"])
        per_kernel_b: dict[str, float] = {}
        for r in bpt:
            if r["source"] != "model" or int(r["B"]) != B:
                continue
            name = f"{r['label']} {r['kernel']}" + (" (draft)" if "/draft/" in r["point"] else "")
            per_kernel_b[name] = per_kernel_b.get(name, 0.0) + float(r["bytes_per_cycle"])
        tt, tb = sum(per_kernel_t.values()) or 1.0, sum(per_kernel_b.values()) or 1.0
        lines += [f"## B = {B}", "", f"Kernel time per decode cycle: {tt:.1f} us; kernel HBM bytes per cycle (model): "
                  f"{tb / 2**20:.2f} MiB.", "", "| rank | by time | us per cycle | share | by bytes | MiB per cycle | share |",
                  "|---|---|---|---|---|---|---|"]
        bt = sorted(per_kernel_t.items(), key=lambda x: -x[1])
        bb = sorted(per_kernel_b.items(), key=lambda x: -x[1])
        for i in range(3):
            a = bt[i] if i < len(bt) else ("", 0.0)
            b = bb[i] if i < len(bb) else ("", 0.0)
            lines.append(f"| {i + 1} | {a[0]} | {a[1]:.1f} | {100 * a[1] / tt:.1f}% | {b[0]} | {b[1] / 2**20:.3f} | "
                         f"{100 * b[1] / tb:.1f}% |")
        lines.append("")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------
# ncu probe: one launch of each kernel at the B = 1 points (run under ncu)


def ncu_probe(points: list[Point]) -> None:
    import torch

    from eagle4.backends.cuda import CudaBackend

    backend = CudaBackend()
    dev = torch.device("cuda", 0)
    for p in points:
        tensors, params = make_call(p, dev)
        op = backend.op(p.kernel)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(p.pid)
        op(*abi_args(p.kernel, tensors, params))
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        print(f"NCU_POINT {p.pid}", flush=True)
        del tensors


def parse_ncu_csv(path: Path, points: list[Point]) -> dict[str, float]:
    """dram bytes (read + write) per point from ``ncu --csv --print-units base`` output, in launch order."""
    import io

    text = Path(path).read_text(errors="replace")
    start = text.find('"ID"')
    if start < 0:
        return {}
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    per_launch: dict[str, float] = {}
    order: list[str] = []
    for r in rows:
        kid = r.get("ID")
        name = r.get("Kernel Name", "")
        if not any(f"k{i}_kernel" in name for i in range(1, 8)):
            continue
        if kid not in per_launch:
            order.append(kid)
            per_launch[kid] = 0.0
        try:
            per_launch[kid] += float(str(r.get("Metric Value", "0")).replace(",", ""))
        except ValueError:
            pass
    # our ops launch exactly one kernel each, in point order
    return {p.pid: per_launch[k] for p, k in zip(points, order, strict=False)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eagle4.perf.kernel_bench")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--run-index", type=int, required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--points", default=os.environ.get("EAGLE4_BENCH_POINTS", "all"), choices=("all", "B1", "smoke"))
    r.add_argument("--no-ref", action="store_true")
    s = sub.add_parser("summarize")
    s.add_argument("raw", nargs="+")
    s.add_argument("--reports", default=str(REPO / "reports"))
    s.add_argument("--ncu-csv")
    n = sub.add_parser("ncu-probe")
    n.add_argument("--points", default="B1", choices=("all", "B1", "smoke"))
    args = ap.parse_args(argv)
    if args.cmd == "run":
        rows = run_points(operating_points(args.points), args.run_index, eager_ref_batches=() if args.no_ref else (1,),
                          log=lambda m: print(m, flush=True))
        write_csv(Path(args.out), rows, RAW_FIELDS)
        return 0
    if args.cmd == "ncu-probe":
        ncu_probe(operating_points(args.points))
        return 0
    raw = [row for f in args.raw for row in read_csv(f)]
    raw.sort(key=lambda r: (r["point"], r["impl"], r["mode"], int(r["run_index"])))
    rep = Path(args.reports)
    write_csv(rep / "cuda_kernel_times_raw.csv", raw, RAW_FIELDS)
    summary = summarize(raw)
    write_csv(rep / "cuda_kernel_times.csv", summary, SUMMARY_FIELDS)
    ncu = parse_ncu_csv(Path(args.ncu_csv), operating_points("B1")) if args.ncu_csv and Path(args.ncu_csv).is_file() else {}
    bpt = bytes_per_token_rows(summary, ncu)
    write_csv(rep / "cuda_bytes_per_token.csv", bpt, BPT_FIELDS)
    atomic.write_text(rep / "hotspots_ranked.md", hotspots_md(summary, bpt))
    bad = [s for s in summary if s["cov"] != "nan" and float(s["cov"]) > 0.05]
    print(f"summarized {len(raw)} raw rows into {len(summary)} points; {len(bad)} point(s) with CoV > 5%")
    for s in bad:
        print(f"  CoV {float(s['cov']):.3f} {s['point']} {s['impl']} {s['mode']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

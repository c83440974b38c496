"""Experiment: does the bench's graph timer include host graph-submission latency, and is that where
one-process-of-five outliers come from? Each process times every short point (< 200 us) by:
  cur      timing.graph_times as committed (event a recorded on an idle stream, then replay)
  lead     same, but a ~100 us GPU spin (torch.cuda._sleep) queued before each event a
  pipe     n replays queued back to back with their event pairs, one sync at the end (+ leading spin)
  realloc  cur on freshly allocated tensors (address effects)
methods interleaved per point, 2 windows each; prints per-window medians as CSV lines."""
import sys

import torch

from eagle4 import stats
from eagle4.backends.cuda import CudaBackend
from eagle4.perf import timing
from eagle4.perf.inputs import make_call
from eagle4.perf.kernel_bench import _ours
from eagle4.perf.points import operating_points, shape_from_contract

SPIN = 200_000  # cycles, ~100 us at ~1.98 GHz


def lead_times(fn, g, n):
    timing._warm(fn)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(g):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    out = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(SPIN)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e3 / g)
    return out


def pipe_times(fn, g, n):
    timing._warm(fn)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(g):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    torch.cuda._sleep(SPIN)
    for a, b in ev:
        a.record()
        graph.replay()
        b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) * 1e3 / g for a, b in ev]


def main():
    run = int(sys.argv[1])
    be = CudaBackend()
    be.require()
    dev = torch.device("cuda", 0)
    for c in ("contracts/default.toml", "contracts/deployment-8b.toml"):
        sh = shape_from_contract(c)
        name = c.split("/")[-1][:-5]
        for p in operating_points(sh, "all"):
            tensors, params = make_call(p, dev)
            fn = _ours(p, be, tensors, params)
            t0 = timing.probe_us(fn)
            if t0 > 200:
                continue
            g, n = timing.sizes_for(t0)
            t2, p2 = make_call(p, dev)
            fn2 = _ours(p, be, t2, p2)
            for w in range(2):
                for m, f in (("cur", lambda: timing.graph_times(fn, g, n)), ("lead", lambda: lead_times(fn, g, n)),
                             ("pipe", lambda: pipe_times(fn, g, n)), ("realloc", lambda: timing.graph_times(fn2, g, n))):
                    t = f()
                    print(f"ROW,{run},{name},{p.pid},{m},{w},{g},{stats.median(t):.4f},{min(t):.4f}", flush=True)
            del fn, fn2, tensors, t2
            torch.cuda.empty_cache()


main()

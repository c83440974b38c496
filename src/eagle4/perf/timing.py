"""GPU time of a callable: CUDA-graph replay timed by CUDA events (the one GPU timer of the bench).

``graph_times(fn, per_graph, replays)`` captures ``per_graph`` back-to-back calls of ``fn`` in one
CUDA graph and times each replay with an event pair; per-call time = replay time / per_graph, so
host launch overhead and Python are excluded and ours and the anchors are timed alike. A GPU spin
(``SPIN_CYCLES``) is queued ahead of each timed replay, so that the host has submitted the replay
before the GPU reaches its start event: on an idle stream the start event fires at once and the
host's graph-launch latency (with its jitter) became part of the sample. Measured on the H100 with
and without the spin, same processes, 67 points under 200 us (reports/kernel_before_after/timer/):
without it a point read 0.005-0.11 us a call high (median 0.034, at 50 calls a graph) and the CoV
of five processes' medians was 0.17% at the median point, 0.85% at worst; with it 0.04% and 0.53%.
``TIMER`` names this method; the bench's manifest records it.
``eager_times`` times back-to-back launches from Python (events around a batch): what an eager
caller sees, launch overhead included.
"""

from __future__ import annotations


def _warm(fn, n: int = 2) -> None:
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(n):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()


# ~100 us at the H100's 1.98 GHz: far longer than the host needs to launch a graph of 50 calls
SPIN_CYCLES = 200_000
TIMER = f"cuda-graph replay timed by CUDA events, {SPIN_CYCLES}-cycle GPU spin queued ahead of each replay"


def _spin() -> None:
    import torch

    sleep = getattr(torch.cuda, "_sleep", None)  # PyTorch's own spin kernel (its test suite's delay)
    if sleep is None:
        raise RuntimeError(f"torch {torch.__version__} has no torch.cuda._sleep: the graph timer "
                           "(eagle4.perf.timing) needs a GPU spin ahead of each timed replay")
    sleep(SPIN_CYCLES)


def graph_times(fn, per_graph: int, replays: int) -> list[float]:
    """Per-call microseconds of ``replays`` replays of a graph of ``per_graph`` calls."""
    import torch

    _warm(fn)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(per_graph):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    out = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        _spin()  # the GPU is busy while the host records a and submits the replay
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e3 / per_graph)
    del graph
    return out


def eager_times(fn, per_batch: int, batches: int, warmup: int = 10) -> list[float]:
    """Per-launch microseconds of ``batches`` batches of ``per_batch`` eager calls."""
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


def probe_us(fn, n: int = 3) -> float:
    """A rough per-call time (eager, after one warm-up) to size the timed loops."""
    import torch

    fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        fn()
    b.record()
    b.synchronize()
    return max(a.elapsed_time(b) * 1e3 / n, 1.0)


def sizes_for(t0_us: float) -> tuple[int, int]:
    """(calls per graph, replays) for a call of about ``t0_us``: >= ~1 ms of GPU time per window,
    >= 10 replays (the window's median), at most 50 calls per graph."""
    per_graph = int(min(50, max(2, 4000 / t0_us)))
    replays = int(min(30, max(10, 100000 / (t0_us * per_graph))))
    return per_graph, replays

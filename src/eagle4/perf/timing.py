"""GPU time of a callable: CUDA-graph replay timed by CUDA events (the one GPU timer of the bench).

``graph_times(fn, per_graph, replays)`` captures ``per_graph`` back-to-back calls of ``fn`` in one
CUDA graph between two timing events recorded inside the graph (event record nodes,
``torch.cuda.Event(external=True)``), and times each replay by that pair; per-call time = event
interval / per_graph, so host launch overhead and Python are excluded and ours and the anchors are
timed alike. Events recorded by the host around the replay (this timer until 2026-11-27) put any host
stall between the start event and the replay's submission into the sample: on the H100, a 0.3 ms
stall there read +5.5 us a call and a 2 ms one +40 us, while the in-graph pair read the same as
without a stall (within 0.01 us a call at the 1.4-2.0 us points probed) and the same as the host pair
without one (the probe is in the tree of commit dda08bb, reports/kernel_before_after/timer/). A GPU spin (``SPIN_CYCLES``) is still
queued ahead of each replay, so that the GPU is busy, not idle, when the replay reaches it (after a
2 ms idle gap one probe point read 0.15 us a call high without it). ``TIMER`` names this method; the
bench's manifest records it.
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
TIMER = (f"cuda-graph replay timed by CUDA events recorded inside the graph, {SPIN_CYCLES}-cycle GPU spin queued "
         "ahead of each replay")


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
    # external: captured as event record nodes of the graph, so each replay records them itself
    a = torch.cuda.Event(enable_timing=True, external=True)
    b = torch.cuda.Event(enable_timing=True, external=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        a.record()
        for _ in range(per_graph):
            fn()
        b.record()
    graph.replay()
    torch.cuda.synchronize()
    out = []
    for _ in range(replays):
        _spin()  # the GPU is busy when the replay reaches it
        graph.replay()
        torch.cuda.synchronize()
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

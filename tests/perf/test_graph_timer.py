"""The bench's graph timer (eagle4.perf.timing) on a stand-in torch that logs what reaches the stream.

What it pins: the timing events are recorded inside the captured graph, so no host action between
them can reach a sample (the measured reason is in timing's docstring); each timed replay is queued
behind a GPU spin; the per-call time is the event interval over the calls in the graph; a torch
without the spin kernel is refused by name.
"""

from __future__ import annotations

import sys
import types
from contextlib import contextmanager

import pytest

from eagle4.perf import timing

pytestmark = [pytest.mark.cpu]


def _fake_torch(log: list[str], with_sleep: bool = True, replay_ms: float = 0.1):
    clock = {"t": 0.0}
    capture: list = []  # the graph being captured: its event nodes

    class Event:
        def __init__(self, enable_timing=False, external=False):
            self.t = None
            self.external = external

        def record(self):
            if capture and self.external:  # a node of the graph: set when a replay runs it
                log.append("record node")
                capture[-1].nodes.append(self)
            else:
                log.append("record")
                self.t = clock["t"]

        def synchronize(self):
            log.append("sync")

        def elapsed_time(self, other):
            return other.t - self.t

    class CUDAGraph:
        def __init__(self):
            self.nodes = []

        def replay(self):
            log.append("replay")
            for i, ev in enumerate(self.nodes):  # the calls run between the first and the last node
                if i == len(self.nodes) - 1:
                    clock["t"] += replay_ms
                ev.t = clock["t"]

    @contextmanager
    def graph(g, *_a, **_k):
        capture.append(g)
        try:
            yield
        finally:
            capture.pop()

    @contextmanager
    def ctx(*_a, **_k):
        yield

    cuda = types.SimpleNamespace(
        Event=Event, CUDAGraph=CUDAGraph, graph=graph, stream=ctx,
        Stream=lambda: types.SimpleNamespace(wait_stream=lambda s: None),
        current_stream=lambda: types.SimpleNamespace(wait_stream=lambda s: None),
        synchronize=lambda: log.append("sync"))
    if with_sleep:
        cuda._sleep = lambda cycles: log.append(f"spin {cycles}")
    return types.SimpleNamespace(cuda=cuda, __version__="fake")


def test_the_events_are_in_the_graph_and_each_replay_starts_behind_a_spin(monkeypatch):
    log: list[str] = []
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(log))
    calls = []
    times = timing.graph_times(lambda: calls.append(1), per_graph=4, replays=3)
    assert times == pytest.approx([25.0] * 3)  # 0.1 ms a replay over 4 calls
    assert log.count("record node") == 2 and "record" not in log  # no host-recorded event
    timed = log[log.index("replay") + 2:]  # after the warm replay and its sync
    assert timed == [f"spin {timing.SPIN_CYCLES}", "replay", "sync"] * 3
    assert str(timing.SPIN_CYCLES) in timing.TIMER and "inside the graph" in timing.TIMER


def test_a_torch_without_the_spin_kernel_is_refused(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _fake_torch([], with_sleep=False))
    with pytest.raises(RuntimeError, match="torch.cuda._sleep"):
        timing.graph_times(lambda: None, per_graph=2, replays=1)

"""Timer probe (development aid, issue 14): does a host stall between the start event and the replay reach a
sample of eagle4.perf.timing.graph_times, and do timing events recorded inside the graph (torch.cuda.Event(
external=True) during capture) avoid it? Pure torch: the workload is a graph of 50 small launches."""
import json, os, statistics as st, sys, time
import torch
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "src"))
from eagle4.perf import timing

torch.cuda.init()
dev = torch.cuda.get_device_name()
x = torch.zeros(1 << 16, device="cuda")
work = {
    "add_64k": lambda: x.add_(1.0),
    "sleep_2k": lambda: torch.cuda._sleep(2000),
}
PER, REPS = 50, 30


def host_timer(fn, stall_s):
    """eagle4.perf.timing.graph_times with an optional host stall between the start event and the replay."""
    timing._warm(fn)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(PER):
            fn()
    g.replay(); torch.cuda.synchronize()
    out = []
    for _ in range(REPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        timing._spin()
        a.record()
        if stall_s:
            time.sleep(stall_s)
        g.replay()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e3 / PER)
    return out


def graph_events_timer(fn, stall_s, spin):
    """start and end events captured inside the graph (event record nodes)."""
    timing._warm(fn)
    a = torch.cuda.Event(enable_timing=True, external=True)
    b = torch.cuda.Event(enable_timing=True, external=True)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        a.record()
        for _ in range(PER):
            fn()
        b.record()
    g.replay(); torch.cuda.synchronize()
    out = []
    for _ in range(REPS):
        if spin:
            timing._spin()
        if stall_s:
            time.sleep(stall_s)
        g.replay()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) * 1e3 / PER)
    return out


res = {"device": dev, "torch": torch.__version__, "per_graph": PER, "replays": REPS, "rows": []}
for name, fn in work.items():
    for rnd in range(3):
        for label, f in [("host_events", lambda s: host_timer(fn, s)),
                         ("graph_events", lambda s: graph_events_timer(fn, s, False)),
                         ("graph_events_spin", lambda s: graph_events_timer(fn, s, True))]:
            for stall in (0.0, 0.0003, 0.002):
                try:
                    v = f(stall)
                    row = dict(work=name, round=rnd, timer=label, stall_us=stall * 1e6, median=st.median(v),
                               p10=sorted(v)[len(v) // 10], p90=sorted(v)[9 * len(v) // 10])
                except Exception as e:  # noqa: BLE001 (a probe: report and go on)
                    row = dict(work=name, round=rnd, timer=label, stall_us=stall * 1e6, error=f"{type(e).__name__}: {e}")
                res["rows"].append(row)
                print(json.dumps(row), flush=True)
json.dump(res, open(sys.argv[1], "w"), indent=1)

"""H100 latency of our CUDA kernels (K1..K7) at the operating points, >= --perf-runs independent runs.

Each run is a separate process (``python -m eagle4.perf.kernel_bench run``) that times every point
once: CUDA events per launch (eager), graph replay (graph), and the eager PyTorch reference at
batch 1. Per kernel the test asserts, for every point and mode of our kernels:
* as many runs as asked for (>= 5) and a coefficient of variation of the run medians <= --max-cov;
* at batch 1, the eager CUDA op at least 3x faster than the eager PyTorch reference;
and that the device is an H100 (sign-off numbers come from one).
``EAGLE4_BENCH_POINTS=B1`` (or ``smoke``) restricts the points for a quick check; the committed
numbers come from ``scripts/bench_h100_kernels.sh`` (all points).
Needs ``--hw=cuda``; never runs under xdist (the perf plugin fails it there).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from eagle4.perf.kernel_bench import read_csv, summarize
from eagle4.spec import KERNEL_ORDER

pytestmark = [pytest.mark.perf, pytest.mark.cuda]
REPO = Path(__file__).resolve().parents[2]
MIN_SPEEDUP_B1 = 3.0


@pytest.fixture(scope="module")
def bench(tmp_path_factory, pytestconfig):
    runs = pytestconfig.getoption("--perf-runs")
    points = os.environ.get("EAGLE4_BENCH_POINTS", "all")
    out = tmp_path_factory.mktemp("kernel_bench")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    raw = []
    for i in range(runs):
        path = out / f"raw_{i}.csv"
        proc = subprocess.run([sys.executable, "-m", "eagle4.perf.kernel_bench", "run", "--run-index", str(i),
                               "--points", points, "--out", str(path)], capture_output=True, text=True, env=env,
                              timeout=1800)
        if proc.returncode != 0:
            pytest.fail(f"bench run {i} failed (rc {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}",
                        pytrace=False)
        raw.extend(read_csv(path))
    return raw, summarize(raw), runs


def test_device_is_h100(bench):
    raw, _, _ = bench
    devices = {r["device"] for r in raw}
    assert all("H100" in d for d in devices), f"sign-off kernel numbers must come from an H100, got {devices}"
    assert {r["provenance"] for r in raw} == {"measured"}


@pytest.mark.parametrize("mode", ["graph", "eager"])
@pytest.mark.parametrize("kernel", KERNEL_ORDER)
def test_kernel_runs_and_cov(bench, kernel, mode, max_cov, perf_rows):
    raw, summary, runs = bench
    mine = [s for s in summary if s["kernel"] == kernel and s["impl"] == "cuda" and s["mode"] == mode]
    assert mine, f"no {mode} measurements of {kernel}"
    perf_rows.extend(r for r in raw if r["kernel"] == kernel and r["mode"] == mode)
    bad = []
    for s in mine:
        if int(s["n_runs"]) < runs:
            bad.append(f"{s['point']} {s['mode']}: {s['n_runs']} runs < {runs}")
        elif float(s["cov"]) > max_cov:
            bad.append(f"{s['point']} {s['mode']}: CoV {float(s['cov']):.3f} > {max_cov} "
                       f"(run medians {s['min_run_us']}..{s['max_run_us']} us)")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("kernel", KERNEL_ORDER)
def test_kernel_beats_eager_reference_at_b1(bench, kernel):
    _, summary, _ = bench
    rows = [s for s in summary if s["kernel"] == kernel and s["impl"] == "cuda" and s["mode"] == "eager"
            and str(s["B"]) == "1"]
    assert rows, f"no batch-1 point of {kernel}"
    bad = [f"{s['point']}: {s['speedup_vs_eager_ref'] or 'no reference timing'}x" for s in rows
           if not s["speedup_vs_eager_ref"] or float(s["speedup_vs_eager_ref"]) < MIN_SPEEDUP_B1]
    assert not bad, f"{kernel} must be >= {MIN_SPEEDUP_B1}x faster than eager PyTorch at B=1: " + "; ".join(bad)

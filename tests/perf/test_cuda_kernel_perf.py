"""H100 kernel bench as a test: our CUDA ops against their PyTorch anchors at the contracts' points.

Each run is a separate process (``python -m eagle4.perf.kernel_bench run``) timing every point of
the default and the deployment contract once (ours and every anchor in CUDA graphs, same timer).
The test asserts the contracts' ``[baseline]`` card, >= the contract's runs per point with the contract's CoV limit in graph
mode, and that no point of ours is slower than its best same-computation anchor.
``EAGLE4_BENCH_POINTS=B1`` restricts the points to batch 1 for a quick check; the committed numbers
come from ``scripts/bench_h100_kernels.sh``. Needs ``--hw=cuda``; never under xdist.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from eagle4.contract import baseline_card, load_contract
from eagle4.perf.card import card_of
from eagle4.perf.kernel_report import summarize
from eagle4.perf.points import shape_from_contract
from eagle4.perf.rows import read_csv

pytestmark = [pytest.mark.perf, pytest.mark.cuda]
REPO = Path(__file__).resolve().parents[2]
CONTRACTS = [REPO / "contracts" / "default.toml", REPO / "contracts" / "deployment-8b.toml"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory, pytestconfig):
    shapes = [shape_from_contract(c) for c in CONTRACTS]
    runs = max([pytestconfig.getoption("--perf-runs")] + [s.runs for s in shapes])
    points = os.environ.get("EAGLE4_BENCH_POINTS", "all")
    out = tmp_path_factory.mktemp("kernel_bench")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cargs = [a for c in CONTRACTS for a in ("--contract", str(c))]
    raw = []
    for i in range(runs):
        path = out / f"raw_{i}.csv"
        proc = subprocess.run([sys.executable, "-m", "eagle4.perf.kernel_bench", "run", *cargs, "--run-index", str(i),
                               "--points", points, "--out", str(path)], capture_output=True, text=True, env=env,
                              timeout=1800)
        if proc.returncode != 0:
            pytest.fail(f"bench run {i} failed (rc {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}",
                        pytrace=False)
        raw.extend(read_csv(path))
    return raw, summarize(raw, shapes), runs


def test_device_is_the_contracts_baseline_card(bench):
    raw, _, _ = bench
    devices = {r["device"] for r in raw}
    want = {baseline_card(load_contract(c, verify_files=False)) for c in CONTRACTS}
    assert {card_of(d) for d in devices} <= want, \
        f"sign-off kernel numbers must come from the contracts' [baseline] card ({sorted(c.name for c in want)}), " \
        f"got {devices}"
    assert {r["provenance"] for r in raw} == {"measured"}


def test_runs_and_cov_graph(bench, perf_rows):
    raw, summary, runs = bench
    perf_rows.extend(r for r in raw if r["mode"] == "graph")
    bad = [f"{s['contract']} {s['point']} {s['impl']}: n={s['n_runs']} CoV {float(s['cov']):.4f}"
           for s in summary if s["mode"] == "graph" and (int(s["n_runs"]) < runs or s["valid"] != "true")]
    assert not bad, "outside the contract's run rule:\n" + "\n".join(bad)


def test_not_slower_than_anchor(bench):
    _, summary, _ = bench
    slow = [f"{s['contract']} {s['point']}: ours {float(s['median_us']):.2f} us, {s['anchor_impl']} "
            f"{float(s['anchor_us']):.2f} us" for s in summary if s.get("slower_than_anchor") == "true"]
    assert not slow, "ours slower than the best PyTorch anchor:\n" + "\n".join(slow)

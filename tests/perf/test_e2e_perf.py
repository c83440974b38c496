"""End-to-end perf of the engines (the device engine for backends with a device-tensor interface): per operating point >= 5 independent runs (separate
processes), TTFT/ITL p50/p99, tokens/s with its CoV (asserted <= the contract's cov_max), mean
acceptance length, and the time share of every kernel / model forward inside the loop.

* ``pytest tests/perf/test_e2e_perf.py -m perf -p no:xdist`` (CPU): the points in
  ``EAGLE4_E2E_POINTS`` (default ``b1``), ref kernels; results under pytest's tmp dir.
* ``pytest tests/perf/test_e2e_perf.py -m perf -p no:xdist --hw=cuda`` (H100): every contract point,
  models on cuda, kernels on ``EAGLE4_E2E_BACKEND`` (default ``cuda``); writes
  h100_baseline_raw.csv and h100_baseline_summary.md (+ runs/profile CSVs) into ``--reports-dir``
  (``--reports-dir reports`` to update the committed baseline; by default a scratch copy).
Never under xdist (runs would measure each other).
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import pytest

from eagle4.contract import load_contract
from eagle4.workload.runner import run_contract

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "contracts" / "default.toml"


def _runs(config, contract) -> int:
    try:
        n = int(config.getoption("--perf-runs"))
    except ValueError:
        n = 5
    return max(n, contract.runs.runs, 5)


def _check(stats, contract):
    failures = []
    for s in stats:
        assert s["runs"] >= 5
        if not s["cov_ok"]:
            failures.append(f"{s['point']}: CoV of tokens/s {s['tokens_per_s_cov']:.2%} > {contract.runs.cov_max:.0%}")
        if s["acceptance_length_mean"] < 1.0:
            failures.append(f"{s['point']}: acceptance length {s['acceptance_length_mean']:.3f} < 1")
    assert not failures, "; ".join(failures)


@pytest.fixture(autouse=True)
def _no_xdist(request):
    if hasattr(request.config, "workerinput"):
        pytest.fail("perf tests never run under pytest-xdist: use -p no:xdist", pytrace=False)


@pytest.mark.perf
@pytest.mark.cpu
@pytest.mark.slow
def test_e2e_perf_cpu(request, tmp_path, perf_rows):
    c = load_contract(CONTRACT)
    points = os.environ.get("EAGLE4_E2E_POINTS", "b1").split(",")
    res = run_contract(c, "ref", tmp_path, points=points, runs=_runs(request.config, c), device="cpu",
                       isolate=True, prefix="e2e_cpu", threads=int(os.environ.get("EAGLE4_E2E_THREADS", "1")))
    perf_rows.extend({"test": "e2e_cpu", **r} for r in res["runs"])
    print((tmp_path / "e2e_cpu_summary.md").read_text())
    summary = (tmp_path / "e2e_cpu_summary.md").read_text()
    for s in res["stats"]:
        assert s["acceptance_length_mean"] >= 2.0, f"{s['point']}: acceptance collapsed to {s['acceptance_length_mean']:.3f}"
        assert s["hotspots"], "no per-kernel time share recorded"
        # A shared 2-core CPU runner measures 7-10% run-to-run CoV (separate processes, 3 s each);
        # the contract's 5% limit is asserted on the H100 (test_e2e_perf_h100 and the committed
        # baseline). Here the harness must measure CoV right and flag a noisy point as not counting:
        # the CoV is recomputed from the per-run rows, not read back from the runner's own flag.
        runs = [r for r in res["runs"] if r["point"] == s["point"]]
        assert len({r["run_index"] for r in runs}) == len(runs) == _runs(request.config, c)
        tps = [float(r["tokens_per_s"]) for r in runs]
        cov = statistics.stdev(tps) / statistics.fmean(tps)
        assert s["tokens_per_s_cov"] == pytest.approx(cov, rel=1e-6, abs=1e-12)
        noisy = cov > c.runs.cov_max
        assert s["cov_ok"] is (not noisy)
        row = next(line for line in summary.splitlines() if line.startswith(f"| {s['point']} |"))
        assert ("over limit" in row) == noisy, row


@pytest.mark.perf
@pytest.mark.cuda
def test_e2e_perf_h100(request, perf_rows):
    c = load_contract(CONTRACT)
    backend = os.environ.get("EAGLE4_E2E_BACKEND", "cuda")
    from plugins.parity import reports_dir

    out = Path(os.environ.get("EAGLE4_E2E_OUT") or reports_dir(request.config))  # reports/ only when asked
    res = run_contract(c, backend, out, runs=_runs(request.config, c), device="cuda", isolate=True,
                       prefix="h100_baseline")
    perf_rows.extend({"test": "e2e_h100", **r} for r in res["runs"])
    print(res["paths"]["summary"].read_text())
    _check(res["stats"], c)


@pytest.mark.perf
@pytest.mark.cuda
def test_e2e_deployment_h100(request, perf_rows):
    """The deployment contract on the GPU-resident, graph-captured engine (what
    scripts/bench_h100_e2e.sh --contract contracts/deployment-8b.toml runs after its self-check):
    every point must be VALID under the contract's own rules (>= 5 processes x >= 30 s, >= 200
    samples per percentile, CoV <= 2%, steady state); a failure lists each point's reasons."""
    from plugins.parity import reports_dir

    deploy = ROOT / "contracts" / "deployment-8b.toml"
    out = Path(os.environ.get("EAGLE4_E2E_OUT") or reports_dir(request.config))
    points = os.environ.get("EAGLE4_E2E_POINTS")
    stats = run_contract(deploy, "cuda", out, points=points.split(",") if points else None, device="cuda",
                         prefix="h100_e2e")["stats"]
    perf_rows.extend({"test": "e2e_deployment_h100", **s} for s in stats)
    bad = [f"{s['point']}: {s['why']}" for s in stats if s["status"] != "VALID"]
    assert not bad, "; ".join(bad)

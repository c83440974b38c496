"""The FPGA sign-off rows: the contract's workload with the seven kernels on the board (the xrt backend).

``run_board_signoff(contract, reports, xclbin=...)`` writes, next to the H100 baseline's files and from
the same engine and metrics (``eagle4.workload.runner``):

* ``e2e_raw.csv`` / ``e2e_runs.csv`` / ``e2e_summary.md`` / ``acceptance_lengths.csv``: end-to-end tokens/s,
  TTFT and ITL per operating point, >= 5 independent runs (one process each), backend ``xrt``;
* ``fpga_kernel_times_raw.csv`` / ``fpga_kernel_times.csv``: per-call latency of every kernel at the H100
  bench's operating points, >= 5 independent runs, CoV, bytes from the counters block
  (``eagle4.perf.board_bench``);
* ``throughput.csv``: the rows the throughput gate reads: ``run = spec`` (these e2e runs) and
  ``run = baseline`` (the committed e2e runs of the contract's ``[baseline]`` card, ``h100_baseline_runs.csv`` of its record
  under ``reports/cards/``, only when they were measured under the same contract; otherwise none, and the gate says the baseline is missing).

Every row carries the backend's provenance: ``measured`` on a board, ``double`` through the pyxrt test
double. The model forwards run on the host (``device``); the board runs the kernels.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

THROUGHPUT_FIELDS = ["run", "point", "batch", "run_index", "tokens_per_s", "mean_acceptance_length", "backend",
                     "device", "provenance", "contract_sha256", "commit", "source"]


def throughput_rows(contract_sha: str, spec_runs: list[dict], baseline_csv: Path) -> tuple[list[dict], str]:
    """(rows of throughput.csv, a note on the baseline). Baseline rows are taken only from runs of the same
    contract: a baseline measured under another contract is no baseline for this one."""
    rows = [{**{k: r.get(k, "") for k in THROUGHPUT_FIELDS}, "run": "spec", "source": "e2e_runs.csv"} for r in spec_runs]
    note = f"baseline: {baseline_csv} not found"
    if baseline_csv.is_file():
        with open(baseline_csv, newline="") as f:
            base = list(csv.DictReader(f))
        same = [r for r in base if r.get("contract_sha256") == contract_sha]
        rows += [{**{k: r.get(k, "") for k in THROUGHPUT_FIELDS}, "run": "baseline", "source": str(baseline_csv.name)}
                 for r in same]
        note = (f"baseline: {len(same)} H100 runs of this contract from {baseline_csv.name}" if same else
                f"baseline: {baseline_csv.name} holds runs of other contracts only "
                f"({sorted({r.get('contract_sha256', '')[:12] for r in base})}); re-measure the H100 under this one")
    return rows, note


def run_board_signoff(contract, reports, *, xclbin, device: str = "cpu", bench_points: str = "all",
                      log=print) -> dict:
    """Run the workload and the kernel bench on the board; returns {"notes": [...], "paths": {...}}."""
    from eagle4.backends.xrt import board_missing
    from eagle4.perf import board_bench, records
    from eagle4.workload.runner import run_contract

    why = board_missing(xclbin)
    if why:
        raise RuntimeError(f"the FPGA board is not usable: {why}")
    reports = Path(reports)
    os.environ["EAGLE4_XCLBIN"] = str(xclbin)  # the run processes open the same xclbin
    e2e = run_contract(contract, backend="xrt", out_dir=reports, device=device, log=log)
    bench = board_bench.measure(contract.runs.runs, bench_points, reports, xclbin, contract.sha256, log=log,
                                contract_path=contract.source_path)
    rows, note = throughput_rows(contract.sha256, e2e["runs"], records.baseline_dir(contract) / "h100_baseline_runs.csv")
    tp = board_bench.write_csv(reports / "throughput.csv", rows, THROUGHPUT_FIELDS)
    provs = sorted({r["provenance"] for r in e2e["runs"]} | {r["provenance"] for r in bench["raw"]})
    notes = [f"e2e on the board: {len(e2e['runs'])} runs -> {e2e['paths']['runs']}",
             f"kernel latency: {len(bench['summary'])} points x {contract.runs.runs} runs -> {bench['paths']['summary']}",
             f"throughput rows: {tp} ({note})", f"provenance of these rows: {', '.join(provs)}"]
    bad = [s["point"] for s in bench["summary"] if s["correct"] != "true"]
    if bad:
        notes.append(f"outputs differ from the reference at {bad}: those latencies do not count")
    return {"notes": notes, "paths": {**e2e["paths"], **bench["paths"], "throughput": tp}, "provenance": provs}

"""Per-call latency of the seven kernels on the FPGA board (the xrt backend), one process per run.

The operating points are the H100 bench's (``eagle4.perf.points.operating_points`` of the contract
given, default ``contracts/default.toml``), so every board figure has a like-for-like H100 row. ``python -m eagle4.perf.board_bench run --run-index I --out
raw_I.csv`` times every point once in this process (one *run*): after ``WARMUP`` calls, ``CALLS`` calls,
each timed from ``run.start`` to the completed ``run.wait`` (``kernel_us``: what the device takes as the
host sees it) and around the whole call (``call_us``: transfers included); the first call's outputs are
compared with the PyTorch reference (``correct``: a point whose outputs differ is kept, flagged and not
counted). Bytes come from the kernel's counters block (``bytes_read`` / ``bytes_written``, empty when the
build does not count them). ``measure`` starts ``runs`` independent processes and ``summarize`` gives the
median over runs and the coefficient of variation per point (``reports/fpga_kernel_times.csv``).

Provenance: ``measured`` on a board, ``double`` through the pyxrt test double (C-sim underneath: the
times are those of a CPU, not of an FPGA).
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from eagle4 import validity
from eagle4.contract import MIN_RUNS, Runs

DEFAULT_COV_MAX = Runs.model_fields["cov_max"].default  # the contract schema's, not a second literal

WARMUP = 2
CALLS = 10
RAW_FIELDS = ["kernel", "label", "point", "run_index", "calls", "kernel_us", "call_us", "bytes_read", "bytes_written",
              "correct", "device", "xclbin_sha256", "contract_hash", "git_commit", "provenance", "timestamp_utc"]
SUMMARY_FIELDS = ["kernel", "label", "point", "n_runs", "median_kernel_us", "cov", "cov_ok", "min_run_us",
                  "max_run_us", "median_call_us", "bytes_read", "bytes_written", "correct", "device", "xclbin_sha256",
                  "contract_hash", "provenance"]


def run_points(which: str, run_index: int, xclbin=None, contract_sha: str | None = None, log=print,
               contract_path=None) -> list[dict]:
    import torch

    from eagle4 import dtypes as dt
    from eagle4.backends.xrt import XrtBackend
    from eagle4.compare import compare_outputs
    from eagle4.parity import reference_outcome
    from eagle4.perf.inputs import make_call
    from eagle4.perf.points import operating_points, shape_from_contract
    from eagle4.spec import kernel_spec
    from eagle4.vcs import git_commit

    shape = shape_from_contract(contract_path)
    b = XrtBackend(xclbin=xclbin)
    b.open()
    env = {"device": b.device_info().device, "xclbin_sha256": b.board["fpga_xclbin_sha256"],
           "contract_hash": contract_sha or shape.contract_hash, "git_commit": git_commit(),
           "provenance": b.provenance, "timestamp_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    rows = []
    for p in operating_points(shape, which):
        if p.kernel == "draft_step":  # three kernels: each is its own point
            continue
        tensors, params = make_call(p, torch.device("cpu"))
        spec = kernel_spec(p.kernel)
        inputs = {a.name: dt.to_numpy(tensors[a.name]) for a in spec.tensors
                  if a.name in tensors and tensors[a.name] is not None}
        from eagle4.cases import Case

        case = Case(p.kernel, f"{p.kernel}/bench/{p.pid}", params, inputs, 1234, ("bench",), "board bench point")
        got = b.run(p.kernel, inputs, params)
        ref = reference_outcome(case)
        correct = ref.error is None and compare_outputs(p.kernel, ref.outputs, got, inputs, params, case.case_id).ok
        for _ in range(WARMUP - 1):
            b.run(p.kernel, inputs, params)
        kern, call = [], []
        for _ in range(CALLS):
            t0 = time.perf_counter()
            b.run(p.kernel, inputs, params)
            call.append(time.perf_counter() - t0)
            kern.append(b.last_timing["kernel_s"])
        c = b.last_counters
        rd = sum(r for r, _ in c["ports"].values()) if c.get("bytes_counted") else ""
        wr = sum(w for _, w in c["ports"].values()) if c.get("bytes_counted") else ""
        rows.append({"kernel": p.kernel, "label": p.label, "point": p.pid, "run_index": run_index, "calls": CALLS,
                     "kernel_us": f"{np.median(kern) * 1e6:.3f}", "call_us": f"{np.median(call) * 1e6:.3f}",
                     "bytes_read": rd, "bytes_written": wr, "correct": str(bool(correct)).lower(), **env})
        log(f"run {run_index} {p.pid:42s} kernel {np.median(kern) * 1e6:10.1f} us  call {np.median(call) * 1e6:10.1f} us"
            f"{'' if correct else '  OUTPUTS DIFFER FROM THE REFERENCE'}")
    return rows


def write_csv(path: Path, rows: list[dict], fields: list[str]) -> Path:
    """Atomic write (eagle4.report.atomic): an interrupted run leaves the previous file intact."""
    from eagle4.report.atomic import atomic_open

    with atomic_open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return Path(path)


def read_csv(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def summarize(raw: list[dict], cov_max: float = DEFAULT_COV_MAX) -> list[dict]:
    """Median over runs of each point's median kernel time, its CoV across runs (>= 2 runs), flags."""
    groups: dict[str, list[dict]] = {}
    for r in raw:
        groups.setdefault(r["point"], []).append(r)
    out = []
    for rs in groups.values():
        med = np.asarray([float(r["kernel_us"]) for r in rs])
        # the CoV rule is decided where every other run rule is (eagle4.validity)
        ps = validity.summarize_runs(rs, value="kernel_us", rule=validity.RunRule(MIN_RUNS, cov_max),
                                     require_hash=False)
        first = rs[0]
        out.append({**{k: first.get(k, "") for k in SUMMARY_FIELDS}, "n_runs": len(rs),
                    "median_kernel_us": f"{np.median(med):.3f}", "cov": f"{ps.cov:.6f}",
                    "cov_ok": str(ps.cov_ok).lower(),
                    "min_run_us": f"{med.min():.3f}", "max_run_us": f"{med.max():.3f}",
                    "median_call_us": f"{np.median([float(r['call_us']) for r in rs]):.3f}",
                    "correct": str(all(r["correct"] == "true" for r in rs)).lower(),
                    "provenance": "+".join(sorted({r["provenance"] for r in rs}))})
    return out


def measure(runs: int, which: str, out_dir: Path, xclbin=None, contract_sha: str | None = None,
            timeout_s: float = 1800, log=print, contract_path=None) -> dict:
    """``runs`` (>= 5) independent processes; writes fpga_kernel_times_raw.csv and fpga_kernel_times.csv."""
    if runs < MIN_RUNS:
        raise ValueError(f"runs = {runs}: at least {MIN_RUNS} independent runs per point are required")
    out_dir = Path(out_dir)
    raw: list[dict] = []
    src = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for i in range(runs):
        path = out_dir / f".fpga_bench_run_{i}.csv"
        cmd = [sys.executable, "-m", "eagle4.perf.board_bench", "run", "--run-index", str(i), "--points", which,
               "--out", str(path)] + (["--xclbin", str(xclbin)] if xclbin else []) \
            + (["--contract-sha", contract_sha] if contract_sha else []) \
            + (["--contract", str(contract_path)] if contract_path else [])
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
        if p.returncode:
            raise RuntimeError(f"board bench run {i} failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
        raw += read_csv(path)
        path.unlink()
        log(f"board bench run {i}: {len(raw)} rows")
    summary = summarize(raw)
    paths = {"raw": write_csv(out_dir / "fpga_kernel_times_raw.csv", raw, RAW_FIELDS),
             "summary": write_csv(out_dir / "fpga_kernel_times.csv", summary, SUMMARY_FIELDS)}
    return {"raw": raw, "summary": summary, "paths": paths}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eagle4.perf.board_bench")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="one run: every point once, in this process")
    r.add_argument("--run-index", type=int, required=True)
    r.add_argument("--points", default="all", choices=("all", "B1", "smoke"))
    r.add_argument("--out", required=True)
    r.add_argument("--xclbin", default=None)
    r.add_argument("--contract-sha", default=None, help="the contract the rows belong to (default: contracts/default.toml)")
    r.add_argument("--contract", default=None, help="the contract whose points are measured (default: contracts/default.toml)")
    a = ap.parse_args(argv)
    rows = run_points(a.points, a.run_index, a.xclbin, a.contract_sha, log=lambda m: print(m, file=sys.stderr),
                      contract_path=a.contract)
    write_csv(Path(a.out), rows, RAW_FIELDS)
    return 0


if __name__ == "__main__":
    sys.exit(main())

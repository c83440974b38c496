#!/usr/bin/env python3
"""Raw rows of kernel-bench runs whose CSV did not come back, from the medians the run printed.

    python scripts/kernel_runs_from_log.py LOG --template RAW_0.csv --runs 2 3 4 --out DIR

``python -m eagle4.perf.kernel_bench run`` prints one line per point and run: ``run I CONTRACT POINT
ours X us  IMPL Y  IMPL Z ...`` (per-run medians, 0.01 us resolution). When the device returned the
log but not every ``raw_I.csv`` (it returns at most 8 files), this writes ``raw_I.csv`` for the given
runs: each row copies the static fields (kernel, sizes, device, driver, contract hash, commit) of the
template's row of the same (contract, point, impl, mode=graph), takes the printed median, leaves the
window statistics (p10, p90, mean, launches) empty and says ``source=log``. Runs that are in both
the log and a CSV are cross-checked (the printed median must round the CSV's).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from eagle4.perf.rows import RAW_FIELDS, read_csv, write_csv  # noqa: E402

LINE = re.compile(r"^run (\d+) (\S+)\s+(\S+)\s+ours\s+([0-9.]+) us(.*)$")


def parse(log: Path) -> dict[tuple[int, str, str, str], float]:
    out = {}
    for line in log.read_text().splitlines():
        m = LINE.match(line.strip())
        if not m:
            continue
        run, contract, point, ours, rest = int(m[1]), m[2], m[3], float(m[4]), m[5].split()
        out[(run, contract, point, "cuda")] = ours
        for name, val in zip(rest[::2], rest[1::2], strict=True):
            out[(run, contract, point, name)] = float(val)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--template", required=True, help="a complete raw CSV of the same invocation")
    ap.add_argument("--runs", type=int, nargs="+", required=True)
    ap.add_argument("--check", nargs="*", default=[], help="complete raw CSVs to cross-check against the log")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    printed = parse(Path(args.log))
    for f in args.check:
        for r in read_csv(f):
            if r["mode"] != "graph":
                continue
            key = (int(r["run_index"]), r["contract"], r["point"], r["impl"])
            if key not in printed or abs(printed[key] - float(r["median_us"])) > 0.0051:
                raise SystemExit(f"{f}: {key} median {r['median_us']} disagrees with the log ({printed.get(key)})")
    template = {(r["contract"], r["point"], r["impl"]): r for r in read_csv(args.template) if r["mode"] == "graph"}
    for run in args.runs:
        rows = []
        for (contract, point, impl), t in template.items():
            key = (run, contract, point, impl)
            if key not in printed:
                raise SystemExit(f"{args.log}: no printed median for {key}")
            rows.append({**t, "run_index": run, "median_us": f"{printed[key]:.4f}", "p10_us": "", "p90_us": "",
                         "mean_us": "", "n_launches": "", "launches_per_sample": "", "timestamp_utc": "",
                         "source": "log"})
        write_csv(Path(args.out) / f"raw_{run}.csv", rows, RAW_FIELDS)
        print(f"wrote {len(rows)} rows of run {run}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

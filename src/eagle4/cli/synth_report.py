"""`eagle4 synth-report FILE... [--json] [--csv PATH]`: parse HLS synthesis reports and print them; a
summary CSV is written only where --csv names one (no command writes into the current folder unasked)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from eagle4.report import atomic
from eagle4.report.synth_report import KEYS, SynthReportError, parse_report


def cmd(args) -> int:
    results, failed = [], 0
    for f in args.files:
        try:
            results.append((f, parse_report(f)))
        except SynthReportError as e:
            print(f"eagle4 synth-report: {e}", file=sys.stderr)
            failed += 1
    if args.json:
        print(json.dumps([r for _, r in results], indent=1))
    else:
        for f, r in results:
            print(f"{f}: " + ", ".join(f"{k}={r[k]}" for k in KEYS))
    if args.csv and failed:  # a partial summary would replace a complete one: keep the previous file
        print(f"eagle4 synth-report: {failed} file(s) failed; {args.csv} left as it was", file=sys.stderr)
    elif args.csv:
        with atomic.atomic_open(Path(args.csv), "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=["file", *KEYS, "provenance"])
            w.writeheader()
            for f, r in results:
                w.writerow({"file": f, **r, "provenance": "synthesis-report"})
    return 1 if failed else 0


def register(sub) -> None:
    p = sub.add_parser("synth-report", help="parse Vitis/Vivado HLS synthesis reports")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per file")
    p.add_argument("--csv", default=None, metavar="PATH",
                   help="also write the summary CSV here (e.g. reports/synth/summary.csv); default: print only")
    p.set_defaults(func=cmd)

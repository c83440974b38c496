"""`eagle4 budget --contract contracts/default.toml`: bytes/token (unfused vs fused FPGA backend on the
contract's trace, C-sim counted + computed), the cycle budget sheet and the roofline plot."""

from __future__ import annotations

import sys
import time


def cmd(args) -> int:
    from eagle4.budget import run_budget
    from eagle4.contract import load_contract

    t0 = time.time()
    contract = load_contract(args.contract)  # the one loader: a bad contract is a one-line error, no artifact
    prog = (lambda m: print(f"  {m}", file=sys.stderr)) if args.verbose else None
    res, rows = run_budget(contract, args.reports, progress=prog)
    u, f = res.unfused, res.fused
    print(f"trace: {len(res.trace.cycles)} cycles, batches {res.trace.batches}, prefix L={res.trace.prefix_len}, "
          f"accept length {res.trace.accept_provenance} (mean {res.trace.mean_accept + 1:.3f} tokens per verify step, "
          f"the bonus token included)")
    print(f"unfused: {u.bytes_per_token / 2**20:.3f} MiB/token   fused: {f.bytes_per_token / 2**20:.3f} MiB/token   "
          f"ratio {res.ratio:.3f}x   (counted parts only: {res.ratio_p0():.3f}x)")
    for comp, fb, ub in res.top_contributors(3):
        print(f"  fused top contributor: {comp}: {fb / 2**20:.3f} MiB/token (unfused {ub / 2**20:.3f}) "
              f"[{f.prov.get(comp)}]")
    for name in ("fusion_only", "approximations_only", "effective"):
        print(f"{name:>20}: " + "  ".join(f"B={b} {res.ratio_of(name, b):.3f}x" for b in res.batches)
              + f"  pooled {res.ratio_of(name):.3f}x")
    for line in res.early_gate_lines():
        print(line)
    from eagle4.budget import onchip

    print(onchip.summary_line(res.onchip[1]))
    fpub = res.fpga.fclk_public_estimate_mhz
    for r in rows:
        if r["backend"] == "fused" and abs(float(r["fclk_mhz"]) - fpub) < 0.01:
            c = float(r["C_total"])
            print(f"{r['stage']} B={r['batch']}: {c:.3g} cycles = {c / fpub:.4g} us @{fpub:g} MHz, "
                  f"{c / res.fpga.fclk_target_mhz:.4g} us @{res.fpga.fclk_target_mhz:g} MHz [{r['provenance']}]")
    for n in res.notes:
        print(f"  note: {n}")
    print(f"wrote {args.reports}/bytes_per_token.csv, hw_counters.csv, onchip_budget.csv, budget_sheet.csv/.md, "
          f"roofline.png, fusion_design_v1.md ({time.time() - t0:.1f} s)")
    return 0


def register(sub) -> None:
    p = sub.add_parser("budget", help="bytes/token (unfused vs fused FPGA), cycle budget sheet, roofline")
    p.add_argument("--contract", default="contracts/default.toml")
    p.add_argument("--reports", default="reports", help="output folder (default: reports)")
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=cmd)

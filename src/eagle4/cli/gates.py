"""`eagle4 gates --contract contracts/default.toml [--hw cpu|fpga] [--record] [--refresh]`: evaluate the
contract's [[gates]] on the raw artifacts in reports/, print each gate, the VALID/INVALID line of the
evaluated gates and the sign-off verdict (SIGNED OFF / NOT SIGNED OFF with every reason)."""

from __future__ import annotations


def cmd(args) -> int:
    from eagle4.contract import load_contract
    from eagle4.gates import evaluate_all, summary

    contract = load_contract(args.contract)  # the one loader: a bad contract is a one-line error
    if args.refresh:
        from eagle4.budget import run_budget

        run_budget(contract, args.reports)
    res = evaluate_all(contract, args.reports, hw=args.hw, record_ledger=args.record)
    print(summary(res, contract_sha256=contract.sha256, hw=args.hw))
    return 0 if all(r.valid for r in res) else 1


def register(sub) -> None:
    p = sub.add_parser("gates", help="evaluate the contract's gates (VALID/INVALID summary)")
    p.add_argument("--contract", default="contracts/default.toml")
    p.add_argument("--reports", default="reports")
    p.add_argument("--hw", default="cpu", choices=("cpu", "cuda", "fpga"))
    p.add_argument("--record", action="store_true", help="append the results to reports/gate_ledger.csv")
    p.add_argument("--refresh", action="store_true", help="re-run `eagle4 budget` first (C-sim counts)")
    p.set_defaults(func=cmd)

"""`eagle4 gates --contract contracts/default.toml [--hw cpu|fpga] [--record] [--refresh]`: evaluate the
contract's [[gates]] on the raw artifacts in reports/, print each gate, the VALID/INVALID line of the
evaluated gates and the sign-off verdict (SIGNED OFF / NOT SIGNED OFF with every reason).

An engine contract (``[engine]``, e.g. ``contracts/examples/eagle3-engine.toml``) is judged on the
results a GPU engine wrote: ``eagle4 gates --contract c.toml --results DIR [--stage micro|full]
[--record]`` (``docs/engine_gates.md``). Exit 0 when every evaluated gate is valid, 1 otherwise,
2 for a malformed contract, result file, log or dump (one line naming the file and field)."""

from __future__ import annotations


def cmd(args) -> int:
    from eagle4.contract import load_contract
    from eagle4.gates import evaluate_all, summary

    contract = load_contract(args.contract)  # the one loader: a bad contract is a one-line error
    engine = contract.kind == "engine"
    if engine and args.refresh:
        raise ValueError("--refresh re-runs the FPGA byte budget; an engine contract reads --results instead")
    if not engine and args.results:
        raise ValueError(f"--results is for engine contracts ([engine]); {args.contract} has none")
    if args.refresh:
        from eagle4.budget import run_budget

        run_budget(contract, args.reports)
    res = evaluate_all(contract, args.reports, hw=args.hw, record_ledger=args.record, results_dir=args.results,
                       stage=args.stage)
    print(summary(res, contract_sha256=contract.sha256, hw=args.hw, results_dir=args.results if engine else None))
    return 0 if all(r.valid for r in res) else 1


def register(sub) -> None:
    p = sub.add_parser("gates", help="evaluate the contract's gates (VALID/INVALID summary)")
    p.add_argument("--contract", default="contracts/default.toml")
    p.add_argument("--reports", default="reports", help="where the gate ledger (gate_ledger.csv) lives")
    p.add_argument("--hw", default="cpu", choices=("cpu", "cuda", "fpga"))
    p.add_argument("--results", default=None, help="engine contracts: the folder of engine results, logs and dumps")
    p.add_argument("--stage", default=None, choices=("micro", "full"),
                   help="evaluate one stage's gates (under 'full', micro gates stand on the ledger)")
    p.add_argument("--record", action="store_true", help="append the results to the gate ledger")
    p.add_argument("--refresh", action="store_true", help="re-run `eagle4 budget` first (C-sim counts)")
    p.set_defaults(func=cmd)

"""``eagle4 workload``: contract rendering, local end-to-end runs, the OpenAI-compatible test server,
the HTTP benchmark client and the FPGA-vs-H100 comparison.

    eagle4 workload contract --contract contracts/default.toml --out reports/benchmark_contract.md
    eagle4 workload run --contract contracts/default.toml --backend ref --out reports/
    eagle4 workload serve --contract contracts/default.toml --port 8000
    eagle4 workload http --kind sglang --url http://127.0.0.1:30000 --contract contracts/default.toml --out reports/
    eagle4 workload compare-fpga --contract contracts/default.toml --out reports/
"""

from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("workload", help="benchmark contract, end-to-end speculative decoding runs")
    ws = p.add_subparsers(dest="workload_command", required=True, metavar="SUBCOMMAND")

    c = ws.add_parser("contract", help="validate a contract and render it to markdown")
    c.add_argument("--contract", default="contracts/default.toml")
    c.add_argument("--out", default="reports/benchmark_contract.md")
    c.set_defaults(func=_contract)

    r = ws.add_parser("run", help="run the contract's operating points on the engine (run mode: the contract's batch_profile.mode)")
    r.add_argument("--contract", default="contracts/default.toml")
    r.add_argument("--backend", default="ref", help="kernel backend: ref, cuda, csim (small cases)")
    r.add_argument("--device", default="cpu", help="model (and ref-kernel) device: cpu or cuda")
    r.add_argument("--out", default="reports/")
    r.add_argument("--points", default=None, help="comma-separated operating point names (default: all)")
    r.add_argument("--runs", type=int, default=None, help="measured runs per point (default: the contract's, >= 5)")
    r.add_argument("--prefix", default="e2e", help="output file prefix (e2e -> e2e_raw.csv, e2e_summary.md)")
    r.add_argument("--threads", type=int, default=None, help="torch CPU threads per run process (default 1 on cpu)")
    r.add_argument("--in-process", action="store_true", help="run in this process (runs are then not independent)")
    r.add_argument("--min-duration", type=float, default=None,
                   help="measured seconds per run, at least the contract's runs.min_duration_s (never shorter)")
    r.set_defaults(func=_run)

    s = ws.add_parser("serve", help="serve the engine as a vLLM- or sglang-style streaming server (tests, demos)")
    s.add_argument("--contract", default="contracts/default.toml")
    s.add_argument("--backend", default="ref")
    s.add_argument("--device", default="cpu")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--dialect", choices=["vllm", "sglang"], default="vllm")
    s.set_defaults(func=_serve)

    h = ws.add_parser("http", help="benchmark a live sglang or vLLM server on the contract's workload")
    h.add_argument("--url", required=True)
    h.add_argument("--kind", choices=["sglang", "vllm"], required=True,
                   help="the server's dialect: where tokens, acceptance and the speculative config are read")
    h.add_argument("--contract", default="contracts/default.toml")
    h.add_argument("--model", default=None, help="model id to request (default: the first of /v1/models)")
    h.add_argument("--points", default=None)
    h.add_argument("--runs", type=int, default=None)
    h.add_argument("--out", default="reports/")
    h.add_argument("--prefix", default="http", help="output file prefix (http -> http_raw.csv, http_runs.csv)")
    h.add_argument("--timeout", type=float, default=None,
                   help="seconds one streamed request may take (default: the contract's [http] request_timeout_s)")
    h.add_argument("--connect-timeout", type=float, default=None,
                   help="seconds to connect (default: the contract's [http] connect_timeout_s)")
    h.set_defaults(func=_http)

    f = ws.add_parser("compare-fpga", help="FPGA (csim correctness + budget model) against the H100 baseline")
    f.add_argument("--contract", default="contracts/default.toml")
    f.add_argument("--h100", default=None, help="the GPU baseline's raw e2e rows (default: h100_baseline_raw.csv of the "
                   "record of the contract's [baseline] card, reports/cards/<card>/<contract>/)")
    f.add_argument("--fpga-measured", default=None, help="CSV of measured FPGA e2e rows (provenance measured)")
    f.add_argument("--out", default="reports/")
    f.add_argument("--budget-sheet", default=None, help="budget_sheet.csv of eagle4.budget (default: OUT/budget_sheet.csv)")
    f.add_argument("--points", default=None, help="operating points (default: every point of the H100 CSV)")
    f.add_argument("--no-csim", action="store_true", help="skip the csim correctness leg (then no sign-off)")
    f.add_argument("--record", default=None, help="the GPU baseline record the system model reads (its per-point "
                   "e2e_points.csv; default: reports/cards/<card>/<contract>/ of the contract's [baseline] card)")
    f.set_defaults(func=_compare)


def _contract(a) -> int:
    from eagle4.contract import load_contract, write_markdown

    c = load_contract(a.contract)
    p = write_markdown(c, a.out)
    print(f"contract {c.contract.name} sha256 {c.sha256} -> {p}")
    return 0


def _points(s):
    return [x for x in s.split(",") if x] if s else None


def _run(a) -> int:
    from eagle4.workload import run_contract

    res = run_contract(a.contract, a.backend, a.out, points=_points(a.points), runs=a.runs, device=a.device,
                       isolate=not a.in_process, prefix=a.prefix, threads=a.threads, min_duration_s=a.min_duration)
    if res.get("mode", "static") != "static":  # a serving mode (the contract's batch_profile.mode)
        for s in res["stats"]:
            print(f"{s['point']}: {s['tokens_per_s_mean']:.1f} tok/s (CoV {s['tokens_per_s_cov']:.2%}), "
                  f"step {s['step_s_median'] * 1e3:.2f} ms, {s['status']}{': ' + s['why'] if s['why'] else ''}")
        print("wrote " + ", ".join(str(p) for p in res["paths"].values()))
        return 0 if all(s["status"] == "VALID" for s in res["stats"]) else 1
    for s in res["stats"]:
        print(f"{s['point']}: {s['tokens_per_s_mean']:.1f} tok/s (CoV {s['tokens_per_s_cov']:.2%}), "
              f"TTFT p50 {s['ttft_p50_s'] * 1e3:.1f} ms, ITL p50 {s['itl_p50_s'] * 1e3:.2f} ms "
              f"p99 {s['itl_p99_s'] * 1e3:.2f} ms, acceptance {s['acceptance_length_mean']:.3f}")
    print("wrote " + ", ".join(str(p) for p in res["paths"].values()))
    from eagle4.validity import BELOW, run_rule_summary

    print(run_rule_summary(res["stats"]))
    bad = [s for s in res["stats"] if not s["cov_ok"]]
    for s in bad:
        print(f"{BELOW}: {s['point']}: CoV of tokens/s {s['tokens_per_s_cov']:.2%} exceeds the contract's limit "
              "(noisy machine or too few runs); the rows are written but do not count as a baseline", file=sys.stderr)
    return 1 if bad else 0


def _serve(a) -> int:
    from eagle4.contract import load_contract
    from eagle4.workload.server import serve_forever

    serve_forever(load_contract(a.contract), a.backend, host=a.host, port=a.port, device=a.device, dialect=a.dialect)
    return 0


def _http(a) -> int:
    from eagle4.contract import load_contract
    from eagle4.workload.http_client import HttpBenchError, contract_timeouts, run_http_contract

    c = load_contract(a.contract, require_models=False)  # the server holds the models
    try:
        res = run_http_contract(c, a.url, a.out, kind=a.kind, model=a.model, points=_points(a.points), runs=a.runs,
                                prefix=a.prefix, timeouts=contract_timeouts(c, a.timeout, a.connect_timeout))
    except HttpBenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("wrote " + ", ".join(str(p) for p in res["paths"].values()))
    if res["mismatches"]:
        print("NOT a measurement of the contract (no contract hash stamped): " + "; ".join(res["mismatches"]),
              file=sys.stderr)
        return 1
    return 0


def _compare(a) -> int:
    from eagle4.contract import load_contract
    from eagle4.perf import records
    from eagle4.workload import offload_model
    from eagle4.workload.compare_fpga import compare

    contract = load_contract(a.contract)
    # the system step model of the offload (GPU + FPGA against the GPU alone): a plan, reported beside the legs
    try:
        sysres = offload_model.write(contract, a.out, record=a.record, budget_sheet=a.budget_sheet,
                                     points=_points(a.points))
    except offload_model.OffloadRefused as e:
        print(f"system model: refused: {e}")
    else:
        for line in offload_model.summary_lines(sysres["models"]):
            print(line)
        print("wrote " + ", ".join(str(p) for p in sysres["paths"].values()))
    if contract.model.load == "dummy":  # no csim leg (no prompts, no local pair): the system model is the report
        print(f"{a.contract}: model.load = 'dummy': no csim or kernel leg; the system model above is the comparison")
        return 0
    h100 = a.h100 or records.baseline_file(contract, "h100_baseline_raw.csv")
    res = compare(contract, h100, a.out, fpga_measured=a.fpga_measured, points=_points(a.points),
                  budget_sheet=a.budget_sheet, run_csim=not a.no_csim)
    print(res["verdict"])
    print("wrote " + ", ".join(str(p) for p in res["paths"].values()))
    return 0


if __name__ == "__main__":  # pragma: no cover
    from eagle4.cli import main

    sys.exit(main(["workload", *sys.argv[1:]]))

"""`eagle4 signoff`: the main job. Runs the contract end to end on the hardware present, writes
the artifact pack to reports/ and prints one verdict: SIGNED OFF / NOT SIGNED OFF with every reason
(:func:`eagle4.gates.decide`; report-only misses are shown as misses).

Steps (each reported; a step that cannot run here says why, it is never silently skipped):
1. contract: load, validate, render reports/benchmark_contract.md;
2. parity: `pytest -m parity` on every backend this --hw allows (writes the parity matrix);
3. workload: the end-to-end speculative-decoding run on the contract's operating points;
4. budget: bytes/token of the unfused and fused FPGA dataflow from C-sim counters, budget sheet;
5. gates: every [[gates]] entry of the contract, recorded in the gate ledger;
6. env manifest.
Every step writes into a staging folder (runs/signoff-<UTC time>-<pid>.staging, a copy of the committed
pack the gates read); nothing is published until every step finished. The default publishes the pack
runs/signoff-<UTC time>-<pid>/ (git-ignored): the files this run wrote plus index.json naming each file
and the verdict. `--reports DIR` (e.g. `--reports reports`, as `eagle4 replay` does) publishes the
written files into DIR instead, each by a rename. SIGINT/SIGTERM stop the parity child's process group,
publish nothing (DIR and earlier packs stay byte-identical) and keep the staging folder as
runs/signoff-...interrupted/ with an INTERRUPTED note; exit 130 (SIGINT) or 143 (SIGTERM).
Exit codes (docs/cli.md): 0 SIGNED OFF, 1 NOT SIGNED OFF (a crashed step included), 2 usage or bad input
(a malformed contract: one line, no pack; --hw=fpga without a board: no step runs the FPGA's part elsewhere).
--hw=fpga needs pyxrt, a device and the xclbin (--xclbin / EAGLE4_XCLBIN / [fpga] xclbin).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from eagle4.proc import run_bounded
from eagle4.report import atomic

STEPS = ("contract", "parity", "workload", "budget", "gates")
# The whole parity suite takes ~20 min on a loaded 2-core runner (g++ builds included): 3 h leaves a slow CI room.
PARITY_TIMEOUT_S = 3 * 3600.0


@dataclass
class StepResult:
    name: str
    status: str  # OK, FAILED, CRASHED, NOT RUN
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def _backend_for(hw: str) -> str:
    return {"cpu": "ref", "cuda": "cuda", "fpga": "xrt"}[hw]


_PERCENT = re.compile(r"\[\s*(\d+)%\]\s*$")


def _parity_progress(line: str) -> None:
    """A line per pytest progress line (each ends in ``[ NN%]``): the step is not silent for minutes."""
    m = _PERCENT.search(line)
    if m:
        fails = line[: m.start()].count("F") + line[: m.start()].count("E")
        print(f"  parity: {m.group(1)}% of the tests done" + (f" ({fails} failed on this line)" if fails else ""),
              flush=True)


def _parity(args, reports: Path) -> StepResult:
    cmd = [sys.executable, "-m", "pytest", "-m", "parity", f"--hw={args.hw}", f"--reports-dir={reports}",
           "-q", "-p", "no:cacheprovider", "-n", str(args.workers)]
    if args.workers == 0:
        cmd[-2:] = ["-p", "no:xdist"]
    try:
        out = run_bounded(cmd, args.parity_timeout, on_line=_parity_progress)
    except subprocess.TimeoutExpired as e:
        tail = [ln for ln in (e.output or "").splitlines() if ln.strip()][-3:]
        return StepResult("parity", "FAILED", notes=[
            f"pytest -m parity --hw={args.hw} ran past --parity-timeout {args.parity_timeout:g} s and was stopped "
            "(raise it for a slow machine)", *tail])
    tail = [ln for ln in out.stdout.splitlines() if ln.strip()][-3:]
    status = "OK" if out.returncode == 0 else "FAILED"
    notes = [f"pytest -m parity --hw={args.hw}: exit {out.returncode}", *tail,
             f"matrix: {reports / 'p0_parity_matrix.md'}"]
    return StepResult("parity", status, notes=notes)


def _board_missing(args, contract) -> str | None:
    """--hw=fpga: None when pyxrt, the device and the xclbin are here (EAGLE4_XCLBIN is set for every
    process the run starts), else what is missing. Nothing falls back to another backend."""
    from eagle4.backends.xrt import board_missing, resolve_xclbin

    xclbin = resolve_xclbin(args.xclbin, contract)
    why = board_missing(xclbin)
    if why is None:
        os.environ["EAGLE4_XCLBIN"] = str(Path(xclbin).resolve())
    return why


def _workload(args, contract, reports: Path) -> StepResult:
    if args.hw == "fpga":  # the kernels on the board; rows, kernel latency and throughput.csv
        from eagle4.workload.board import run_board_signoff

        res = run_board_signoff(contract, reports, xclbin=os.environ["EAGLE4_XCLBIN"], bench_points=args.bench_points,
                                log=lambda m: print(f"  workload: {m}"))
        return StepResult("workload", "OK", notes=res["notes"])
    from eagle4.workload.runner import run_contract

    device = "cuda" if args.hw == "cuda" else "cpu"
    res = run_contract(contract, backend=_backend_for(args.hw), out_dir=reports,
                       device=device, log=lambda m: print(f"  workload: {m}"))
    from eagle4.validity import run_rule_summary

    stats = res.get("stats", [])
    # the first note says whether every point met the run rule: a noisy point is named, never an OK alone
    notes = [run_rule_summary(stats)] if stats else []
    if notes:
        print(f"  workload: {notes[0]}")
    notes += [f"{k}: {v}" for k, v in res.get("paths", {}).items()]
    for s in stats[:6]:
        notes.append(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in s.items() if not isinstance(v, (list, dict)))[:300])
    return StepResult("workload", "OK", notes=notes)


def _budget(args, contract, reports: Path) -> StepResult:
    from eagle4.budget import run_budget

    res, rows = run_budget(contract, reports, progress=lambda m: print(f"  budget: {m}"))
    notes = [f"wrote {reports / f}" for f in ("bytes_per_token.csv", "budget_sheet.md", "roofline.png")]
    summary = getattr(res, "summary_lines", None)
    if callable(summary):
        notes += list(summary())
    notes += _system_model(contract, reports)
    return StepResult("budget", "OK", notes=notes)


def _system_model(contract, reports: Path) -> list[str]:
    """The offload's system step model (eagle4.workload.offload_model) on the budget sheet just written and the
    record of the contract's [baseline] card: a plan the verdict never reads (only measured parts sign off)."""
    from eagle4.workload import offload_model

    try:
        res = offload_model.write(contract, reports, budget_sheet=reports / "budget_sheet.csv")
    except offload_model.OffloadRefused as e:
        return [f"system model: refused: {e}"]
    return [offload_model.one_line(res["models"], res["paths"]["summary"]), *offload_model.summary_lines(res["models"])]


def _gates(args, contract, reports: Path):
    from eagle4.gates import evaluate_all, summary

    results = evaluate_all(contract, reports, hw=args.hw, record_ledger=True)
    text = summary(results, contract_sha256=contract.sha256, hw=args.hw, verdict=False)  # one verdict: below
    return StepResult("gates", "OK", notes=[]), text, results


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: the run stops, its children with it, and nothing is published."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum, _frame):
    raise Interrupted(signum)


def cmd(args) -> int:
    from eagle4.contract import load_contract
    from eagle4.report import working_copy as wc

    # a malformed contract is bad input: one line, exit 2, no pack (the cli prints the ValueError)
    if load_contract(args.contract).kind == "engine":
        raise ValueError(f"{args.contract} is an engine contract ([engine]): its gates read the engine's results; "
                         "run `eagle4 gates --contract ... --results DIR` (docs/engine_gates.md)")
    unknown = set(args.skip or []) - set(STEPS)
    if unknown:
        raise ValueError(f"--skip: unknown step(s) {sorted(unknown)}; steps: {', '.join(STEPS)}")
    target = Path(args.reports).resolve() if args.reports is not None else None
    if target is not None and target.exists() and not target.is_dir():
        raise ValueError(f"--reports {args.reports}: exists and is not a folder")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    name = f"signoff-{stamp}-{os.getpid()}"
    runs = Path("runs").resolve()
    runs.mkdir(parents=True, exist_ok=True)
    staging = runs / f"{name}.staging"
    committed = target if target is not None else Path("reports")
    old = {s: signal.signal(s, _raise_interrupted) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        wc.working_copy(committed, staging)
        before = wc.snapshot(staging)
        try:
            rc, word = _run(args, staging)
        except Interrupted as e:
            dest = wc.mark_interrupted(staging, before, f"{e} during the run")
            print(f"eagle4 signoff: interrupted ({e}); nothing published; partial output kept in {dest}",
                  file=sys.stderr)
            return 128 + e.signum
        if target is None:
            pack = wc.publish_pack(staging, runs / name, before, {
                "command": "eagle4 signoff", "contract": str(args.contract), "hw": args.hw,
                "verdict": word, "exit_code": rc})
            print(f"artifact pack: {pack} (index.json names each file)")
        else:
            files = wc.publish_into(staging, target, before)
            print(f"artifact pack: published {len(files)} file(s) into {target}")
        return rc
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _run(args, reports: Path) -> tuple[int, str]:
    """Every step on the staging folder ``reports``; (exit code, verdict word)."""
    from rich.console import Console
    from rich.table import Table

    from eagle4.contract import load_contract
    from eagle4.contract.render import write_markdown
    from eagle4.report import env_manifest

    console = Console()
    skip = set(args.skip or [])
    results: list[StepResult] = []
    contract = None
    gate_text, gate_results = "", None

    def step(name, fn):
        if name in skip:
            results.append(StepResult(name, "NOT RUN", notes=["skipped with --skip (the verdict cannot be VALID)"]))
            return None
        console.rule(f"[bold]{name}")
        t0 = time.time()
        try:
            r = fn()
        except Exception as e:  # a crashed step is reported with its cause, and the run goes on
            r = StepResult(name, "CRASHED", notes=[f"{type(e).__name__}: {e}",
                                                   *traceback.format_exc().splitlines()[-4:]])
        if isinstance(r, tuple):
            r, *rest = r
        else:
            rest = []
        r.seconds = time.time() - t0
        results.append(r)
        return rest

    def _contract():
        nonlocal contract
        contract = load_contract(args.contract)
        path = write_markdown(contract, reports / "benchmark_contract.md")
        return StepResult("contract", "OK", notes=[f"{args.contract} sha256 {contract.sha256[:16]}", f"rendered {path}"])

    step("contract", _contract)
    if contract is not None and args.hw == "fpga":
        why = _board_missing(args, contract)
        if why:  # fail fast: no step may run the FPGA's part on anything else
            console.print(f"[red]eagle4 signoff --hw=fpga: {why}", highlight=False)
            console.print("[bold]VERDICT: NOT SIGNED OFF", highlight=False)
            atomic.write_text(reports / "signoff_summary.md", f"# eagle4 signoff --hw=fpga ({args.contract})\n\n"
                              f"**VERDICT: NOT SIGNED OFF**\n\n* {why}\n")
            return 2, "NOT SIGNED OFF"
    if contract is None:
        console.print("[red]the contract did not load; nothing else can run")
    else:
        step("parity", lambda: _parity(args, reports))
        step("workload", lambda: _workload(args, contract, reports))
        step("budget", lambda: _budget(args, contract, reports))
        rest = step("gates", lambda: _gates(args, contract, reports))
        if rest:
            gate_text, gate_results = rest
    manifest = {"signoff_hw": args.hw, "contract": str(args.contract)}
    if os.environ.get("EAGLE4_XCLBIN"):  # an FPGA run: record the board the xrt backend opened
        from eagle4.backends.xrt import board_fields

        manifest.update(board_fields())
    env_manifest.write(reports / "env_manifest.txt", manifest)

    table = Table(title=f"eagle4 signoff --hw={args.hw}: {args.contract}")
    for col in ("step", "status", "seconds", "notes"):
        table.add_column(col)
    for r in results:
        color = {"OK": "green", "FAILED": "red", "CRASHED": "red", "NOT RUN": "yellow"}[r.status]
        table.add_row(r.name, f"[{color}]{r.status}", f"{r.seconds:.1f}", "\n".join(r.notes[:8]))
    console.print(table)
    if gate_text:
        console.print(gate_text, markup=False, highlight=False)
    from eagle4.gates import decide

    step_reasons = [f"step {r.name}: {r.status}" for r in results if r.status != "OK"]
    step_reasons += [f"step {s}: never reached" for s in STEPS if s not in {r.name for r in results}]
    if gate_results is None:
        step_reasons.append("gates not evaluated")
    v = decide(gate_results or [], hw=args.hw, extra_reasons=step_reasons)
    console.print(f"[bold]VERDICT: {v.word}", highlight=False)  # the one verdict (issue 10.6)
    for line in v.lines()[1:]:
        console.print(line, markup=False, highlight=False)
    # the summary is part of the artifact pack, not only of the console
    lines = [f"# eagle4 signoff --hw={args.hw} ({args.contract})", "",
             "| step | status | seconds | notes |", "|---|---|---|---|"]
    lines += [f"| {r.name} | {r.status} | {r.seconds:.1f} | {'<br>'.join(n.replace('|', '/') for n in r.notes[:8])} |"
              for r in results]
    lines += ["", "```", gate_text or "(no gate evaluated)", "```", "", f"**VERDICT: {v.word}**", ""]
    lines += [f"* {x}" for x in v.reasons] + [f"* report-only miss: {x}" for x in v.report_misses]
    atomic.write_text(reports / "signoff_summary.md", "\n".join(lines) + "\n")
    return (0 if v.signed_off else 1), v.word


def register(sub) -> None:
    p = sub.add_parser("signoff", help="the main job: contract end to end, artifact pack, one verdict (SIGNED OFF / NOT SIGNED OFF)")
    p.add_argument("--contract", default="contracts/default.toml")
    p.add_argument("--hw", choices=("cpu", "cuda", "fpga"), default="cpu")
    p.add_argument("--reports", default=None,
                   help="publish the files this run wrote into this folder (e.g. reports) once every step "
                        "finished (default: a pack runs/signoff-<UTC time>-<pid>/ with index.json)")
    p.add_argument("--workers", type=int, default=2, help="pytest-xdist workers for the parity step (0: none)")
    p.add_argument("--parity-timeout", type=float, default=PARITY_TIMEOUT_S, metavar="SECONDS",
                   help=f"stop the parity step (pytest and its workers) after this long (default {PARITY_TIMEOUT_S:g})")
    p.add_argument("--skip", nargs="*", metavar="STEP", help=f"steps to leave out: {', '.join(STEPS)}")
    p.add_argument("--strict", action="store_true", help=argparse.SUPPRESS)  # kept for old scripts: exit 1 is the default
    p.add_argument("--xclbin", default=None,
                   help="--hw=fpga: the xclbin to load (else EAGLE4_XCLBIN or the contract's [fpga] xclbin)")
    p.add_argument("--bench-points", default="all", choices=("all", "B1", "smoke"),
                   help="--hw=fpga: operating points of the per-call kernel latency bench")
    p.set_defaults(func=cmd)

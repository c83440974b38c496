"""Gate evaluation, the gate ledger and the VALID/INVALID summary of the evaluated gates.

Provenance: a metric carries every provenance of its rows; under ``--hw=fpga`` (sign-off) a gate
accepts it only when the *weakest* is in ``signoff_provenance``. Development modes (cpu, cuda)
judge the rows the claim is about (the byte ratio's counted ports) against ``provenance`` and say
what the weakest is. Whether the run signs off is decided by :mod:`eagle4.gates.verdict`.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import operator
import os
from dataclasses import dataclass, field
from pathlib import Path

from eagle4.contract import GateSpec, as_contract, contract_sha256, load_gates
from eagle4.gates.engine import EngineCtx, evaluate_engine_gate
from eagle4.gates.metrics import METRICS, Ctx, MissingMetric, read_rows, throughput_ratio
from eagle4.gates.verdict import decide
from eagle4.report import atomic
from eagle4.validity import RunRule
from eagle4.vcs import git_commit

LEDGER = "gate_ledger.csv"
LEDGER_COLUMNS = ("timestamp", "run_id", "contract_sha256", "gate", "status", "value", "threshold", "op",
                  "provenance", "hw", "commit", "evidence")
_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq}


@dataclass
class GateResult:
    name: str
    metric: str
    kind: str  # "gate" | "report"
    status: str  # PASS | FAIL | INVALID | BLOCKED | REPORT | DESELECTED | SKIPPED (other --stage)
    value: float | None
    threshold: float | None  # None: a gate of log invariants / parity only
    op: str
    provenance: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # facts that do not change the status (weakest provenance)

    @property
    def valid(self) -> bool:
        """VALID: every condition of the gate holds (report-only gates are always valid)."""
        return self.status in ("PASS", "REPORT", "DESELECTED", "SKIPPED")

    @property
    def passed(self) -> bool:
        return self.status == "PASS"

    def line(self, shared: dict[str, str] | None = None) -> str:
        """The gate's line and its reasons; a reason in ``shared`` is named by its tag (printed once by
        :func:`summary`)."""
        v = "-" if self.value is None else f"{self.value:.4g}"
        what = f"{self.metric} = {v} (needs {self.op} {self.threshold:g})" if self.threshold is not None else self.metric
        head = f"{self.name:34s} {('VALID' if self.valid else 'INVALID'):8s} {self.status:10s} {what} " \
               f"[{','.join(self.provenance) or '-'}]"
        shown = [f"see {shared[r]}" if shared and r in shared else r for r in self.reasons]
        return head + "".join(f"\n    - {r}" for r in shown + self.notes)

    @property
    def report_miss(self) -> bool:
        """A report-only gate whose value misses its threshold (shown as a miss, never a pass)."""
        return self.status == "REPORT" and bool(self.details.get("report_miss"))


def ledger_rows(reports_dir) -> list[dict]:
    p = Path(reports_dir) / LEDGER
    return read_rows(p) if p.is_file() else []


def consecutive_green(reports_dir, gate: str, contract_sha256: str, hw: str | None = None) -> int:
    """How many of the most recent ledger entries of ``gate`` (same contract, and same --hw mode when
    given) are PASS, in a row. A PASS that names its evidence (the hash of the files it was judged
    on) counts once per distinct evidence: re-evaluating the same results is not another green run."""
    n = 0
    seen: set[str] = set()
    if not contract_sha256:
        return 0  # a row without a contract hash is never evidence
    for r in reversed(ledger_rows(reports_dir)):
        if r.get("gate") != gate or r.get("contract_sha256") != contract_sha256 or (hw and r.get("hw") != hw):
            continue
        if r["status"] != "PASS":
            break
        ev = r.get("evidence") or ""
        if ev and ev in seen:
            continue
        seen.add(ev)
        n += 1
    return n


def _upgrade_ledger(p: Path) -> None:
    """Rewrite a ledger written with fewer columns under today's header (atomically)."""
    with open(p, newline="") as fh:
        r = csv.DictReader(fh)
        if tuple(r.fieldnames or ()) == LEDGER_COLUMNS:
            return
        rows = list(r)
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=LEDGER_COLUMNS, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    atomic.write_text(p, out.getvalue())


def record(results: list[GateResult], reports_dir, contract_sha256: str, hw: str, root: Path) -> Path:
    p = Path(reports_dir) / LEDGER
    if p.is_file():
        _upgrade_ledger(p)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    run_id = f"{now}-{os.getpid()}"
    commit = git_commit(root)
    head, body = io.StringIO(), io.StringIO()
    csv.DictWriter(head, fieldnames=LEDGER_COLUMNS).writeheader()
    w = csv.DictWriter(body, fieldnames=LEDGER_COLUMNS)
    for r in results:
        if r.status in ("DESELECTED", "SKIPPED") or r.details.get("from_ledger"):
            continue  # not evaluated in this run: nothing to record
        w.writerow({"timestamp": now, "run_id": run_id, "contract_sha256": contract_sha256, "gate": r.name,
                    "status": r.status, "value": "" if r.value is None else repr(r.value),
                    "threshold": "" if r.threshold is None else r.threshold, "op": r.op,
                    "provenance": "+".join(r.provenance), "hw": hw, "commit": commit,
                    "evidence": r.details.get("evidence", "")})
    # one atomic replace: an interrupted write leaves the old ledger; a cut-off last line stays one bad row
    atomic.append_text(p, body.getvalue(), header=head.getvalue())
    return p


def effective_after(g: GateSpec, gates: list[GateSpec]) -> list[str]:
    """The gates ``g`` waits for: its ``after``; a full-stage gate that names none waits for every
    micro-stage gate of the contract (micro before full)."""
    if g.after or g.stage != "full":
        return list(g.after)
    return [x.name for x in gates if x.stage == "micro" and x.kind == "gate"]


def _check_name(g: GateSpec) -> str:
    if g.metric and g.scenario and g.comparison == "ratio":  # an engine ratio: say which two figures
        return f"{g.metric}[{g.scenario}/{g.baseline}]"
    return g.metric or "+".join(k for k in ("logs", "parity") if getattr(g, k) is not None)


def evaluate_gate(g: GateSpec, ctx: Ctx, *, after: list[str] | None = None) -> GateResult:
    res = GateResult(g.name, _check_name(g), g.kind, "INVALID", None, g.threshold, g.op)
    if ctx.engine is None and ctx.mode not in g.hw:  # engine results were measured elsewhere: any mode
        res.status = "DESELECTED"
        res.reasons.append(f"evaluated only under --hw={'/'.join(g.hw)}")
        return res
    # ordering rule: prerequisites green N consecutive times in the ledger
    hw = None if ctx.engine is not None else ctx.mode
    counts = {a: consecutive_green(ctx.reports_dir, a, ctx.contract_sha256, hw) for a in (g.after if after is None else after)}
    short = {a: n for a, n in counts.items() if n < g.after_consecutive}
    if short:
        mode = "" if hw is None else f" (--hw={hw})"
        why = (f"{g.stage}-stage gate waits until {', '.join(short)} passed {g.after_consecutive} "
               f"consecutive times{mode} in {ctx.reports_dir / LEDGER}; the ledger has "
               + ", ".join(f"{a}: {n}" for a, n in short.items()))
        if ctx.engine is not None:  # the figure is already measured: show it, and why it cannot count yet
            res = _evaluate_engine(g, ctx, res)
            fig = "its checks" if res.value is None else f"measured {res.value:.4g}"
            res.notes = [f"{fig}: {res.status} on its own, not counted while blocked"] + \
                [f"on its own: {r}" for r in res.reasons] + res.notes
        res.status = "BLOCKED"
        res.reasons = [why]
        return res
    if ctx.engine is not None:
        return _evaluate_engine(g, ctx, res)
    # raw artifacts with provenance
    for rel in g.artifacts:
        p = ctx.reports_dir / rel[len("reports/"):] if rel.startswith("reports/") else ctx.root / rel
        if not p.is_file():
            res.reasons.append(f"missing artifact {rel}: no metric claims without raw CSV attached")
        elif p.suffix == ".csv":
            rows = read_rows(p)
            if not rows or "provenance" not in rows[0]:
                res.reasons.append(f"artifact {rel} lacks provenance (a 'provenance' column on every row)")
    fn = METRICS.get(g.metric)
    if fn is None:
        res.reasons.append(f"unknown metric {g.metric!r}; known: {sorted(METRICS)}")
        return res
    try:
        if g.comparison == "ratio":
            if g.metric != "throughput":
                raise MissingMetric(f"metric {g.metric} has no named runs; a ratio needs run and baseline")
            m = throughput_ratio(g, ctx)  # per operating point: pooling must not hide a miss
        else:
            m = fn(g, ctx)
    except MissingMetric as e:
        res.reasons.insert(0, f"missing: {e}")
        return res
    res.value, res.provenance, res.details = m.value, m.provenance, dict(m.details)
    res.reasons += m.invalid
    accepted = g.accepted(ctx.mode)
    if ctx.mode == "fpga":  # sign-off: the weakest provenance of every row the metric was built from
        judged = [m.weakest] if m.weakest else []
    else:
        judged = m.provenance if m.evidence is None else m.evidence
    bad = [p for p in judged if p not in accepted]
    if bad or not judged:
        what = f"weakest provenance {m.weakest!r} of {m.provenance}" if ctx.mode == "fpga" else f"provenance {judged}"
        res.reasons.append(f"{what} not accepted under --hw={ctx.mode} (accepts {accepted})"
                           + ("; measured FPGA board numbers are required: run the xrt backend on a V80 and "
                              "write its counters with provenance 'measured'" if ctx.mode == "fpga" else ""))
    elif ctx.mode != "fpga" and m.weakest not in accepted:
        share = m.details.get("computed_share_of_fused")
        res.notes.append(f"weakest provenance is {m.weakest!r}"
                         + (f" ({share:.0%} of the fused bytes/token)" if share is not None and m.weakest == "computed"
                            else "") + f"; sign-off (--hw=fpga) judges the weakest against {g.accepted('fpga')}")
    if res.reasons:
        return res
    ok = _OPS[g.op](m.value, g.threshold)
    if g.kind == "report":
        res.status = "REPORT"
        res.details["report_miss"] = not ok
        msg = f"report only: {m.value:.4g} {'meets' if ok else 'misses'} {g.op} {g.threshold:g}"
        if g.report_band:
            lo, hi = g.report_band
            where = "below" if m.value < lo else ("within" if m.value <= hi else "above")
            msg += f"; {where} the {lo:g}-{hi:g} band"
        res.reasons.append(msg)
        return res
    res.status = "PASS" if ok else "FAIL"
    if not ok:
        res.reasons.append(f"{g.metric} = {m.value:.4g} does not satisfy {g.op} {g.threshold:g}")
        top = m.details.get("top2")
        if top:
            d = m.details
            res.reasons.append("figures ({} ratio at batch {}, {}): unfused {:.3f} MiB/token, fused {:.3f} MiB/token; "
                               "per point {}".format(d.get("ratio", "effective"), d.get("batch", "all"),
                                                     d.get("point", "pooled"), d["unfused_bytes_per_token"] / 2**20,
                                                     d["fused_bytes_per_token"] / 2**20,
                                                     {b: round(v, 3) for b, v in d.get("per_point", {}).items()}))
            for comp, fb, ub, where in top:
                res.reasons.append(f"top contributor: {comp}: fused {fb / 2**20:.3f} MiB/token (unfused "
                                   f"{ub / 2**20:.3f}) [{where}]")
    return res


def _evaluate_engine(g: GateSpec, ctx: Ctx, res: GateResult) -> GateResult:
    """An engine gate: metric figure of the imported rows, log invariants, stage parity."""
    e = ctx.engine
    logs = e.log_specs[g.logs] if isinstance(g.logs, str) else g.logs
    out = evaluate_engine_gate(g, e, logs)
    res.value = out.value
    res.details.update(out.details, evidence=out.evidence)
    res.provenance = ["measured"] if out.files else []  # engine rows, logs and dumps come from runs
    if "measured" not in g.provenance:
        res.reasons.append(f"engine results are measured; the gate accepts only {g.provenance}")
    res.reasons += out.missing
    if res.reasons:
        return res
    fails = list(out.violations)
    if g.metric is not None:
        ok = _OPS[g.op](out.value, g.threshold)
        if g.comparison == "ratio":
            res.notes.append(f"{g.scenario} {out.details['scenario']:.4g} / {g.baseline} {out.details['baseline']:.4g} "
                             f"({g.metric}; {out.details['engine']} {out.details['engine_version']} on "
                             f"{out.details['device']}, commit {out.details['commit']})")
        else:
            res.notes.append(f"{g.scenario}: median of {out.details['n']} row(s) from {out.details['files']} "
                             f"({out.details['engine']} {out.details['engine_version']} on {out.details['device']}, "
                             f"commit {out.details['commit']})")
        if g.kind == "report":
            res.status = "REPORT"
            res.details["report_miss"] = not ok
            res.reasons.append(f"report only: {out.value:.4g} {'meets' if ok else 'misses'} {g.op} {g.threshold:g}")
            return res
        if not ok:
            fails.insert(0, f"{g.metric} = {out.value:.4g} does not satisfy {g.op} {g.threshold:g}")
    if "parity" in out.details:
        res.notes += out.details["parity"].splitlines()
    res.status = "FAIL" if fails else "PASS"
    res.reasons += fails
    return res


def _not_this_stage(g: GateSpec, stage: str, ctx: Ctx, gates: list[GateSpec]) -> GateResult:
    """A gate of the stage not selected. Under ``--stage full`` a micro gate stands on the ledger: green
    as many consecutive times as the full gates that wait for it demand, or not."""
    res = GateResult(g.name, _check_name(g), g.kind, "SKIPPED", None, g.threshold, g.op)
    if not (stage == "full" and g.stage == "micro"):
        res.reasons.append(f"a {g.stage}-stage gate, not evaluated under --stage {stage}")
        return res
    need = max([f.after_consecutive for f in gates if g.name in effective_after(f, gates)], default=1)
    hw = None if ctx.engine is not None else ctx.mode
    n = consecutive_green(ctx.reports_dir, g.name, ctx.contract_sha256, hw)
    res.details["from_ledger"] = True
    if n >= need:
        last = next(r for r in reversed(ledger_rows(ctx.reports_dir)) if r.get("gate") == g.name
                    and r.get("contract_sha256") == ctx.contract_sha256 and r.get("status") == "PASS")
        res.value = float(last["value"]) if last.get("value") else None
        res.status, res.provenance = "PASS", [p for p in last.get("provenance", "").split("+") if p]
        res.notes.append(f"not re-evaluated (--stage full): green {n} consecutive times in {ctx.reports_dir / LEDGER}")
    else:
        res.status = "INVALID"
        res.reasons.append(f"not re-evaluated (--stage full) and green only {n} of {need} consecutive times in "
                           f"{ctx.reports_dir / LEDGER}")
    return res


def evaluate_all(contract, reports_dir="reports", *, hw: str = "cpu", record_ledger: bool = False,
                 root=None, only: list[str] | None = None, results_dir=None,
                 stage: str | None = None) -> list[GateResult]:
    """Evaluate every ``[[gates]]`` entry of ``contract`` (dict, Contract or path) against the raw
    artifacts in ``reports_dir``. ``hw``: the hardware mode ("cpu" default, "fpga" for sign-off).
    An engine contract (``[engine]``) is judged on the engine results, logs and dumps under
    ``results_dir``; ``stage`` ("micro" / "full") evaluates the gates of one stage only."""
    contract = as_contract(contract)  # a path goes through the one loader; its errors propagate
    root = Path(root or Path(__file__).resolve().parents[3])
    reports = Path(reports_dir)
    if not reports.is_absolute():
        reports = root / reports
    sha = contract_sha256(contract)
    ctx = Ctx(reports, sha, hw, root, RunRule.from_contract(contract))
    if contract.kind == "engine":
        if results_dir is None:
            raise ValueError("an engine contract is judged on engine results: give --results DIR (the folder of "
                             "the benchmark result files, logs and stage dumps)")
        if not Path(results_dir).is_dir():
            raise ValueError(f"{results_dir}: results folder does not exist")
        ctx.engine = EngineCtx(Path(results_dir), contract.engine, {s.name: s for s in contract.scenarios},
                               dict(contract.log_invariants))
    gates = load_gates(contract)
    out: list[GateResult] = []
    for g in gates:
        if only and g.name not in only:
            continue
        if stage and g.stage != stage:
            out.append(_not_this_stage(g, stage, ctx, gates))
            continue
        out.append(evaluate_gate(g, ctx, after=effective_after(g, gates)))
    if record_ledger:
        record(out, reports, sha, hw, root)
    return out


def shared_reasons(results: list[GateResult]) -> dict[str, str]:
    """Reasons that several gates share, each with a tag (``[R1]``, ...): printed once, named by each gate."""
    seen: dict[str, int] = {}
    for r in results:
        for x in dict.fromkeys(r.reasons):
            seen[x] = seen.get(x, 0) + 1
    return {x: f"[R{i}]" for i, x in enumerate((x for x, n in seen.items() if n > 1), 1)}


def summary(results: list[GateResult], *, contract_sha256: str = "", hw: str = "cpu", results_dir=None,
            verdict: bool = True) -> str:
    """Every gate's line, the GATES count line (how many evaluated gates were valid; no verdict word,
    so that nothing but the VERDICT line reads as a verdict) and the sign-off VERDICT
    (``verdict=False``: a caller that prints the one verdict itself, with its own reasons, e.g. signoff).
    ``results_dir``: the engine results an engine contract was judged on."""
    where = f"results {results_dir}" if results_dir is not None else f"--hw={hw}"
    lines = [f"EAGLE4 gates (contract {contract_sha256[:12]}, {where})"]
    shared = shared_reasons(results)
    for r in results:
        lines.append("  " + r.line(shared).replace("\n", "\n  "))
    failed = [r for r in results if not r.valid]
    desel = [r for r in results if r.status in ("DESELECTED", "SKIPPED")]
    lines.append(f"GATES: {len(results) - len(failed) - len(desel)} valid, {len(failed)} invalid"
                 + (f", {len(desel)} not evaluated (other --hw / --stage)" if desel else ""))
    for reason, tag in shared.items():
        names = [r.name for r in results if reason in r.reasons]
        lines.append(f"  {tag} ({len(names)} gates: {', '.join(names)}): {reason}")
    for r in failed:
        lines.append(f"  INVALID {r.name}: " + "; ".join(f"see {shared[x]}" if x in shared else x for x in r.reasons))
    if verdict:
        lines += decide(results, hw=hw, engine=results_dir is not None).lines()
    return "\n".join(lines)

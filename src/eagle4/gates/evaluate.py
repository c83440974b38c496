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

from eagle4 import provenance as prov
from eagle4.contract import GateSpec, as_contract, contract_sha256, load_gates
from eagle4.gates.metrics import METRICS, Ctx, Metric, MissingMetric, read_rows
from eagle4.gates.verdict import decide
from eagle4.report import atomic
from eagle4.validity import RunRule
from eagle4.vcs import git_commit

LEDGER = "gate_ledger.csv"
LEDGER_COLUMNS = ("timestamp", "run_id", "contract_sha256", "gate", "status", "value", "threshold", "op",
                  "provenance", "hw", "commit")
_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq}


@dataclass
class GateResult:
    name: str
    metric: str
    kind: str  # "gate" | "report"
    status: str  # PASS | FAIL | INVALID | BLOCKED | REPORT | DESELECTED
    value: float | None
    threshold: float
    op: str
    provenance: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # facts that do not change the status (weakest provenance)

    @property
    def valid(self) -> bool:
        """VALID: every condition of the gate holds (report-only gates are always valid)."""
        return self.status in ("PASS", "REPORT", "DESELECTED")

    @property
    def passed(self) -> bool:
        return self.status == "PASS"

    def line(self) -> str:
        v = "-" if self.value is None else f"{self.value:.4g}"
        head = f"{self.name:34s} {('VALID' if self.valid else 'INVALID'):8s} {self.status:10s} {self.metric} = {v} " \
               f"(needs {self.op} {self.threshold:g}) [{','.join(self.provenance) or '-'}]"
        return head + "".join(f"\n    - {r}" for r in self.reasons + self.notes)

    @property
    def report_miss(self) -> bool:
        """A report-only gate whose value misses its threshold (shown as a miss, never a pass)."""
        return self.status == "REPORT" and bool(self.details.get("report_miss"))


def ledger_rows(reports_dir) -> list[dict]:
    p = Path(reports_dir) / LEDGER
    return read_rows(p) if p.is_file() else []


def consecutive_green(reports_dir, gate: str, contract_sha256: str, hw: str | None = None) -> int:
    """How many of the most recent ledger entries of ``gate`` (same contract, and same --hw mode when
    given) are PASS, in a row."""
    n = 0
    if not contract_sha256:
        return 0  # a row without a contract hash is never evidence
    for r in reversed(ledger_rows(reports_dir)):
        if r.get("gate") != gate or r.get("contract_sha256") != contract_sha256 or (hw and r.get("hw") != hw):
            continue
        if r["status"] != "PASS":
            break
        n += 1
    return n


def record(results: list[GateResult], reports_dir, contract_sha256: str, hw: str, root: Path) -> Path:
    p = Path(reports_dir) / LEDGER
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    run_id = f"{now}-{os.getpid()}"
    commit = git_commit(root)
    head, body = io.StringIO(), io.StringIO()
    csv.DictWriter(head, fieldnames=LEDGER_COLUMNS).writeheader()
    w = csv.DictWriter(body, fieldnames=LEDGER_COLUMNS)
    for r in results:
        if r.status == "DESELECTED":
            continue
        w.writerow({"timestamp": now, "run_id": run_id, "contract_sha256": contract_sha256, "gate": r.name,
                    "status": r.status, "value": "" if r.value is None else repr(r.value),
                    "threshold": r.threshold, "op": r.op, "provenance": "+".join(r.provenance), "hw": hw,
                    "commit": commit})
    # one atomic replace: an interrupted write leaves the old ledger; a cut-off last line stays one bad row
    atomic.append_text(p, body.getvalue(), header=head.getvalue())
    return p


def evaluate_gate(g: GateSpec, ctx: Ctx, *, previous: dict[str, GateResult] | None = None) -> GateResult:
    res = GateResult(g.name, g.metric, g.kind, "INVALID", None, g.threshold, g.op)
    if ctx.mode not in g.hw:
        res.status = "DESELECTED"
        res.reasons.append(f"evaluated only under --hw={'/'.join(g.hw)}")
        return res
    # ordering rule: prerequisites green N consecutive times in the ledger
    blocked = []
    for a in g.after:
        n = consecutive_green(ctx.reports_dir, a, ctx.contract_sha256, ctx.mode)
        if n < g.after_consecutive:
            blocked.append(f"needs {a} green {g.after_consecutive} consecutive times (--hw={ctx.mode}) in "
                           f"reports/{LEDGER} before this gate may run; the ledger has {n}")
    if blocked:
        res.status = "BLOCKED"
        res.reasons += blocked
        return res
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
            num = fn(g, ctx, run=g.run or "spec") if g.metric == "throughput" else fn(g, ctx)
            den = fn(g, ctx, run=g.baseline) if g.metric == "throughput" else None
            if den is None:
                raise MissingMetric(f"metric {g.metric} has no named runs; a ratio needs run and baseline")
            m = Metric(num.value / den.value, prov.parts(num.provenance + den.provenance), num.artifact,
                       {"run": num.value, "baseline": den.value}, invalid=num.invalid + den.invalid)
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
            res.reasons.append("figures: unfused {:.3f} MiB/token, fused {:.3f} MiB/token".format(
                m.details["unfused_bytes_per_token"] / 2**20, m.details["fused_bytes_per_token"] / 2**20))
            for comp, fb, ub, where in top:
                res.reasons.append(f"top contributor: {comp}: fused {fb / 2**20:.3f} MiB/token (unfused "
                                   f"{ub / 2**20:.3f}) [{where}]")
    return res


def evaluate_all(contract, reports_dir="reports", *, hw: str = "cpu", record_ledger: bool = False,
                 root=None, only: list[str] | None = None) -> list[GateResult]:
    """Evaluate every ``[[gates]]`` entry of ``contract`` (dict, Contract or path) against the raw
    artifacts in ``reports_dir``. ``hw``: the hardware mode ("cpu" default, "fpga" for sign-off)."""
    contract = as_contract(contract)  # a path goes through the one loader; its errors propagate
    root = Path(root or Path(__file__).resolve().parents[3])
    reports = Path(reports_dir)
    if not reports.is_absolute():
        reports = root / reports
    sha = contract_sha256(contract)
    ctx = Ctx(reports, sha, hw, root, RunRule.from_contract(contract))
    gates = load_gates(contract)
    out: list[GateResult] = []
    for g in gates:
        if only and g.name not in only:
            continue
        out.append(evaluate_gate(g, ctx))
    if record_ledger:
        record(out, reports, sha, hw, root)
    return out


def summary(results: list[GateResult], *, contract_sha256: str = "", hw: str = "cpu") -> str:
    """Every gate's line, the RESULT line (were the evaluated gates valid) and the sign-off VERDICT."""
    lines = [f"EAGLE4 gates (contract {contract_sha256[:12]}, --hw={hw})"]
    for r in results:
        lines.append("  " + r.line().replace("\n", "\n  "))
    failed = [r for r in results if not r.valid]
    desel = [r for r in results if r.status == "DESELECTED"]
    verdict = "VALID" if not failed else "INVALID"
    lines.append(f"RESULT: {verdict}: {len(results) - len(failed) - len(desel)} valid, {len(failed)} invalid"
                 + (f", {len(desel)} deselected (other --hw)" if desel else ""))
    for r in failed:
        lines.append(f"  INVALID {r.name}: " + "; ".join(r.reasons))
    lines += decide(results, hw=hw).lines()
    return "\n".join(lines)

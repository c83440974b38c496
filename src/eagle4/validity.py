"""Run validity, decided in one place from raw rows (like MLPerf LoadGen's ``PerformanceSummary``).

A repeated measurement is valid when: it has at least the contract's number of independent runs,
the CoV of the per-run values is within the contract's limit, every run lasted the contract's
minimum duration (when rows say how long), every row was produced under the expected contract
hash, every row says its provenance, and the rows that name a device name one: runs from two cards
are two measurements, never one (a median over an H100 and an H200 describes neither). Its
provenance is the weakest of its rows (:mod:`eagle4.provenance`). Reports and gates read
:class:`PerformanceSummary`; none re-decides.

The rule (:class:`RunRule`) comes from the contract's ``[runs]`` (``runs``, ``cov_max``,
``min_duration_s``); its defaults are the contract schema's own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from eagle4 import provenance as prov
from eagle4 import stats
from eagle4.contract import MIN_RUNS, PartialContract, Runs

# The printed words for the run rule. Gates print PASS/FAIL (and VALID/INVALID for "every condition of
# the gate holds"); a measured point prints these. CSV ``status`` columns keep VALID/INVALID (committed
# records hold them); docs/cli.md states the mapping.
MEETS = "MEETS RUN RULE"
BELOW = "BELOW RUN RULE"


@dataclass(frozen=True)
class RunRule:
    min_runs: int
    cov_max: float
    min_duration_s: float = 0.0

    @classmethod
    def from_contract(cls, contract) -> RunRule:
        """The rule of a Contract (or of a partial contract's or a dict's ``runs`` table; schema defaults
        otherwise)."""
        runs = getattr(contract, "runs", None)
        if runs is None:
            raw = contract.section("runs") if isinstance(contract, PartialContract) else \
                contract.get("runs", {}) if isinstance(contract, Mapping) else {}
            return cls(int(raw.get("runs", MIN_RUNS)), float(raw.get("cov_max", Runs.model_fields["cov_max"].default)),
                       float(raw.get("min_duration_s", Runs.model_fields["min_duration_s"].default)))
        return cls(runs.runs, runs.cov_max, runs.min_duration_s)

    def describe(self) -> str:
        d = f", each run >= {self.min_duration_s:g} s" if self.min_duration_s else ""
        return f">= {self.min_runs} runs, CoV <= {self.cov_max:.0%}{d}"


@dataclass
class PerformanceSummary:
    """Validity and the headline figures of one repeated measurement (one metric at one point)."""

    metric: str
    n_runs: int
    values: list[float]
    median: float
    mean: float
    cov: float
    min_run_duration_s: float | None
    contract_sha256: str | None
    provenance: list[str]  # every provenance of the rows, weakest first
    rule: RunRule
    reasons: list[str] = field(default_factory=list)  # empty when valid

    @property
    def valid(self) -> bool:
        return not self.reasons

    @property
    def cov_ok(self) -> bool:
        return math.isfinite(self.cov) and self.cov <= self.rule.cov_max

    @property
    def weakest_provenance(self) -> str | None:
        return self.provenance[0] if self.provenance else None

    def line(self) -> str:
        state = MEETS if self.valid else BELOW + ": " + "; ".join(self.reasons)
        return (f"{self.metric}: median {self.median:.6g} over {self.n_runs} runs, CoV {self.cov:.2%} "
                f"[{self.weakest_provenance or '-'}] {state}")


def check_contract(rows: Sequence[Mapping], expected: str | None, *, require: bool = False) -> list[str]:
    """Reasons rows do not belong to the ``expected`` contract (rows without a hash are one with
    ``require``, the default of :func:`summarize_runs`: a row that names no contract is no evidence)."""
    if expected is None:
        return []
    hashes = {r.get("contract_sha256") for r in rows}
    out = []
    if require and (None in hashes or "" in hashes):
        out.append("rows without a contract_sha256 (results without a contract hash are refused)")
    other = sorted(h[:12] for h in hashes - {None, "", expected})
    if other:
        out.append(f"rows produced under contract {other}, not {expected[:12]}")
    return out


def check_one_device(rows: Sequence[Mapping]) -> list[str]:
    """Reasons ``rows`` are not from one device: more than one non-empty ``device`` among them (rows that name
    none are not judged here)."""
    devices = sorted({str(r.get("device")) for r in rows if r.get("device") not in (None, "")})
    if len(devices) > 1:
        return [f"rows from {len(devices)} devices ({', '.join(devices)}): one measurement is one card"]
    return []


def summarize_runs(rows: Sequence[Mapping], *, value: str, rule: RunRule, metric: str | None = None,
                   duration: str | None = None, contract_sha256: str | None = None,
                   require_hash: bool = True) -> PerformanceSummary:
    """The :class:`PerformanceSummary` of ``rows``, one row per independent run: ``value`` names the
    per-run figure, ``duration`` the column with the run's measured seconds (checked against
    ``rule.min_duration_s`` when given)."""
    reasons: list[str] = []
    vals = []
    for i, r in enumerate(rows):
        try:
            vals.append(float(r[value]))
        except (KeyError, TypeError, ValueError):
            reasons.append(f"run {i}: no numeric {value!r}")
    vals = [v for v in vals if math.isfinite(v)]
    n = len(vals)
    c = stats.cov_or_nan(vals)
    if n < rule.min_runs:
        reasons.append(f"{n} run(s); the contract asks for >= {rule.min_runs} independent runs")
    if not math.isfinite(c):
        reasons.append("CoV undefined (fewer than two runs, or mean 0)")
    elif c > rule.cov_max:
        reasons.append(f"CoV {c:.2%} over the contract's limit {rule.cov_max:.0%}")
    min_dur = None
    if duration is not None:
        durs = [float(r[duration]) for r in rows if r.get(duration) not in (None, "")]
        min_dur = min(durs) if durs else None
        if min_dur is None:
            reasons.append(f"rows lack the run duration {duration!r}")
        elif min_dur + 1e-9 < rule.min_duration_s:
            reasons.append(f"shortest run {min_dur:.3g} s is under the contract's minimum {rule.min_duration_s:g} s")
    reasons += check_contract(rows, contract_sha256, require=require_hash)
    reasons += check_one_device(rows)
    provs: list[str] = []
    missing = 0
    for r in rows:
        p = r.get("provenance")
        if not p:
            missing += 1
            continue
        try:
            provs += prov.parts(p)
        except prov.ProvenanceError as e:
            reasons.append(str(e))
    if missing:
        reasons.append(f"{missing} row(s) without provenance")
    return PerformanceSummary(metric or value, n, vals, stats.median(vals),
                              float(sum(vals) / n) if n else float("nan"), c, min_dur, contract_sha256,
                              prov.parts(provs), rule, reasons)


def summarize_groups(rows: Iterable[Mapping], by: Sequence[str], **kw) -> dict[tuple, PerformanceSummary]:
    """:func:`summarize_runs` per group of rows with equal ``by`` columns, in first-seen order."""
    groups: dict[tuple, list[Mapping]] = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in by), []).append(r)
    return {k: summarize_runs(v, **kw) for k, v in groups.items()}


def run_rule_summary(stats: Sequence[Mapping]) -> str:
    """One line on how many operating points meet the run rule, naming each point below it and why
    (``stats``: per-point dicts with ``point`` and ``valid`` or ``status``, reasons in ``invalid_reasons``
    or ``why``)."""
    below = []
    for s in stats:
        ok = s["valid"] if "valid" in s else s.get("status") == "VALID"
        if not ok:
            why = s.get("invalid_reasons") or s.get("why") or []
            why = [why] if isinstance(why, str) else list(why)
            below.append(f"{s['point']}" + (f" ({'; '.join(why)})" if why else ""))
    head = f"run rule: {len(stats) - len(below)} of {len(stats)} points {MEETS}"
    return head + (f"; {BELOW}: " + ", ".join(below) + " (their rows do not count as a measurement)" if below else "")

"""Metrics the gates compare, each read from a raw CSV artifact that carries provenance.

A metric function ``fn(gate, ctx) -> Metric`` raises :class:`MissingMetric` (with what is missing and
who provides it) when the raw data is absent; a value is never invented. A metric's provenance is
every provenance of the rows it was built from (weakest first, :mod:`eagle4.provenance`); repeated
measurements are judged by :mod:`eagle4.validity` with the contract's runs rule.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from eagle4 import provenance as prov
from eagle4.validity import PerformanceSummary, RunRule, summarize_runs


class MissingMetric(Exception):
    """The raw data a metric needs is missing or unusable; the message says what and who provides it."""


@dataclass
class Metric:
    value: float
    provenance: list[str]  # every provenance of the rows the value was computed from, weakest first
    artifact: str
    details: dict = field(default_factory=dict)
    # provenance of the rows the gate's claim is about (the byte ratio: the counted ports); None = all.
    # Development modes judge these; sign-off (--hw=fpga) judges the weakest of `provenance`.
    evidence: list[str] | None = None
    invalid: list[str] = field(default_factory=list)  # validity reasons (eagle4.validity)

    @property
    def weakest(self) -> str | None:
        return prov.weakest(self.provenance)


@dataclass
class Ctx:
    reports_dir: Path
    contract_sha256: str
    mode: str  # "cpu" | "fpga" | "cuda"
    root: Path
    rule: RunRule = field(default_factory=lambda: RunRule.from_contract({}))
    engine: object | None = None  # eagle4.gates.engine.EngineCtx for an engine contract


def read_rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _artifact(ctx: Ctx, rel: str, who: str) -> list[dict]:
    p = ctx.reports_dir / rel[len("reports/"):] if rel.startswith("reports/") else ctx.root / rel
    if not p.is_file():
        raise MissingMetric(f"missing artifact {rel} ({who})")
    rows = read_rows(p)
    if not rows:
        raise MissingMetric(f"artifact {rel} has no rows ({who})")
    if "provenance" not in rows[0]:
        raise MissingMetric(f"artifact {rel} lacks a provenance column: no metric claims without raw CSV "
                            "with provenance attached")
    return rows


def _check_contract(rows, rel: str, ctx: Ctx) -> None:
    unhashed = sum(1 for r in rows if not r.get("contract_sha256"))
    if unhashed:  # a row that says nothing of its contract is no evidence for this one
        raise MissingMetric(f"{rel}: {unhashed} row(s) carry no contract_sha256; rows without a contract hash are "
                            "refused; re-run `eagle4 budget`")
    shas = {r["contract_sha256"] for r in rows}
    if shas != {ctx.contract_sha256}:
        raise MissingMetric(f"{rel} was produced under contract {sorted(s[:12] for s in shas)}, not the gated "
                            f"contract {ctx.contract_sha256[:12]}; re-run `eagle4 budget`")


def _check_acceptance_input(rows, rel: str, ctx: Ctx) -> None:
    """The byte trace names the measured acceptance CSV it drew from and its sha256; when that file
    has changed since (a later e2e run rewrote it), the byte figures are stale, not evidence."""
    from eagle4.contract import sha256_file

    named = {(r.get("accept_source") or "", r.get("accept_sha256") or "") for r in rows}
    for src, sha in named:
        if not sha:
            continue  # the declared distribution (or an artifact from before the trace named its input)
        p = ctx.root / src  # relative to the repository root, as the trace read it ([trace].measured_csv)
        now = sha256_file(p) if p.is_file() else "missing"
        if now != sha:
            raise MissingMetric(f"{rel} was computed from {src} with sha256 {sha[:12]}, which is now "
                                f"{now[:12]}: the acceptance input changed; re-run `eagle4 budget`")


# Which ratio of bytes_per_token.csv each byte gate judges (issue 13, the work order's reading): the early
# gate is WP4's fusion and dataflow alone (same precision and vocabulary on both sides) at the production
# point; every other byte gate the effective ratio at its worst operating point (pooling over batches would
# hide a miss at B=1). A gate's ``batch`` names the point explicitly.
BYTE_GATE_RATIO = {"bytes_reduction_early": ("fusion_only", "production")}
RATIO_VARIANTS = {"fusion_only": ("unfused", "fused_exact"), "approximations_only": ("unfused", "unfused_approx"),
                  "effective": ("unfused", "fused")}


def bytes_per_token_ratio(gate, ctx: Ctx) -> Metric:
    rel = "reports/bytes_per_token.csv"
    rows = _artifact(ctx, rel, "written by `eagle4 budget --contract ...` from C-sim counters")
    _check_contract(rows, rel, ctx)
    _check_acceptance_input(rows, rel, ctx)
    kind, where = BYTE_GATE_RATIO.get(getattr(gate, "name", ""), ("effective", "worst"))
    num, den = RATIO_VARIANTS[kind]
    points = {int(r["batch"]): float(r["bytes_per_token"]) for r in rows
              if r["backend"] == "ratio" and r["component"] == kind and r["batch"] != "all"}
    if not points and kind == "effective":
        return _pooled_ratio(rows, rel)  # an artifact with only the pooled totals (older writers, hand-made)
    if not points:
        raise MissingMetric(f"{rel} lacks the per-point '{kind}' ratio rows; re-run `eagle4 budget`")
    if getattr(gate, "batch", None):
        if gate.batch not in points:
            raise MissingMetric(f"{rel} has no operating point batch={gate.batch} (points: {sorted(points)})")
        B = gate.batch
    elif where == "production":
        B = max(points)  # the contract declares no production point: its largest operating batch
    else:
        B = min(points, key=lambda b: points[b])
    parts = [r for r in rows if r["backend"] in (num, den) and r["batch"] == str(B)
             and not r["component"].startswith("TOTAL")]
    every = prov.parts(r["provenance"] for r in parts)
    counted = [p for p in every if p != "computed"]
    tot = {r["backend"]: float(r["bytes_per_token"]) for r in rows
           if r["component"] == "TOTAL_POINT" and r["batch"] == str(B) and r["backend"] in (num, den)}
    if set(tot) != {num, den}:
        raise MissingMetric(f"{rel} lacks the {num} and {den} TOTAL_POINT rows at batch {B}")
    comps = sorted((r for r in parts if r["backend"] == den), key=lambda r: -float(r["bytes_per_token"]))
    base = {r["component"]: float(r["bytes_per_token"]) for r in parts if r["backend"] == num}
    top = [(r["component"], float(r["bytes_per_token"]), base.get(r["component"], 0.0), r["provenance"])
           for r in comps[:2]]
    computed_share = sum(float(r["bytes_per_token"]) for r in comps if r["provenance"] == "computed") / max(tot[den], 1e-30)
    return Metric(tot[num] / tot[den], every, rel, {
        "ratio": kind, "batch": B, "point": "production (largest batch)" if where == "production" and not gate.batch
        else ("worst operating point" if not gate.batch else "gate batch"), "per_point": points,
        "unfused_bytes_per_token": tot[num], "fused_bytes_per_token": tot[den], "top2": top,
        "computed_share_of_fused": computed_share}, evidence=counted)


def _pooled_ratio(rows, rel: str) -> Metric:
    """The effective ratio from the pooled TOTAL rows, for an artifact without per-point rows; the
    details say it is pooled (a miss at one operating point can hide in it)."""
    tot = {r["backend"]: r for r in rows if r["component"] == "TOTAL" and r["backend"] in ("unfused", "fused")}
    if set(tot) != {"unfused", "fused"}:
        raise MissingMetric(f"{rel} lacks the unfused and fused TOTAL rows")
    parts = [r for r in rows if r["backend"] in ("unfused", "fused") and r["batch"] == "all"
             and not r["component"].startswith("TOTAL")]
    every = prov.parts(r["provenance"] for r in parts)
    counted = [p for p in every if p != "computed"]
    comps = sorted((r for r in parts if r["backend"] == "fused"), key=lambda r: -float(r["bytes_per_token"]))
    unf = {r["component"]: float(r["bytes_per_token"]) for r in parts if r["backend"] == "unfused"}
    top = [(r["component"], float(r["bytes_per_token"]), unf.get(r["component"], 0.0), r["provenance"]) for r in comps[:2]]
    u, f = float(tot["unfused"]["bytes_per_token"]), float(tot["fused"]["bytes_per_token"])
    computed_share = sum(float(r["bytes_per_token"]) for r in comps if r["provenance"] == "computed") / max(f, 1e-30)
    return Metric(u / f, every, rel, {
        "ratio": "effective", "batch": "all", "point": "pooled: the artifact has no per-point rows",
        "unfused_bytes_per_token": u, "fused_bytes_per_token": f, "top2": top,
        "computed_share_of_fused": computed_share}, evidence=counted)


def acceptance_length_impact(gate, ctx: Ctx) -> Metric:
    rel = "reports/acceptance_impact.csv"
    rows = _artifact(ctx, rel, "the e2e driver must measure the mean acceptance length with and without the "
                               "approximations (hot vocabulary, int8 transport) and write it")
    _check_contract(rows, rel, ctx)  # a measurement of another contract proves nothing here
    vals = [float(r["impact"]) for r in rows if r.get("impact") not in (None, "")]
    if not vals:
        raise MissingMetric(f"{rel} has no 'impact' values")
    _refuse_if_hot_vocab_cannot_bite(rows, rel)
    return Metric(max(vals), prov.parts(r["provenance"] for r in rows), rel, {"rows": len(rows)})


def _refuse_if_hot_vocab_cannot_bite(rows: list[dict], rel: str) -> None:
    """A hot vocabulary that holds every token the target emitted cannot change a greedy draft's
    acceptance on that model: a small impact there proves nothing (e.g. a byte-level pair whose hot
    set covers all of its outputs). Refuse such a measurement instead of passing it."""
    hot = [r for r in rows if r.get("lm_head_vocab") == "hot"]
    if not hot:
        return
    cov = [r.get("target_output_hot_coverage", "") for r in hot]
    if any(c in (None, "") for c in cov):
        raise MissingMetric(f"{rel}: hot-vocabulary rows lack target_output_hot_coverage; without it nobody can "
                            "tell whether the approximation could change anything on the measured model")
    worst = max(float(c) for c in cov)
    if worst >= 1.0:
        raise MissingMetric(f"refused: {rel} was measured on a model whose target outputs all lie in the hot set "
                            f"(coverage {worst:g}); the hot vocabulary cannot change anything there. Measure on a "
                            "pair with a real vocabulary (hot-set coverage < 1)")


def draft_step_latency_us(gate, ctx: Ctx) -> Metric:
    rel = "reports/budget_sheet.csv"
    rows = _artifact(ctx, rel, "written by `eagle4 budget`")
    _check_contract(rows, rel, ctx)
    from eagle4.budget.model import DRAFT_STAGES

    fused = [r for r in rows if r["backend"] == "fused"]
    if not fused:
        raise MissingMetric(f"{rel} has no fused rows")
    B = gate.batch or max(int(r["batch"]) for r in fused)
    clocks = sorted({float(r["fclk_mhz"]) for r in fused})
    pub = [c for c in clocks if "public" in next(r["fclk_source"] for r in fused if float(r["fclk_mhz"]) == c)]
    fclk = pub[0] if pub else min(clocks)
    t = sum(float(r["T_us"]) for r in fused if int(r["batch"]) == B and float(r["fclk_mhz"]) == fclk
            and r["stage"] in DRAFT_STAGES)
    return Metric(t, prov.parts(r["provenance"] for r in fused), rel, {"batch": B, "fclk_mhz": fclk})


THROUGHPUT_CSV = "reports/throughput.csv"


def _throughput_points(ctx: Ctx, run: str) -> dict[str, PerformanceSummary]:
    """One :class:`PerformanceSummary` per operating point (the ``point`` column; rows without one form
    a single group) of ``run``'s rows, one row per independent run: validity (runs, CoV, minimum
    duration, contract) decided by eagle4.validity. Points are never pooled: a pooled median would let
    a good point hide a miss at another, and its CoV would measure the spread between points."""
    rel = THROUGHPUT_CSV
    rows = _artifact(ctx, rel, "the e2e/perf driver writes tokens/s per named run")
    _check_contract(rows, rel, ctx)
    sel = [r for r in rows if r.get("run") == run]
    if ctx.mode == "fpga":
        sel = [r for r in sel if "fpga" in (r.get("device", "") + r.get("backend", "")).lower()] or sel
    if not sel:
        raise MissingMetric(f"{rel} has no rows for run {run!r}")
    groups: dict[str, list[dict]] = {}
    for r in sel:
        groups.setdefault(r.get("point") or "", []).append(r)
    return {pt: summarize_runs(rs, value="tokens_per_s", metric=f"throughput({run})" + (f" at {pt}" if pt else ""),
                               rule=ctx.rule, duration="wall_s" if "wall_s" in rs[0] else None,
                               contract_sha256=ctx.contract_sha256)
            for pt, rs in groups.items()}


def _invalid(summaries) -> list[str]:
    return [f"{s.metric}: {x}" for s in summaries for x in s.reasons]


def throughput(gate, ctx: Ctx, run: str | None = None) -> Metric:
    """The run's tokens/s at its worst operating point (every point's median in the details)."""
    run = run or gate.run or "spec"
    pts = _throughput_points(ctx, run)
    worst = min(pts, key=lambda p: pts[p].median)
    return Metric(pts[worst].median, prov.parts(p for s in pts.values() for p in s.provenance), THROUGHPUT_CSV,
                  {"run": run, "point": worst or "all", "per_point": {p or "all": s.median for p, s in pts.items()}},
                  invalid=_invalid(pts.values()))


def throughput_ratio(gate, ctx: Ctx) -> Metric:
    """throughput(run) / throughput(baseline) per operating point; the figure is the point that fares
    worst against the gate's operator (the smallest ratio for >=), every point's ratio in the details.
    A point the run has and the baseline lacks is missing evidence, not a point to leave out."""
    run, base = gate.run or "spec", gate.baseline
    num, den = _throughput_points(ctx, run), _throughput_points(ctx, base)
    lacking = sorted(set(num) - set(den))
    if lacking:
        raise MissingMetric(f"{THROUGHPUT_CSV}: no {base!r} rows at point(s) {lacking or ['all']} of run {run!r}; "
                            "throughput is compared per operating point")
    ratios = {p: num[p].median / den[p].median for p in num}
    pick = max if gate.op in ("<=", "<") else min
    worst = pick(ratios, key=ratios.get)
    return Metric(ratios[worst], prov.parts(p for s in [*num.values(), *den.values()] for p in s.provenance),
                  THROUGHPUT_CSV, {"run": num[worst].median, "baseline": den[worst].median, "point": worst or "all",
                                   "per_point": {p or "all": r for p, r in ratios.items()}},
                  invalid=_invalid([*num.values(), *den.values()]))


def mean_acceptance_length(gate, ctx: Ctx) -> Metric:
    """Mean tokens committed per verify step per request (accepted draft tokens + 1 bonus), the e2e
    driver's definition (``tokens_committed``; ``accept_length + 1`` when only that column exists)."""
    rel = "reports/acceptance_lengths.csv"
    rows = _artifact(ctx, rel, "the e2e driver (`eagle4 workload run`) writes one row per request and verify step")
    _check_contract(rows, rel, ctx)
    if "tokens_committed" in rows[0]:
        v = [float(r["tokens_committed"]) for r in rows if r.get("tokens_committed") not in (None, "")]
    else:
        v = [float(r["accept_length"]) + 1 for r in rows if r.get("accept_length") not in (None, "")]
    if not v:
        raise MissingMetric(f"{rel} has no tokens_committed / accept_length values")
    return Metric(sum(v) / len(v), prov.parts(r["provenance"] for r in rows), rel, {"n": len(v)})


METRICS = {
    "bytes_per_token_ratio": bytes_per_token_ratio,
    "acceptance_length_impact": acceptance_length_impact,
    "draft_step_latency_us": draft_step_latency_us,
    "throughput": throughput,
    "mean_acceptance_length": mean_acceptance_length,
}

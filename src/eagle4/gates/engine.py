"""Evaluating the gates of an engine contract (``[engine]``, ``[[scenarios]]``): a metric of the
imported engine rows (absolute, or the ratio to a named baseline scenario), the gate's log
invariants and its stagewise parity. Each part that holds no honest evidence says why; the parts
are combined by :func:`eagle4.gates.evaluate.evaluate_gate`.

Malformed inputs (a result file, a log counter, a dump) raise their one-line errors
(:class:`eagle4.engines.ResultFormatError`, :class:`eagle4.log_invariants.LogFormatError`,
:class:`eagle4.stage_parity.StageDumpError`): the evaluation stops and nothing is recorded.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from eagle4.contract import sha256_file
from eagle4.engines import EngineRow, import_results
from eagle4.engines.figures import figure, ratio, select
from eagle4.log_invariants import check_logs
from eagle4.stage_parity import compare_stages


@dataclass
class EngineCtx:
    results_dir: Path
    engine: object  # the contract's [engine] section
    scenarios: dict  # name -> Scenario
    log_specs: dict = field(default_factory=dict)  # [log_invariants.<name>]
    _rows: list[EngineRow] | None = None

    @property
    def rows(self) -> list[EngineRow]:
        if self._rows is None:
            self._rows = import_results(self.results_dir, tuple(self.engine.results))
        return self._rows


@dataclass
class EngineOutcome:
    value: float | None = None  # the metric's figure (None for a gate of logs / parity only)
    missing: list[str] = field(default_factory=list)  # no honest evidence: the gate is INVALID
    violations: list[str] = field(default_factory=list)  # evidence that fails a log or parity check: FAIL
    details: dict = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # evidence: relative path -> sha256

    @property
    def evidence(self) -> str:
        h = hashlib.sha256()
        for f, s in sorted(self.files.items()):
            h.update(f"{f}\0{s}\n".encode())
        return h.hexdigest() if self.files else ""


def _scenario_rows(ectx: EngineCtx, name: str) -> list[EngineRow]:
    s = ectx.scenarios[name]
    return select(ectx.rows, context=s.context, batch=s.batch, spec_tokens=s.spec_tokens, stage=s.stage,
                  micro_max_decode_steps=ectx.engine.micro_max_decode_steps, engine=s.engine)


def evaluate_engine_gate(g, ectx: EngineCtx, logs=None) -> EngineOutcome:
    """The metric figure, log invariants (``logs``: the gate's, resolved from a named table) and
    stage parity of engine gate ``g``."""
    out = EngineOutcome()
    if g.metric:
        fig = figure(_scenario_rows(ectx, g.scenario), g.metric, g.scenario)
        if g.comparison == "ratio":
            fig = ratio(fig, figure(_scenario_rows(ectx, g.baseline), g.metric, g.baseline), g.scenario, g.baseline)
        out.value, out.details = fig.value, dict(fig.details)
        out.missing += fig.reasons
        out.files.update({r.file: r.file_sha256 for r in fig.rows})
    if logs is not None:
        rep = check_logs(logs, ectx.results_dir)
        out.missing += [f"logs: {r}" for r in rep.unproven]
        out.violations += [f"logs: {r}" for r in rep.reasons]
        out.files.update(rep.files)
        out.details["log_summaries"] = rep.summaries
    absent = [f for f in (g.parity.reference, g.parity.candidate) if not (ectx.results_dir / f).is_file()] \
        if g.parity is not None else []
    if absent:  # no dump is missing evidence; a dump that is there but malformed is an error
        out.missing.append(f"parity: stage dump(s) {absent} not under {ectx.results_dir}")
    elif g.parity is not None:
        rep = compare_stages(g.parity, ectx.results_dir)
        out.details["parity"] = rep.text()
        first = rep.first_divergent
        if first is not None:
            out.violations.append(f"parity: first diverging stage {first.name}: " + "; ".join(first.reasons)
                               + "".join(f" | later: {s.name}: {'; '.join(s.reasons)}" for s in rep.stages
                                         if not s.ok and s is not first))
        for role in ("reference", "candidate"):
            rel = getattr(g.parity, role)
            out.files[rel] = sha256_file(ectx.results_dir / rel)
    return out

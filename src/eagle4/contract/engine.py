"""Sections of an engine contract: a GPU speculative-decoding program gated on the results its engine
writes (``[engine]``, ``[[scenarios]]``), instead of running the workload here.

``[engine]``: which files under ``--results`` are benchmark results (globs) and the decode-step
bound of a micro run. ``[[scenarios]]``: a named selection of result rows by context length,
batch, speculative tokens (0 = the non-speculative baseline) and stage; gates name scenarios
(``scenario``, and ``baseline`` for a ratio). See ``docs/engine_gates.md``.
"""

from __future__ import annotations

import difflib
from typing import Literal

from pydantic import Field

from eagle4.contract.base import Section
from eagle4.engines.rows import METRICS


class EngineSection(Section):
    results: list[str] = Field(default_factory=lambda: ["**/*.json", "**/*.jsonl"], min_length=1,
                               description="globs (under --results) of the benchmark result files")
    micro_max_decode_steps: int = Field(512, ge=1, description="a run of at most this many decode steps per "
                                                                "request is a micro run; longer runs are full runs")
    description: str = ""


class Scenario(Section):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    context: int = Field(ge=1, description="context (prompt) length in tokens")
    batch: int = Field(ge=1, description="concurrent requests")
    spec_tokens: int = Field(ge=0, description="speculative tokens per step; 0 = the non-speculative baseline")
    stage: Literal["micro", "full"]
    engine: str | None = Field(None, description="only rows of this engine (default: any, but one per figure)")


def check_scenarios(scenarios: list[Scenario], gates, engine: EngineSection | None) -> None:
    """Scenario names unique; every engine gate names declared scenarios of its own stage; engine
    gate fields only in an engine contract. Raises ValueError naming the gate and field."""
    names = [s.name for s in scenarios]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"scenarios: duplicate name(s) {dup}")
    by = {s.name: s for s in scenarios}
    for g in gates:
        uses = g.scenario is not None or g.logs is not None or g.parity is not None
        if engine is None:
            if uses:
                raise ValueError(f"gate {g.name}: scenario/logs/parity need an [engine] section (an engine contract)")
            continue
        unused = [f for f in ("run", "artifacts", "batch", "report_band") if f in g.model_fields_set]
        if unused:
            raise ValueError(f"gate {g.name}: {unused} belong to workload gates; an engine gate reads "
                             "'scenario' (and 'baseline') rows from --results")
        if g.metric and g.metric not in METRICS:
            close = difflib.get_close_matches(g.metric, list(METRICS), n=1)
            raise ValueError(f"gate {g.name}: metric {g.metric!r} is not an engine metric"
                             + (f" (did you mean {close[0]!r}?)" if close else f"; known: {sorted(METRICS)}"))
        if g.metric and g.scenario is None:
            raise ValueError(f"gate {g.name}: an engine gate with a metric names its 'scenario'")
        for fld in ("scenario", "baseline"):
            n = getattr(g, fld)
            if n is None:
                continue
            if n not in by:
                raise ValueError(f"gate {g.name}: {fld} {n!r} is not a declared scenario ({sorted(by)})")
            if by[n].stage != g.stage:
                raise ValueError(f"gate {g.name}: {fld} {n!r} is a {by[n].stage} scenario; the gate's stage is {g.stage}")
        if g.comparison == "ratio" and g.baseline == g.scenario:
            raise ValueError(f"gate {g.name}: baseline and scenario are the same ({g.scenario!r})")


__all__ = ["EngineSection", "Scenario", "check_scenarios"]



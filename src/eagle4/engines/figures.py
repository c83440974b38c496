"""From imported engine rows to the one figure a gate compares: select the rows of a contract
scenario (context length, batch, speculative tokens, stage), reduce them to their median, and refuse
what is not like for like.

A row's stage is ``micro`` when it generated at most ``micro_max_decode_steps`` tokens per request,
else ``full``. Several rows of one scenario (repeated runs, JSONL lines) give their median; rows of
one scenario from different engines, versions, devices or commits are not one measurement and give
no figure; a ratio needs both scenarios measured on the same engine, version, device and commit. A
run with failed requests gives no figure (its throughput counts only the requests that completed); a
run in which no request completed says so, with its first error.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from eagle4.engines.rows import EngineRow

IDENTITY = ("engine", "engine_version", "device", "commit")


def row_stage(row: EngineRow, micro_max_decode_steps: int) -> str:
    return "micro" if row.decode_steps <= micro_max_decode_steps else "full"


def select(rows: list[EngineRow], *, context: int, batch: int, spec_tokens: int, stage: str,
           micro_max_decode_steps: int, engine: str | None = None) -> list[EngineRow]:
    return [r for r in rows if r.context == context and r.batch == batch and r.spec_tokens == spec_tokens
            and row_stage(r, micro_max_decode_steps) == stage and (engine is None or r.engine == engine)]


@dataclass
class Figure:
    value: float | None
    rows: list[EngineRow] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # why there is no honest figure
    details: dict = field(default_factory=dict)


def _identity(rows: list[EngineRow]) -> dict[str, list[str]]:
    return {k: sorted({str(getattr(r, k)) for r in rows}) for k in IDENTITY}


def figure(rows: list[EngineRow], metric: str, scenario: str) -> Figure:
    """The median of ``metric`` over the rows of ``scenario``."""
    if not rows:
        return Figure(None, [], [f"no result rows for scenario {scenario!r}"])
    fig = Figure(None, rows)
    mixed = {k: v for k, v in _identity(rows).items() if len(v) > 1}
    if mixed:
        fig.reasons.append(f"scenario {scenario!r}: rows differ in {', '.join(f'{k} {v}' for k, v in mixed.items())}; "
                           "one figure needs one engine build on one device")
    dead = [r for r in rows if r.metrics.get("completed_requests", 1) == 0]
    for r in dead:
        err = r.extra.get("first_error") or ""
        fig.reasons.append(f"scenario {scenario!r}: no request completed in {r.where} "
                           f"({int(r.metrics.get('failed_requests') or 0)} failed)" + (f": {err}" if err else ""))
    lacking = [r.where for r in rows if metric not in r.metrics and r not in dead]
    if lacking:
        fig.reasons.append(f"scenario {scenario!r}: metric {metric!r} absent from {lacking}")
    failed = [f"{r.where} ({int(r.metrics['failed_requests'])})" for r in rows
              if r not in dead and (r.metrics.get("failed_requests") or 0) > 0]
    if failed:
        fig.reasons.append(f"scenario {scenario!r}: failed requests in {failed}; figures over completed requests only "
                           "are not comparable")
    if fig.reasons:
        return fig
    vals = [r.metrics[metric] for r in rows]
    fig.value = float(statistics.median(vals))
    fig.details = {"n": len(vals), "values": vals, "files": sorted({r.where for r in rows}),
                   **{k: v[0] for k, v in _identity(rows).items()}}
    return fig


def ratio(num: Figure, den: Figure, num_name: str, den_name: str) -> Figure:
    """``num / den`` when both exist and were measured on the same engine build and device."""
    out = Figure(None, num.rows + den.rows, num.reasons + den.reasons)
    if out.reasons:
        return out
    differ = [f"{k}: {num.details[k]!r} vs {den.details[k]!r}" for k in IDENTITY if num.details[k] != den.details[k]]
    if differ:
        out.reasons.append(f"{num_name!r} and baseline {den_name!r} are not like for like ({'; '.join(differ)})")
        return out
    if den.value == 0:
        out.reasons.append(f"baseline {den_name!r} is 0")
        return out
    out.value = num.value / den.value
    out.details = {"scenario": num.value, "baseline": den.value, "scenario_files": num.details["files"],
                   "baseline_files": den.details["files"], **{k: num.details[k] for k in IDENTITY}}
    return out

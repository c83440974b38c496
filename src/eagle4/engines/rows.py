"""One imported engine benchmark result: what was measured, on what, from which file.

Every row keeps the engine, its version, the device, the scenario (context length, batch,
speculative tokens, decode steps), the commit of the engine build and the sha256 of the file it
came from, so a gate can say exactly which evidence it used. Values the file does not carry come
from a ``meta.json`` next to it (whole folder) or ``<file>.meta.json`` (that file); a value the file
carries is never overridden, and a sidecar that contradicts it is an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: metadata every row must have (from the file or a sidecar); the error names the missing one
IDENTITY_FIELDS = ("engine", "engine_version", "device", "commit")
SCENARIO_FIELDS = ("context", "batch", "spec_tokens", "decode_steps")


#: every metric an importer may put on a row (what a gate's ``metric`` may name), with its meaning
METRICS = {
    "output_tokens_per_s": "generated tokens per second of wall time (mean over the runs of a file)",
    "latency_ms_per_token": "wall time per generated token, ms (speculative benchmark)",
    "memory_gb_mean": "device memory allocated after the runs, GB (speculative benchmark)",
    "memory_gb_max": "the largest of those, GB (speculative benchmark)",
    "mean_acceptance_length": "tokens committed per verify step, the bonus token included",
    "mean_acceptance_rate": "accepted / drafted tokens, a fraction",
    "accepted_tokens_total": "accepted draft tokens",
    "draft_tokens_total": "drafted tokens",
    "num_drafts": "draft steps",
    "fraction_steps_accept_ge2": "fraction of steps that accepted >= 2 tokens (speculative benchmark)",
    "request_throughput": "completed requests per second (serving benchmarks)",
    "completed_requests": "requests completed (serving benchmarks)",
    "failed_requests": "requests failed (serving benchmarks); a row with failures gives no figure",
    **{f"{lat}_ms_{stat}": f"{stat} {lat.upper()} in ms (serving benchmarks)"
       for lat in ("ttft", "tpot", "e2el") for stat in ("mean", "median", "p99")},
    **{f"itl_{kind}_ms_{stat}": f"{stat} inter-token latency {what} in ms (serving benchmarks)"
       for kind, what in (("chunk", "per streamed chunk (one verify step's tokens)"),
                          ("token", "per token (a chunk's gap divided among its tokens)"))
       for stat in ("mean", "median", "p99")},
}


#: physical bounds of each metric, checked on every row (a violation refuses the file): throughputs and
#: per-token latency are > 0, fractions lie in [0, 1], every other figure is >= 0; the acceptance length
#: (bonus token included) lies in [1, spec_tokens + 1] (see :meth:`EngineRow.__post_init__`)
POSITIVE = frozenset({"output_tokens_per_s", "latency_ms_per_token", "request_throughput"})
FRACTIONS = frozenset({"mean_acceptance_rate", "fraction_steps_accept_ge2"})


class ResultFormatError(ValueError):
    """A result file (or its sidecar) is malformed; the one-line message names the file and the field."""


@dataclass(frozen=True)
class EngineRow:
    engine: str
    engine_version: str
    device: str
    commit: str
    context: int
    batch: int
    spec_tokens: int  # 0 = the non-speculative baseline
    decode_steps: int  # generated tokens per request of the run
    metrics: dict[str, float]
    file: str  # path relative to the results folder
    file_sha256: str
    format: str
    label: str = ""  # the run's own scenario name, when the file has one
    line: int | None = None  # JSONL: the line of this record
    runs: int = 1  # measured repetitions behind the figures
    timestamp: str = ""
    provenance: str = "measured"
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Refuse a row no measurement can produce: a figure that is not a finite number (a string such
        as "131.2" included), a negative or zero throughput, a fraction outside [0, 1], an acceptance
        length outside [1, spec_tokens + 1], more accepted than drafted tokens, an empty scenario."""
        w = self.where
        for k, lo in (("context", 1), ("batch", 1), ("decode_steps", 1), ("spec_tokens", 0), ("runs", 1)):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ResultFormatError(f"{w}: field '{k}': expected an integer >= {lo}, got {v!r}")
        for k, v in self.metrics.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ResultFormatError(f"{w}: field '{k}': expected a number, got {v!r}")
            if not math.isfinite(v):
                raise ResultFormatError(f"{w}: field '{k}': not a finite number ({v!r})")
            if k in POSITIVE and v <= 0:
                raise ResultFormatError(f"{w}: field '{k}': {v!r} is not > 0")
            if k in FRACTIONS and not 0 <= v <= 1:
                raise ResultFormatError(f"{w}: field '{k}': {v!r} is not a fraction in [0, 1]")
            if v < 0:
                raise ResultFormatError(f"{w}: field '{k}': {v!r} is negative")
        acc = self.metrics.get("mean_acceptance_length")
        # a row without speculation (spec_tokens 0) that carries an acceptance length has no upper bound
        # to check it against here; the formats refuse such rows where they can tell
        if acc is not None and (acc < 1 or (self.spec_tokens > 0 and acc > self.spec_tokens + 1)):
            raise ResultFormatError(f"{w}: field 'mean_acceptance_length': {acc!r} is outside [1, spec_tokens + 1 "
                                    f"= {self.spec_tokens + 1}] (tokens per verify step, the bonus included)")
        got, drafted = self.metrics.get("accepted_tokens_total"), self.metrics.get("draft_tokens_total")
        if got is not None and drafted is not None and got > drafted:
            raise ResultFormatError(f"{w}: field 'accepted_tokens_total': {got!r} > draft_tokens_total {drafted!r}")

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def identity(self) -> tuple[str, str, str, str]:
        return (self.engine, self.engine_version, self.device, self.commit)

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("engine", "engine_version", "device", "commit", "context", "batch",
                                           "spec_tokens", "decode_steps", "label", "file", "line",
                                           "file_sha256", "format", "runs", "timestamp", "provenance")}
        d.update({f"metric.{k}": v for k, v in sorted(self.metrics.items())})
        return d


def number(where: str, fld: str, value: Any, *, integer: bool = False, allow_none: bool = False,
           positive: bool = False, nonnegative: bool = False) -> float | int | None:
    """``value`` as a finite JSON number, else a one-line error: a string ("131.2"; only an integer
    field may be written as decimal digits), a boolean, JSON
    NaN/Infinity or a number JSON parsed to ``inf`` (1e400) is refused, never converted. ``positive``
    / ``nonnegative``: the sign a physical figure must have."""
    if value is None and allow_none:
        return None
    if isinstance(value, str) and integer and value.strip().isdigit():
        value = int(value)  # metadata written as text (a sidecar's "16384", vLLM's --metadata k=v)
    if isinstance(value, (bool, str)) or not isinstance(value, (int, float)):
        raise ResultFormatError(f"{where}: field '{fld}': expected a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ResultFormatError(f"{where}: field '{fld}': expected a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ResultFormatError(f"{where}: field '{fld}': not a finite number ({value!r})")
    if positive and v <= 0:
        raise ResultFormatError(f"{where}: field '{fld}': {value!r} is not > 0")
    if nonnegative and v < 0:
        raise ResultFormatError(f"{where}: field '{fld}': {value!r} is negative")
    if integer:
        if v != int(v):
            raise ResultFormatError(f"{where}: field '{fld}': expected an integer, got {value!r}")
        return int(v)
    return v


def get(where: str, obj: Any, dotted: str, *, required: bool = True) -> Any:
    """``obj[a][b]`` for ``dotted = "a.b"``; a missing required key names the dotted field."""
    cur = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            if required:
                raise ResultFormatError(f"{where}: field '{dotted}': missing")
            return None
        cur = cur[part]
    return cur


def serving_metrics(obj: dict, where: str, latencies: dict[str, str]) -> dict[str, float]:
    """The metrics every serving benchmark summary shares (vLLM serve, sglang bench_serving): completed
    and failed requests, output and request throughput, and ``{lat}_ms_{mean,median,p99}`` read from
    ``{stat}_{key}_ms`` for each ``lat: key`` of ``latencies``."""
    completed = number(where, "completed", get(where, obj, "completed"), integer=True)
    if completed < 1:
        raise ResultFormatError(f"{where}: field 'completed': no request completed")
    m: dict[str, float] = {
        "output_tokens_per_s": number(where, "output_throughput", get(where, obj, "output_throughput"), positive=True),
        "request_throughput": number(where, "request_throughput", get(where, obj, "request_throughput"),
                                     positive=True),
        "completed_requests": completed,
        "failed_requests": number(where, "failed", obj.get("failed", 0), integer=True, nonnegative=True),
    }
    for lat, key in latencies.items():
        for stat in ("mean", "median", "p99"):
            k = f"{stat}_{key}_ms"
            if obj.get(k) is not None:
                m[f"{lat}_ms_{stat}"] = number(where, k, obj[k], nonnegative=True)
    return m

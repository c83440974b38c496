"""Metric definitions of the serving benchmark (one home; as serving engines define them).

* TTFT: first token time minus the request's arrival (queueing and prefill included);
* ITL: one sample per streamed chunk after the first token -- a verify step commits a chunk, and
  its ITL is the gap since the request's previous chunk (never the gap divided among its tokens);
* TPOT: (last token time - first token time) / (output tokens - 1), per finished request;
* tokens/s of a run: output tokens committed in the measured window / window length;
* goodput (``goodput``; ``device_runner.summarize`` applies the same rule to CSV rows): finished requests per second (and their tokens per second) meeting the contract's SLO
  (TTFT <= slo.ttft_ms and TPOT <= slo.tpot_ms);
* p50/p99 by ``numpy.percentile`` over every sample of a point (all runs pooled), valid only with
  >= measurement.min_samples samples.
A point is VALID only when every rule holds (runs, measured duration per run, samples, CoV); its
row lists each rule it misses."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eagle4.perf.stats import cov


@dataclass
class RequestTimes:
    arrival: float
    chunks: list[tuple[float, int]] = field(default_factory=list)  # (time, tokens) per streamed chunk
    target_tokens: int = 0

    @property
    def first(self) -> float | None:
        return self.chunks[0][0] if self.chunks else None

    @property
    def n_tokens(self) -> int:
        return sum(n for _, n in self.chunks)

    @property
    def finished(self) -> bool:
        return self.n_tokens >= self.target_tokens > 0

    @property
    def ttft(self) -> float | None:
        return None if self.first is None else self.first - self.arrival

    def itl(self) -> list[float]:
        t = [c[0] for c in self.chunks]
        return [b - a for a, b in zip(t, t[1:])]

    @property
    def tpot(self) -> float | None:
        n = self.n_tokens
        if not self.finished or n < 2:
            return None
        return (self.chunks[-1][0] - self.chunks[0][0]) / (n - 1)


def pct(x, q) -> float:
    x = np.asarray(x, float)
    return float(np.percentile(x, q)) if x.size else float("nan")


def goodput(reqs: list[RequestTimes], window_s: float, slo) -> tuple[float, float]:
    """(requests/s, tokens/s) of finished requests meeting the SLO."""
    ok = [r for r in reqs if r.finished and r.ttft is not None and r.tpot is not None
          and r.ttft * 1e3 <= slo.ttft_ms and r.tpot * 1e3 <= slo.tpot_ms]
    return len(ok) / window_s, sum(r.n_tokens for r in ok) / window_s


def validity(*, runs: int, durations: list[float], n_samples: dict[str, int], tps: list[float], contract) -> tuple[str, list[str]]:
    """("VALID" | "INVALID", the rules missed) of one operating point."""
    r, m = contract.runs, contract.measurement
    why = []
    if runs < r.runs:
        why.append(f"runs {runs} < {r.runs}")
    short = [d for d in durations if d < r.min_duration_s]
    if short:
        why.append(f"{len(short)} run(s) measured < {r.min_duration_s:g} s (min {min(short):.1f} s)")
    for k, n in n_samples.items():
        if n < m.min_samples:
            why.append(f"{k} samples {n} < {m.min_samples}")
    c = cov(tps) if len(tps) >= 2 else float("nan")
    if not np.isfinite(c) or c > r.cov_max:
        why.append(f"CoV(tokens/s) {c:.2%} > {r.cov_max:.0%}" if np.isfinite(c) else "CoV undefined")
    return ("INVALID" if why else "VALID"), why


__all__ = ["RequestTimes", "pct", "goodput", "validity"]

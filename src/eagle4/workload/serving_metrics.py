"""Metric definitions of the serving benchmark (one home; as serving engines define them).

* TTFT: first token time minus the request's arrival (queueing and prefill included);
* ITL: one sample per streamed chunk after the first token -- a verify step commits a chunk, and
  its ITL is the gap since the request's previous chunk (never the gap divided among its tokens);
* TPOT: (last token time - first token time) / (output tokens - 1), per finished request;
* tokens/s of a run: output tokens committed in the measured window / window length;
* goodput (``goodput``; ``runner.summarize_serving`` applies the same rule to CSV rows): finished requests per second (and their tokens per second) meeting the contract's SLO
  (TTFT <= slo.ttft_ms and TPOT <= slo.tpot_ms);
* p50/p99 by ``numpy.percentile`` over every sample of a point (all runs pooled), valid only with
  >= measurement.min_samples samples.
A point is VALID only when every rule holds (runs, measured duration per run, samples, CoV); its
row lists each rule it misses."""

from __future__ import annotations

from dataclasses import dataclass, field

from eagle4 import stats
from eagle4.validity import RunRule, summarize_runs


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
        return [b - a for a, b in zip(t, t[1:], strict=False)]

    @property
    def tpot(self) -> float | None:
        n = self.n_tokens
        if not self.finished or n < 2:
            return None
        return (self.chunks[-1][0] - self.chunks[0][0]) / (n - 1)


pct = stats.percentile


class TokenTimes:
    """TTFT, end-to-end time and per-token ITL of one request from its ``token_times`` (seconds since
    the request started, one per output token): one definition for the engine and the HTTP client."""

    token_times: list[float]

    @property
    def ttft(self) -> float:
        return self.token_times[0] if self.token_times else float("nan")

    @property
    def e2e(self) -> float:
        return self.token_times[-1] if self.token_times else float("nan")

    def itl(self) -> list[float]:
        return token_itl(self.token_times)


def token_itl(token_times) -> list[float]:
    """Inter-token latency per token after the first, from per-token times: a step (chunk) that
    commits k tokens after a gap g contributes k entries of g/k (tokens are counted, not steps)."""
    out: list[float] = []
    t = list(token_times)
    i = 1
    while i < len(t):
        j = i
        while j + 1 < len(t) and t[j + 1] == t[i]:
            j += 1
        k = j - i + 1
        out += [(t[i] - t[i - 1]) / k] * k
        i = j + 1
    return out


def chunk_itl(token_times) -> list[float]:
    """ITL per streamed chunk from per-token times (tokens of one chunk share its time)."""
    t = sorted(set(float(x) for x in token_times))
    return [b - a for a, b in zip(t, t[1:], strict=False)]


def goodput(reqs: list[RequestTimes], window_s: float, slo) -> tuple[float, float]:
    """(requests/s, tokens/s) of finished requests meeting the SLO."""
    ok = [r for r in reqs if r.finished and r.ttft is not None and r.tpot is not None
          and r.ttft * 1e3 <= slo.ttft_ms and r.tpot * 1e3 <= slo.tpot_ms]
    return len(ok) / window_s, sum(r.n_tokens for r in ok) / window_s


def validity(run_rows, *, n_samples: dict[str, int], contract) -> tuple[str, list[str], float]:
    """("VALID" | "INVALID", every rule missed, CoV(tokens/s)) of one operating point: the run rule
    of ``eagle4.validity`` (runs, CoV, measured duration, contract hash, provenance) plus the serving
    rules (>= measurement.min_samples per percentile, steady state reached in every run)."""
    s = summarize_runs(run_rows, value="tokens_per_s", rule=RunRule.from_contract(contract), duration="window_s",
                       contract_sha256=contract.sha256, require_hash=True)
    why = list(s.reasons)
    for k, n in n_samples.items():
        if n < contract.measurement.min_samples:
            why.append(f"{k} samples {n} < {contract.measurement.min_samples}")
    if not all(str(r.get("steady_state")) == "True" for r in run_rows):
        why.append("steady state not reached in every run")
    return ("INVALID" if why else "VALID"), why, s.cov


__all__ = ["RequestTimes", "pct", "goodput", "validity"]

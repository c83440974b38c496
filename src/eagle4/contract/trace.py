"""The contract's ``[trace]`` section: how the byte/budget accounting's deterministic decode trace is
drawn (prefix length, cycles per batch size, seed, where accept lengths come from).

Validated by the contract loader; read by :func:`eagle4.budget.trace.build_trace`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from eagle4.contract.base import Section


class TraceSection(Section):
    """The contract's ``[trace]`` section."""

    prefix_len: int | None = Field(None, ge=0, le=131072, description=(
        "committed prefix length L of every request; default prompts.prompt_tokens + prompts.output_tokens // 2"))
    cycles_per_batch: int = Field(4, ge=1, le=64)
    seed: int = 7
    batches: list[int] | None = Field(None, description="batch sizes; default: the operating points' batches")
    accept_source: Literal["auto", "measured", "declared"] = "auto"
    measured_csv: str = "reports/acceptance_lengths.csv"
    declared_accept: list[float] = Field(
        default_factory=lambda: [0.10, 0.15, 0.20, 0.25, 0.15, 0.15],
        description="P(accept length = i), i = 0..len-1 (declared, not measured); normalised")

    @model_validator(mode="after")
    def _probs(self):
        if any(p < 0 for p in self.declared_accept) or sum(self.declared_accept) <= 0:
            raise ValueError("declared_accept must be non-negative with a positive sum")
        return self

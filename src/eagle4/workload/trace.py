"""Deterministic workload trace for the byte and budget accounting (decode cycles of draft + verify).

From the contract: ``[decode]`` (node_top_k, tree_depth, verify_num, max_tree_width, width_policy,
temperatures, capacities), the batch profile (``[[operating_points]]``, or ``[trace].batches``), the
model dimensions (``[fpga.model]``: vocabulary, hot vocabulary, hidden size, drafter dimensions,
dtypes) and ``[trace]`` (prefix length, cycles per batch size, seed, where accept lengths come from).

One cycle = one draft step (``D_max`` draft layers: widths ``[1, W, W, ...]``) followed by one verify
step of ``Q = min(Vn, cc)`` tokens per request and the accept length of each request.

Accept lengths come from measured acceptance when the e2e driver's CSV exists (a CSV with an
``accept_length`` column, one row per request and verify step: provenance ``measured``), else from the
distribution declared in ``[trace].declared_accept`` (provenance ``declared``).
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator


class TraceSection(BaseModel):
    """The contract's ``[trace]`` section (validated here; the contract loader keeps it raw)."""

    model_config = ConfigDict(extra="forbid")
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


@dataclass
class Cycle:
    index: int
    batch: int
    widths: list[int]
    verify_num: int
    Q: int
    accept: list[int]
    temperatures: list[float]

    @property
    def tokens(self) -> int:
        return sum(a + 1 for a in self.accept)


@dataclass
class Trace:
    cycles: list[Cycle]
    accept_provenance: str  # "measured" | "declared"
    accept_source: str
    decode: dict[str, Any]
    model: dict[str, Any]
    prefix_len: int
    contract_sha256: str
    notes: list[str] = field(default_factory=list)

    @property
    def batches(self) -> list[int]:
        return sorted({c.batch for c in self.cycles})

    @property
    def mean_accept(self) -> float:
        a = [x for c in self.cycles for x in c.accept]
        return float(np.mean(a)) if a else 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


# ---------------------------------------------------------------------------------------------
# contract access (a Contract object, a raw dict, or a path)


def contract_dict(contract) -> dict:
    """The contract as a plain dict (the sections this module reads)."""
    if isinstance(contract, dict):
        return contract
    if isinstance(contract, (str, Path)):
        try:
            from eagle4.contract import load_contract

            c = load_contract(contract, verify_files=False)
            return contract_dict(c)
        except Exception:  # noqa: BLE001 - fall back to the raw TOML (the loader may reject other sections)
            import tomllib

            return tomllib.loads(Path(contract).read_text(encoding="utf-8"))
    if hasattr(contract, "canonical"):
        return contract.canonical()
    raise TypeError(f"cannot read a contract from {type(contract).__name__}")


def contract_sha256(contract) -> str:
    if hasattr(contract, "sha256") and not isinstance(contract, (dict, str, Path)):
        return contract.sha256
    if isinstance(contract, (str, Path)):
        try:
            from eagle4.contract import load_contract

            return load_contract(contract, verify_files=False).sha256
        except Exception:  # noqa: BLE001
            pass
    d = contract_dict(contract)
    d = {k: v for k, v in d.items() if k not in ("source_path", "root_dir")}
    return hashlib.sha256(json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()).hexdigest()


def _measured_accepts(path: Path, sha: str | None = None) -> list[int] | None:
    """Accepted draft tokens per request and verify step from the e2e driver's CSV (rows of this
    contract only, provenance 'measured'); None when there are none."""
    if not path.is_file():
        return None
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if sha:  # rows without a contract hash (or of another contract) are refused, never taken as this one's
        rows = [r for r in rows if r.get("contract_sha256") == sha]
    rows = [r for r in rows if r.get("provenance", "measured") == "measured"]
    vals = [int(float(r["accept_length"])) for r in rows if r.get("accept_length") not in (None, "")]
    return vals or None


def build_trace(contract, *, root: str | Path | None = None) -> Trace:
    """The deterministic trace of the contract (same contract + same measured CSV -> same trace)."""
    from eagle4.budget.config import fpga_section

    d = contract_dict(contract)
    dec = d.get("decode", {})
    tr = TraceSection.model_validate(d.get("trace", {}))
    fpga = fpga_section(d)
    K = int(dec.get("node_top_k", 8))
    D = int(dec.get("tree_depth", 6))
    Wmax = int(dec.get("max_tree_width", K))
    Vn = int(dec.get("verify_num", 64))
    N = int(dec.get("max_node_count", 1024))
    M = int(dec.get("max_verify_num", 128))
    temps = [float(t) for t in dec.get("temperatures", [1.0])]
    policy = dec.get("width_policy", "fixed")
    notes = []
    if policy != "fixed":
        notes.append(f"width_policy={policy!r}: the byte trace uses the fixed schedule W = max_tree_width "
                     "(the K3-driven policy needs the e2e driver's widths)")
    widths = [1] + [Wmax] * (D - 1)
    cc = 1 + K * sum(widths)
    Q = min(max(1, min(Vn, M)), min(cc, N))
    batches = tr.batches or sorted({int(p["batch"]) for p in d.get("operating_points", [])}) or [1]
    root = Path(root) if root else Path(d.get("root_dir") or Path(__file__).resolve().parents[3])
    measured = None
    if tr.accept_source in ("auto", "measured"):
        measured = _measured_accepts(root / tr.measured_csv, contract_sha256(contract))
        if measured is None and tr.accept_source == "measured":
            raise FileNotFoundError(f"[trace].accept_source = 'measured' but {tr.measured_csv} is missing")
    rng = np.random.default_rng(tr.seed)
    S = D + 1
    if measured is not None:
        vals = np.clip(np.array(measured), 0, S - 1)
        prov, src = "measured", tr.measured_csv
    else:
        p = np.array(tr.declared_accept, float)
        p = p / p.sum()
        prov, src = "declared", "[trace].declared_accept"
    cycles = []
    i = 0
    for B in batches:
        for _ in range(tr.cycles_per_batch):
            if measured is not None:
                acc = [int(x) for x in rng.choice(vals, size=B)]
            else:
                acc = [int(min(x, S - 1, Q - 1)) for x in rng.choice(len(p), size=B, p=p)]
            cycles.append(Cycle(i, B, list(widths), Vn, Q, acc, [temps[b % len(temps)] for b in range(B)]))
            i += 1
    decode = {"K": K, "D": D, "W": Wmax, "Vn": Vn, "N": N, "M": M, "I": int(dec.get("max_input_size", 64)),
              "S": S, "threshold_single": float(dec.get("threshold_single", 1.0)),
              "threshold_acc": float(dec.get("threshold_acc", 1.0)), "widths": widths, "Q": Q}
    if tr.prefix_len is not None:
        L = tr.prefix_len
    else:
        pr = d.get("prompts", {})
        L = int(pr.get("prompt_tokens", 2048)) + int(pr.get("output_tokens", 0)) // 2
        notes.append(f"prefix length L = prompts.prompt_tokens + prompts.output_tokens//2 = {L} (mid-generation)")
    return Trace(cycles, prov, src, decode, fpga.model.model_dump(), L, contract_sha256(contract), notes)

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
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eagle4.contract import (
    as_contract,
    contract_dict,
    contract_sha256,
    fpga_section,
    note_outside,
    sha256_file,
    trace_section,
)

# contract_dict / contract_sha256 live in eagle4.contract; re-exported for existing callers
__all__ = ["Cycle", "Trace", "build_trace", "contract_dict", "contract_sha256"]


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
    accept_sha256: str = ""  # sha256 of the measured acceptance CSV the accept lengths were drawn from

    @property
    def batches(self) -> list[int]:
        return sorted({c.batch for c in self.cycles})

    @property
    def mean_accept(self) -> float:
        a = [x for c in self.cycles for x in c.accept]
        return float(np.mean(a)) if a else 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


def _measured_accepts(path: Path, sha: str | None = None, most: int | None = None) -> list[int] | None:
    """Accepted draft tokens per request and verify step from the e2e driver's CSV (rows of this
    contract only, provenance 'measured'); None when there are none. A file without an
    ``accept_length`` column, or a value that is not an integer in [0, ``most``], is a one-line error
    naming file, row and field: nothing is clipped or replaced silently."""
    if not path.is_file():
        return None
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        rows = list(enumerate(reader, start=2))
        fields = reader.fieldnames or []
    if "accept_length" not in fields:
        raise ValueError(f"{path}: field 'accept_length': no such column (columns {fields[:8]}); "
                         "not an acceptance-length CSV")
    if sha:  # rows without a contract hash (or of another contract) are refused, never taken as this one's
        rows = [(n, r) for n, r in rows if r.get("contract_sha256") == sha]
    rows = [(n, r) for n, r in rows if r.get("provenance", "measured") == "measured"]
    vals = []
    for n, r in rows:
        raw = r.get("accept_length")
        if raw in (None, ""):
            continue
        try:
            v = float(raw)
        except ValueError:
            raise ValueError(f"{path}:{n}: field 'accept_length': {raw!r} is not a number") from None
        if not v.is_integer() or v < 0 or (most is not None and v > most):
            raise ValueError(f"{path}:{n}: field 'accept_length': {raw} is not an integer in [0, {most}] "
                             "(accepted draft tokens of one verify step)")
        vals.append(int(v))
    return vals or None


def build_trace(contract, *, root: str | Path | None = None) -> Trace:
    """The deterministic trace of the contract (same contract + same measured CSV -> same trace)."""
    contract = as_contract(contract)
    d = contract_dict(contract)
    dec = d.get("decode", {})
    tr = trace_section(contract)
    fpga = fpga_section(contract)
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
    c_root = contract.root_dir
    root = Path(root) if root else Path(c_root or Path(__file__).resolve().parents[3])
    measured = None
    if tr.accept_source in ("auto", "measured"):
        measured = _measured_accepts(root / tr.measured_csv, contract_sha256(contract), most=D)
        if measured is None and tr.accept_source == "measured":
            raise FileNotFoundError(f"[trace].accept_source = 'measured' but {tr.measured_csv} is missing")
    rng = np.random.default_rng(tr.seed)
    S = D + 1
    if measured is not None:
        vals = np.clip(np.array(measured), 0, S - 1)
        prov, src = "measured", tr.measured_csv
        accept_sha = sha256_file(root / tr.measured_csv)
        note_outside(root, "trace.measured_csv", root / tr.measured_csv, accept_sha)
        notes.append(f"accept lengths drawn from {tr.measured_csv} (sha256 {accept_sha[:16]}, rows of this contract)")
    else:
        p = np.array(tr.declared_accept, float)
        p = p / p.sum()
        prov, src = "declared", "[trace].declared_accept"
        accept_sha = ""
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
    return Trace(cycles, prov, src, decode, fpga.model.model_dump(), L, contract_sha256(contract), notes, accept_sha)

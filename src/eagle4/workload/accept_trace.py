"""The accept-length trace of a contract (``[acceptance] source = "trace"``): the accepted draft
tokens per verify step, measured on a trained pair, replayed by the device engine (K6/K7 are driven
to reproduce it). Rows carry ``label`` so every number says where its acceptance came from."""

from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np
import torch

from eagle4.contract import ContractError, sha256_file


@dataclass(frozen=True)
class AcceptTrace:
    path: str
    sha256: str
    lengths: np.ndarray  # int64, accepted draft tokens per verify step, file order
    measured_on: str

    @property
    def label(self) -> str:
        return f"{self.path}@{self.sha256[:12]}"

    @property
    def row_note(self) -> str:
        return f"time: measured at deployment shape; acceptance: {self.label}"


def load_accept_trace(contract) -> AcceptTrace:
    a = contract.acceptance
    if a.source != "trace":
        raise ContractError(f"{contract.source_path}: acceptance.source = {a.source!r}: no trace to load")
    p = contract.resolve(a.trace)
    got = sha256_file(p)
    if got != a.sha256:
        raise ContractError(f"{contract.source_path}: acceptance.sha256: {a.trace} has sha256 {got}, "
                            f"the contract pins {a.sha256}")
    with open(p, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "accept_length" not in rows[0]:
        raise ContractError(f"{a.trace}: no accept_length column")
    lengths = np.asarray([int(r["accept_length"]) for r in rows], np.int64)
    D = contract.decode.tree_depth
    if lengths.min() < 0 or lengths.max() > D:
        raise ContractError(f"{a.trace}: accept lengths must lie in 0..tree_depth={D}, got "
                            f"{lengths.min()}..{lengths.max()}")
    return AcceptTrace(a.trace, got, lengths, a.measured_on)



def drive_predict(predict: torch.Tensor, cand: torch.Tensor, parent: torch.Tensor, depth: torch.Tensor,
                  lengths: torch.Tensor, cursor: torch.Tensor, D: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """K6's ``target_predict [B, Q]`` such that its greedy walk accepts ``min(trace length, tree
    depth)`` tokens along the root path to the first node of that depth (``cand``/``parent``/``depth``:
    the verify tree's tokens, local parents and depths; ``lengths``: the trace on the device;
    ``cursor [B]``: each row's trace position). Returns (predict, the rows' trace lengths [B])."""
    B, Q = cand.shape
    a = lengths[cursor % lengths.numel()]
    tgt = torch.minimum(a, depth.max(1).values)
    t = torch.arange(Q, device=cand.device).view(1, Q)
    end = torch.where(depth == tgt.view(B, 1), t, t + Q).argmin(1)
    pred = predict.clone()
    cur = end
    for _ in range(D):
        p = parent.gather(1, cur.view(B, 1)).view(B)
        ok = p >= 0
        pc = p.clamp(min=0).view(B, 1)
        pred.scatter_(1, pc, torch.where(ok.view(B, 1), cand.gather(1, cur.view(B, 1)), pred.gather(1, pc)))
        cur = torch.where(ok, p, cur)
    kid = torch.where(parent == end.view(B, 1), cand, torch.full_like(cand, -1)).max(1).values
    pred.scatter_(1, end.view(B, 1), ((kid + 1) % vocab).view(B, 1))
    return pred, a


__all__ = ["AcceptTrace", "drive_predict", "load_accept_trace"]

"""The speculative tree's sizes of a contract's ``[decode]`` section under their KERNELS.md names:
the common part of the engine's static shape (``eagle4.workload.engine.Shape``) and the kernel
bench's sizes (``eagle4.perf.points.BenchShape``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from eagle4.contract import Decode


@dataclass(frozen=True)
class TreeSizes:
    K: int   # node_top_k: children per frontier node
    W: int   # max_tree_width: the frontier width
    D: int   # tree_depth: draft layers per step
    Vn: int  # verify_num: verify tokens per request
    N: int   # max_node_count: draft-tree capacity
    M: int   # max_verify_num: verify-buffer capacity
    I: int   # noqa: E741 (KERNELS.md's name) max_input_size: draft-mask capacity

    @property
    def S(self) -> int:
        """Tokens a verify step commits at most (D + 1)."""
        return self.D + 1

    @classmethod
    def from_decode(cls, d: Decode, **more) -> Self:
        """From a contract's ``Decode``; ``more``: the subclass's own fields. W is at most K (the
        contract already requires it)."""
        return cls(K=d.node_top_k, W=min(d.max_tree_width, d.node_top_k), D=d.tree_depth, Vn=d.verify_num,
                   N=d.max_node_count, M=d.max_verify_num, I=d.max_input_size, **more)

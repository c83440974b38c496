"""Tensor parallelism of the dummy deployment models on :mod:`torch.distributed` (Megatron layout).

* :class:`TensorParallel`: this process's rank, the world size and the process group. The target's
  q/k/v and gate/up projections are column-parallel, its o and down projections row-parallel; each
  rank holds ``kv_heads / world`` KV heads (with their query heads) and ``intermediate / world`` MLP
  columns, so a decoder layer's attention part and MLP part each return a partial sum, and
  ``x = x + tp.all_reduce(part(...))`` completes it (identity at world 1). Embedding, norms, the
  fc, the LM head and the whole draft head are replicated: every rank computes the full logits and
  runs the seven tree kernels on the same inputs, so every rank holds the same tree and the same
  committed tokens and no broadcast is needed.
* :func:`for_contract`: the TensorParallel of a contract's ``[model] tp``, joining the process group
  that ``torchrun`` (or :mod:`eagle4.workload.tp_launch`) describes in the environment: NCCL on CUDA,
  gloo on the CPU, a bounded timeout on every collective.
* :class:`BlockGen`: the dummy weights, generated per rank for its shard only (a 70B target does not
  fit one GPU), yet identical at every TP degree. Every weight is cut into blocks, and block ``j`` of
  tensor ``name`` in layer ``l`` is drawn from its own generator seeded by
  ``sha256(f"{seed}/{name}/{l}/{j}")``: q/k/v and o per KV-head group (``kv_heads`` blocks: the
  group's query heads, its K head and its V head), gate/up and down per block of
  ``intermediate / MLP_BLOCKS(intermediate)`` MLP columns; replicated tensors are one block. A rank
  draws only its blocks, and the blocks of all ranks side by side are the tensor of TP=1 exactly.
  Generators on CUDA and on the CPU draw different numbers; on one device kind the weights depend
  on the seed alone.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import os
from dataclasses import dataclass
from typing import Any

import torch

MAX_MLP_BLOCKS = 64  # MLP column blocks: gcd(intermediate, 64); a TP degree must divide it
DEFAULT_TIMEOUT_S = 300.0  # a collective that waits longer names a dead or hung peer (EAGLE4_TP_TIMEOUT_S)
RENDEZVOUS_S = 600.0  # how long the ranks wait for each other to start
PEER_FAILED_EXIT = 75  # a rank's exit status when a collective failed because of another rank


class PeerFailure(RuntimeError):
    """A collective failed or timed out: another rank died or hangs (this rank is a bystander)."""


def mlp_blocks(intermediate: int) -> int:
    return math.gcd(intermediate, MAX_MLP_BLOCKS)


@dataclass(frozen=True)
class TensorParallel:
    rank: int = 0
    world: int = 1
    group: Any = None  # the torch.distributed process group (None at world 1)
    ctrl: Any = None  # a gloo group over the same ranks for host-side decisions (agree)

    def local(self, n: int, what: str) -> int:
        """This rank's share of ``n`` (heads, KV heads, columns); ``n`` must split evenly."""
        if n % self.world:
            raise ValueError(f"tp={self.world} does not divide {what}={n}")
        return n // self.world

    def blocks(self, n: int, what: str) -> range:
        """This rank's contiguous blocks out of ``n``."""
        k = self.local(n, what)
        return range(self.rank * k, (self.rank + 1) * k)

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        """Sum of ``x`` over the ranks, in place (``x`` is a fresh partial output); identity at world 1."""
        if self.world == 1:
            return x
        import torch.distributed as dist

        try:
            dist.all_reduce(x, group=self.group)
        except (RuntimeError, dist.DistError) as e:
            raise PeerFailure(f"tp rank {self.rank}: all_reduce failed: {str(e).splitlines()[0]}") from None
        return x

    def agree(self, flag: bool) -> bool:
        """Rank 0's ``flag`` on every rank (identity at world 1): a decision taken on a local clock
        (steady state, end of a window) must be the same on every rank or the collectives desynchronize."""
        if self.world == 1:
            return flag
        import torch.distributed as dist

        t = torch.tensor([int(flag)], dtype=torch.int32)  # host tensor on the gloo group: no GPU work
        try:
            dist.broadcast(t, 0, group=self.ctrl if self.ctrl is not None else self.group)
        except (RuntimeError, dist.DistError) as e:
            raise PeerFailure(f"tp rank {self.rank}: broadcast failed: {str(e).splitlines()[0]}") from None
        return bool(t.item())


SINGLE = TensorParallel()
_CTRL = None  # the control group of this process's default group (created once)


def timeout_s() -> float:
    return float(os.environ.get("EAGLE4_TP_TIMEOUT_S", DEFAULT_TIMEOUT_S))


def init(tp: int, device: str | torch.device = "cpu") -> TensorParallel:
    """Join (or reuse) the default process group of ``tp`` ranks that the launcher describes in the
    environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``)."""
    if tp == 1:
        return SINGLE
    import torch.distributed as dist

    dev = torch.device(device)
    if not dist.is_initialized():
        if "WORLD_SIZE" not in os.environ:
            raise ValueError(f"tp={tp} needs one process per rank: run it under "
                             f"`torchrun --nproc-per-node {tp} -m ...` (or eagle4.workload.tp_launch)")
        world = int(os.environ["WORLD_SIZE"])
        if world != tp:
            raise ValueError(f"the contract says tp={tp} but the launcher started WORLD_SIZE={world} ranks")
        if dev.type == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        backend, wait = "nccl" if dev.type == "cuda" else "gloo", datetime.timedelta(seconds=timeout_s())
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":  # torchrun hosts the store
            dist.init_process_group(backend, timeout=wait)
        else:  # our own store: a rank that starts late joins (RENDEZVOUS_S); collectives keep the short wait
            rank = int(os.environ["RANK"])
            store = dist.TCPStore(os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ["MASTER_PORT"]), world,
                                  rank == 0, timeout=datetime.timedelta(seconds=RENDEZVOUS_S))
            dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=wait)
    if dist.get_world_size() != tp:
        raise ValueError(f"the contract says tp={tp} but the process group has {dist.get_world_size()} ranks")
    global _CTRL
    if _CTRL is None:
        _CTRL = dist.group.WORLD if dist.get_backend() == "gloo" else \
            dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=timeout_s()))
    return TensorParallel(dist.get_rank(), tp, dist.group.WORLD, _CTRL)


def for_contract(contract, device: str | torch.device = "cpu") -> TensorParallel:
    """The TensorParallel of ``[model] tp`` (:data:`SINGLE` at 1)."""
    return init(getattr(contract.model, "tp", 1), device)


def _block_seed(seed: int, name: str, layer: int, block: int) -> int:
    h = hashlib.sha256(f"{seed}/{name}/{layer}/{block}".encode()).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 63) - 1)


class BlockGen:
    """Deterministic per-block weights of one model (see the module docstring); ``tp`` picks the shard."""

    def __init__(self, seed: int, device, dtype, tp: TensorParallel = SINGLE):
        self.seed, self.device, self.dtype, self.tp = int(seed), torch.device(device), dtype, tp

    def _draw(self, name: str, layer: int, block: int, shape, std: float) -> torch.Tensor:
        g = torch.Generator(device=self.device).manual_seed(_block_seed(self.seed, name, layer, block))
        return (torch.randn(shape, generator=g, device=self.device, dtype=torch.float32) * std).to(self.dtype)

    def full(self, name: str, *shape: int, std: float = 0.02, layer: int = 0) -> torch.Tensor:
        """A replicated tensor (one block)."""
        return self._draw(name, layer, 0, shape, std)

    def ones(self, n: int) -> torch.Tensor:
        return torch.ones(n, device=self.device, dtype=self.dtype)

    def qkv(self, name: str, layer: int, in_dim: int, heads: int, kv_heads: int, hd: int) -> torch.Tensor:
        """Column-parallel fused q/k/v ``[in_dim, (nh_local + 2*nkv_local)*hd]``, laid out
        ``[q heads | k heads | v heads]`` of this rank's KV-head groups."""
        grp = heads // kv_heads
        parts = [self._draw(name, layer, g, (in_dim, (grp + 2) * hd), 0.02)
                 for g in self.tp.blocks(kv_heads, "num_kv_heads")]
        return torch.cat([p[:, : grp * hd] for p in parts] + [p[:, grp * hd: (grp + 1) * hd] for p in parts]
                         + [p[:, (grp + 1) * hd:] for p in parts], 1)

    def o(self, name: str, layer: int, heads: int, kv_heads: int, hd: int, out: int) -> torch.Tensor:
        """Row-parallel o projection ``[nh_local*hd, out]`` (the rows of this rank's query heads)."""
        grp = heads // kv_heads
        return torch.cat([self._draw(name, layer, g, (grp * hd, out), 0.02)
                          for g in self.tp.blocks(kv_heads, "num_kv_heads")], 0)

    def gate_up(self, name: str, layer: int, hidden: int, inter: int) -> torch.Tensor:
        """Column-parallel fused gate/up ``[hidden, 2*I_local]`` laid out ``[gate | up]``."""
        nb = mlp_blocks(inter)
        bw = inter // nb
        parts = [self._draw(name, layer, j, (hidden, 2 * bw), 0.02) for j in self.tp.blocks(nb, "MLP column blocks")]
        return torch.cat([p[:, :bw] for p in parts] + [p[:, bw:] for p in parts], 1)

    def down(self, name: str, layer: int, inter: int, hidden: int) -> torch.Tensor:
        """Row-parallel down projection ``[I_local, hidden]``."""
        nb = mlp_blocks(inter)
        return torch.cat([self._draw(name, layer, j, (inter // nb, hidden), 0.02)
                          for j in self.tp.blocks(nb, "MLP column blocks")], 0)


__all__ = ["BlockGen", "DEFAULT_TIMEOUT_S", "PEER_FAILED_EXIT", "PeerFailure", "SINGLE", "TensorParallel",
           "for_contract", "init", "mlp_blocks"]

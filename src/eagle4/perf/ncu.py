"""Nsight Compute DRAM bytes of our kernels: one launch per point, counters parsed from ncu's CSV.

``ncu --csv --print-units base --cache-control all --metrics dram__bytes_read.sum,dram__bytes_write.sum
-k regex:<KERNEL_REGEX> python -m eagle4.perf.kernel_bench ncu-probe --contract C`` runs
:func:`ncu_probe`, which launches each point's op once (``draft_step`` is skipped: its three kernels
are the K1, K2 and K3 points). Caches are flushed before each launch; writes still in L2 when the
kernel ends are not counted by ``dram__bytes_write``.
"""

from __future__ import annotations

import csv
import io
import os
import re
import sys
from pathlib import Path

from eagle4.perf.points import BenchShape, Point

# our kernels' names (k<N>_kernel; K5: k5s1_kernel the shared-memory kernel in one round, k5r1_kernel / k5r14_kernel /
# k5rn_kernel the register kernel unbounded, held to 4 blocks an SM and in narrow blocks; K6: k6r_kernel the register
# form): the ncu filter of scripts/bench_h100_kernels.sh and the parser read this one pattern, so a new kernel form
# cannot be profiled and then dropped (tests/harness/test_ncu_parse.py checks it against every kernel of cuda/)
KERNEL_REGEX = r"k[1-7][rs]?[1n]?4?_kernel"
# the one-launch draft step's kernel: not an ncu point (probed)
NOT_PROBED = {"step_kernel"}


def kernel_names(src: str) -> set[str]:
    """The ``__global__`` functions of a CUDA source's text."""
    return set(re.findall(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(", src))


def unprofiled_kernels(src: str) -> list[str]:
    """The kernels of a CUDA source's text that KERNEL_REGEX does not admit: the bench's ncu step would profile
    fewer launches than points and its report step refuse them (8ed4d4d's bench, after its five runs)."""
    return sorted(n for n in kernel_names(src) - NOT_PROBED if not re.fullmatch(KERNEL_REGEX, n))


def source_text(path: str | os.PathLike) -> str:
    """A kernel source's text: one file's, or a folder's source files' (ours: cuda/) one after the other."""
    from eagle4.backends.cuda import source_files

    return "\n".join(f.read_text() for f in source_files(path))


def check_source(path: str | os.PathLike) -> None:
    """Exit with a one-line error naming the source and its unprofiled kernels (the bench's preflight)."""
    missing = unprofiled_kernels(source_text(path))
    if missing:
        raise SystemExit(f"{path}: kernels {', '.join(missing)} are not admitted by eagle4.perf.ncu.KERNEL_REGEX, so the "
                         "bench's Nsight Compute step would miss their launches: widen the pattern first")


def probed(points: list[Point]) -> list[Point]:
    return [p for p in points if p.kernel != "draft_step"]


def ncu_probe(shape: BenchShape, points: list[Point]) -> None:
    import torch

    from eagle4.backends.cuda import CudaBackend
    from eagle4.perf.inputs import abi_args, make_call

    backend = CudaBackend()
    dev = torch.device("cuda", 0)
    for p in probed(points):
        tensors, params = make_call(p, dev)
        op = backend.op(p.kernel)
        torch.cuda.synchronize()
        op(*abi_args(p.kernel, tensors, params))
        torch.cuda.synchronize()
        print(f"NCU_POINT {Path(shape.contract_path).stem} {p.pid}", file=sys.stderr, flush=True)
        del tensors
        torch.cuda.empty_cache()


def parse_ncu_csv(path: Path, shapes_points: list[tuple[str, list[Point]]]) -> dict[tuple[str, str], float]:
    """DRAM bytes (read + write) per (contract name, point id), matched in launch order."""
    text = Path(path).read_text(errors="replace")
    start = text.find('"ID"')
    if start < 0:
        return {}
    per_launch: dict[str, float] = {}
    order: list[str] = []
    for r in csv.DictReader(io.StringIO(text[start:])):
        kid, name = r.get("ID"), r.get("Kernel Name") or ""
        if not kid or not re.match(rf"(?:void\s+)?{KERNEL_REGEX}\b", name):  # templates print as "void k..."
            continue
        if kid not in per_launch:
            order.append(kid)
            per_launch[kid] = 0.0
        try:
            per_launch[kid] += float(str(r.get("Metric Value", "0")).replace(",", ""))
        except ValueError:
            pass
    keys = [(c, p.pid) for c, pts in shapes_points for p in probed(pts)]
    if len(order) != len(keys):
        raise ValueError(f"{path}: {len(order)} profiled launches of our kernels for {len(keys)} probed points; "
                         "the probe and the profile disagree")
    return {k: per_launch[i] for k, i in zip(keys, order, strict=True)}

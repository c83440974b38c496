"""One measured run = one child process (both serving runners): the JSON result protocol, core
pinning and a frozen garbage collector over the measured window, recorded in the rows."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def pin_core(run_index: int, core: int | None = None) -> int | None:
    """Pin this process to one CPU (``core``, else one per run index, skipping CPU 0 where the
    system's interrupts land by default); returns the CPU, or None where affinity is unsupported."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    pinned = cpus[(core if core is not None else 1 + run_index) % len(cpus)]
    os.sched_setaffinity(0, {pinned})
    return pinned


@contextlib.contextmanager
def frozen_gc(enabled: bool = True):
    """Collect, freeze and disable the garbage collector for the measured window (no collection
    pause lands inside a timed step), then restore it."""
    if not enabled:
        yield
        return
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


def run_child(module: str, args: list[str], *, timeout_s: float, what: str) -> dict:
    """``python -m module --child ... --result FILE`` with ``src`` on the path; its JSON result.
    A failed or silent child is an error naming ``what`` (the wait is bounded by ``timeout_s``)."""
    with tempfile.TemporaryDirectory() as td:
        res_path = Path(td) / "result.json"
        cmd = [sys.executable, "-m", module, "--child", *args, "--result", str(res_path)]
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{what}: no result within {timeout_s:g} s") from None
        if cp.returncode != 0:
            raise RuntimeError(f"{what} failed (exit {cp.returncode}):\n{cp.stderr[-3000:]}")
        return json.loads(res_path.read_text())


__all__ = ["frozen_gc", "pin_core", "run_child"]

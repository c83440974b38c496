"""The environment manifest: what ran where, written beside every artifact pack."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from eagle4.report import atomic
from eagle4.vcs import git_state  # noqa: F401 - the one commit helper (check, dump-catalog import it here)

REPO = Path(__file__).resolve().parents[3]


def _cmd(args: list[str], timeout: float = 20) -> str | None:
    if not shutil.which(args[0]):
        return None
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout or out.stderr).strip() or None


def collect() -> dict[str, str]:
    """Key -> value lines; absent tools are reported as absent, never guessed."""
    m: dict[str, str] = {}
    g = git_state()
    m["created_utc"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    m["git_commit"] = g["commit"]
    m["git_dirty"] = str(g["dirty"]).lower()
    m["host"] = platform.node()
    m["platform"] = platform.platform()
    m["cpu_count"] = str(os.cpu_count())
    m["python"] = sys.version.split()[0]
    for mod in ("numpy", "torch", "ml_dtypes", "pytest", "hypothesis", "hls4ml"):
        try:
            m[mod] = __import__(mod).__version__
        except Exception:  # not installed is a fact worth recording
            m[mod] = "absent"
    m["gxx"] = (_cmd(["g++", "--version"]) or "absent").splitlines()[0]
    m["nvcc"] = (_cmd(["nvcc", "--version"]) or "absent").splitlines()[-1]
    try:
        import torch
        m["torch_cuda_build"] = str(torch.version.cuda)
        if torch.cuda.is_available():
            m["cuda_device"] = torch.cuda.get_device_name(0)
    except Exception:
        pass
    smi = _cmd(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,"
                "power.limit,temperature.gpu", "--format=csv,noheader"])
    m["nvidia_smi"] = smi or "absent (no NVIDIA driver on this machine)"
    m["xrt"] = (_cmd(["xbutil", "--version"]) or "absent (no XRT on this machine)").splitlines()[0]
    m["vitis_hls"] = shutil.which("vitis_hls") or shutil.which("vitis-run") or "absent"
    m["v++"] = shutil.which("v++") or "absent"
    m["container_image"] = os.environ.get("EAGLE4_IMAGE", "none (native run)")
    m["container_image_digest"] = os.environ.get("EAGLE4_IMAGE_DIGEST", "none (native run)")
    return m


def write(path: Path, extra: dict | None = None) -> Path:
    """The manifest plus ``extra`` (a run on a board adds ``eagle4.backends.xrt.board_fields()``: the
    manifest itself asks no backend, so the report layer stays below the backends)."""
    data = collect()
    data.update(extra or {})
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, "".join(f"{k}: {v}\n" for k, v in data.items()))
    return path

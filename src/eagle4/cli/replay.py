"""`eagle4 replay`: rebuild the artifact pack on a fresh machine inside the pinned images.

Builds (or reuses) cpu-csim, runs the sign-off main job in it on the default contract, and, when
this host has an NVIDIA GPU visible to Docker, the H100 suites in cuda-h100 too.
"""

from __future__ import annotations

import shutil
import subprocess

from eagle4.containers import run


def _host_has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    return bool(smi) and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def cmd(args) -> int:
    rc = run("cpu-csim", ["python", "-m", "eagle4.cli", "signoff", "--contract", args.contract, "--hw", "cpu",
                          "--reports", "reports"])  # replay rebuilds the committed pack itself
    if rc == 1:  # signoff ran every step and printed NOT SIGNED OFF (a CPU run cannot sign off): the pack is rebuilt
        rc = 0
    if _host_has_gpu() and not args.cpu_only:
        rc_gpu = run("cuda-h100", ["python", "-m", "pytest", "-m", "parity or perf", "--hw=cuda", "-p", "no:xdist"])
        rc = rc or rc_gpu
    else:
        print("eagle4 replay: no NVIDIA GPU on this host: the H100 suites were not run "
              "(their committed results are validated by the CPU suites)")
    return rc


def register(sub) -> None:
    p = sub.add_parser("replay", help="rebuild the artifact pack inside the pinned images")
    p.add_argument("--contract", default="contracts/default.toml")
    p.add_argument("--cpu-only", action="store_true")
    p.set_defaults(func=cmd)

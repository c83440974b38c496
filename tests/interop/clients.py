"""The real benchmark clients, from the engines' published wheels: download once (no dependencies)
into the git-ignored ``.cache/interop/wheels``, extract only the benchmark client modules, and lay the
shims of ``shims/`` (package imports only, listed in README.md) beside them. A wheel that cannot be
fetched is a test failure naming it, never a skip."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHIMS = Path(__file__).resolve().parent / "shims"
CACHE = REPO / ".cache" / "interop"

#: pinned client code: (distribution, version, members of the wheel to extract)
CLIENTS = {
    "vllm": ("vllm", "0.34.0", ("vllm/benchmarks/__init__.py", "vllm/benchmarks/serve.py", "vllm/benchmarks/lib/",
                                "vllm/benchmarks/datasets/")),
    "sglang": ("sglang", "0.5.23", ("sglang/bench_serving.py", "sglang/benchmark/__init__.py",
                                    "sglang/benchmark/serving.py", "sglang/benchmark/utils.py",
                                    "sglang/benchmark/goodput.py", "sglang/benchmark/datasets/")),
}


def wheel(name: str) -> Path:
    dist, version, _ = CLIENTS[name]
    d = CACHE / "wheels"
    found = sorted(d.glob(f"{dist}-{version}-*.whl"))
    if found:
        return found[0]
    d.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(d),
           f"{dist}=={version}"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.fail(f"could not fetch the {dist}=={version} wheel: pip download ran past 600 s", pytrace=False)
    found = sorted(d.glob(f"{dist}-{version}-*.whl"))
    if p.returncode != 0 or not found:
        tail = " ".join((p.stderr or p.stdout).split())[-400:]
        pytest.fail(f"could not fetch the {dist}=={version} wheel ({' '.join(cmd[2:])}): {tail}", pytrace=False)
    return found[0]


def install(name: str) -> Path:
    """A folder to put on ``PYTHONPATH``: the client's modules from the wheel, untouched, plus the shims.
    Serialized across processes (pytest-xdist workers share the cache)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _install(name)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _install(name: str) -> Path:
    dist, version, members = CLIENTS[name]
    whl = wheel(name)
    out = CACHE / f"{dist}-{version}"
    stamp = out / ".complete"
    if stamp.is_file() and stamp.read_text() == whl.name:
        return out
    shutil.rmtree(out, ignore_errors=True)
    with zipfile.ZipFile(whl) as z:
        names = [n for n in z.namelist() if any(n == m or (m.endswith("/") and n.startswith(m)) for m in members)]
        missing = [m for m in members if not any(n == m or n.startswith(m) for n in names)]
        if missing:
            pytest.fail(f"{whl.name} lacks {missing}: not the client code the interop tests pin", pytrace=False)
        z.extractall(out, names)
    for src in (SHIMS / dist).rglob("*.py"):  # shims fill in the package around the client, never replace it
        dst = out / dist / src.relative_to(SHIMS / dist)
        if dst.exists():
            pytest.fail(f"shim {src.relative_to(SHIMS)} would replace {dst.relative_to(out)} of {whl.name}",
                        pytrace=False)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    stamp.write_text(whl.name)
    return out

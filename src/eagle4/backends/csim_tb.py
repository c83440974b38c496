"""Build and run the C++ testbenches ``hls/<key>/tb_<key>.cpp`` (``tb_<key> <dump.npz>``).

A testbench links its kernel's top and C ABI wrapper and reads a dump with
``hls/include/tb/npz.hpp``; it exits 0 on parity, 1 on a mismatch, 2 on a bad file (like
``csim_design -argv <dump>``). By default it is built with ``-fsanitize=address,undefined``: that is
how the C-simulation code is checked for out-of-bounds accesses and undefined behaviour (an
ASan-instrumented library cannot be loaded into Python without preloading libasan). Executables
are cached like the library (``eagle4.backends.csim_build.cached_build``), keyed by every source, header
and flag.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from eagle4.backends import hls_designs
from eagle4.backends.base import BackendUnavailable
from eagle4.backends.csim_build import (
    BASE_FLAGS,
    HLS_DIR,
    CsimBuildError,
    all_designs,
    build_digest,
    cache_root,
    cached_build,
    find_cxx,
    header_files,
    include_flags,
    materialize,
    run_cxx,
    snapshot_sources,
    tools_missing,
)
from eagle4.spec import kernel_spec

TB_SANITIZE_FLAGS = ("-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all", "-g")
SANITIZER_ENV = {
    "ASAN_OPTIONS": "halt_on_error=1:abort_on_error=0:detect_leaks=1:exitcode=86",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    "LSAN_OPTIONS": "exitcode=87",
}
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer", "SUMMARY: UndefinedBehaviorSanitizer")


def testbench_source(key: str) -> Path:
    """The testbench file of a kernel's design (its design.desc ``tb``; the conventional name when none)."""
    d = all_designs().get(key)
    return d.tb[0] if d is not None and d.tb else HLS_DIR / key / f"tb_{key}.cpp"


def has_testbench(key: str) -> bool:
    return testbench_source(kernel_spec(key).key).is_file()


def build_testbench(key: str, *, sanitize: bool = True, counters: bool = True, cache_dir=None) -> Path:
    """Build (or find) ``tb_<key>``; raises CsimBuildError with the compiler output on failure.

    ``counters=False`` builds the ports as raw pointers (no ``EAGLE4_CSIM_COUNTERS``), as Vitis's own
    ``csim_design`` compiles the sources through hls/tcl/run_hls.tcl."""
    key = kernel_spec(key).key
    missing = tools_missing()
    if missing:
        raise BackendUnavailable(f"csim testbench: {missing}")
    src = testbench_source(key)
    if not src.is_file():
        raise FileNotFoundError(f"no testbench {src}")
    flags = [f.replace("-O2", "-O1") for f in BASE_FLAGS if counters or f != "-DEAGLE4_CSIM_COUNTERS"]
    flags += list(TB_SANITIZE_FLAGS) if sanitize else []
    sources = hls_designs.testbench_sources(key, all_designs())
    snap = snapshot_sources(header_files(include_tb=True) + sources)
    digest = build_digest(f"tb_{key}", snap, flags)
    cxx = find_cxx()
    root = cache_root(cache_dir) / "tb"
    exe_name = f"tb_{key}" if counters else f"tb_{key}_raw_ports"

    def builder(tmp: Path):
        src_root = materialize(snap, tmp / "src")  # compile exactly what was hashed
        files = [src_root / s.relative_to(HLS_DIR) for s in sources]
        cmd = [cxx, *flags, *include_flags(src_root), *[str(s) for s in files], "-o", str(tmp / exe_name)]
        p = run_cxx(cmd, f"building {exe_name}", root)
        if p.returncode:
            raise CsimBuildError(f"building {exe_name} failed (cache folder {root}; nothing was cached):\n"
                                 f"{' '.join(cmd)}\n{p.stdout}{p.stderr}")
        (tmp / "build.json").write_text(json.dumps({"cmd": cmd, "warnings": p.stderr}))

    root.mkdir(parents=True, exist_ok=True)
    entry, _ = cached_build(root, digest, builder)
    return entry / exe_name


@dataclass
class TbResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def sanitizer_report(self) -> str:
        """The sanitizer's lines in the output ('' when clean)."""
        text = self.stdout + self.stderr
        return "\n".join(line for line in text.splitlines() if any(m in line for m in SANITIZER_MARKERS))


def run_testbench(key: str, dump: str | os.PathLike, *, sanitize: bool = True, counters: bool = True,
                  cache_dir=None, timeout: float = 300) -> TbResult:
    exe = build_testbench(key, sanitize=sanitize, counters=counters, cache_dir=cache_dir)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if sanitize:
        env.update(SANITIZER_ENV)
    p = subprocess.run([str(exe), str(dump)], capture_output=True, text=True, env=env, timeout=timeout)
    return TbResult(p.returncode, p.stdout, p.stderr)

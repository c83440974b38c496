"""The g++ build of the C-simulation library, cached by the contents of what it compiles.

The designs and their sources are those of the per-folder descriptions ``hls/**/design.desc``
(``eagle4.backends.hls_designs``; the Vitis flow reads the same files). Every design with C-sim sources
is an entry of the library: the seven kernels (``<key>.cpp``, the synthesizable top, and
``<key>_capi.cpp``, the uniform C ABI wrapper of ``hls/include/eagle4_capi.h``) and the two fused
pipelines (their tops, their C-ABI entries and the unfused reference chains). Sources are compiled
with the byte counters on (``EAGLE4_CSIM_COUNTERS``: every ``PORT(T)`` counts the bytes each m_axi port
moves) against the Apache-2.0 ap_types headers the ``hls4ml`` package ships
(``EAGLE4_HLS4ML_HEADERS``), and linked into one ``.so`` cached under ``<repo>/.cache/csim/<sha256>/``
(``EAGLE4_CSIM_CACHE`` overrides the root). The key hashes every source, header, description, the flags
and the compiler version, so an edit rebuilds and nothing else does; a file lock plus an atomic rename
keep pytest-xdist workers from racing on the same build. A build where anything failed is never cached
(the next build retries), every error names the cache folder, and every g++ run has a timeout
(``EAGLE4_CXX_TIMEOUT_S``, default 900 s).

The testbenches (``eagle4.backends.csim_tb``), the synthesis-mode builds (``eagle4.budget.onchip``) and
the XRT test double use the same snapshot, digest and cache helpers.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from eagle4 import envvars
from eagle4.backends import hls_designs
from eagle4.backends.base import BackendUnavailable
from eagle4.spec import KERNEL_ORDER

REPO = Path(__file__).resolve().parents[3]
HLS_DIR = Path(os.environ.get("EAGLE4_HLS_DIR", REPO / "hls"))
INCLUDE_DIR = HLS_DIR / "include"
LIB_NAME = "libeagle4_csim.so"

# -ffp-contract=off: KERNELS.md §0.2 forbids contracting x*y+z into an FMA.
BASE_FLAGS = (
    "-std=c++17", "-O2", "-fPIC", "-ffp-contract=off", "-fno-fast-math",
    "-DEAGLE4_CSIM_COUNTERS", "-DEAGLE4_HLS4ML_HEADERS",
    "-Wall", "-Wno-unknown-pragmas", "-Wno-unused-label", "-Wno-unused-variable",
)
SANITIZE_FLAGS = ("-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined")

# One g++ run (a compile or the link): generous for a loaded 2-core CI runner, short of a hang.
DEFAULT_CXX_TIMEOUT_S = 900.0


class CsimBuildError(RuntimeError):
    """g++ failed on a design's sources (or timed out); the message holds the compiler output and the
    cache folder the build used."""


# ---------------------------------------------------------------------------------------------
# Tools and sources


def hls4ml_ap_types() -> Path | None:
    """The ap_types folder of the installed hls4ml package (ap_int.h, ap_fixed.h, hls_stream.h)."""
    spec = importlib.util.find_spec("hls4ml")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "templates" / "vivado" / "ap_types"
        if (p / "ap_int.h").is_file():
            return p
    return None


def find_cxx() -> str | None:
    cxx = os.environ.get("CXX") or "g++"
    return shutil.which(cxx)


def cxx_timeout_s() -> float:
    """Seconds one g++ invocation may take (``EAGLE4_CXX_TIMEOUT_S``, default DEFAULT_CXX_TIMEOUT_S)."""
    return envvars.seconds("EAGLE4_CXX_TIMEOUT_S", DEFAULT_CXX_TIMEOUT_S)


def tools_missing() -> str:
    """'' when g++ and the hls4ml headers are present, else what is missing and how to get it."""
    why = []
    if find_cxx() is None:
        why.append("g++ was not found on PATH (install g++ >= 9, e.g. `apt-get install g++`, or set CXX)")
    if hls4ml_ap_types() is None:
        why.append("the hls4ml package (which ships Xilinx's ap_types headers) is not installed: "
                   "pip install 'hls4ml>=1.0,<1.4'")
    return "; ".join(why)


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("EAGLE4_CSIM_CACHE")
    return Path(env) if env else REPO / ".cache" / "csim"


def all_designs() -> dict[str, hls_designs.Design]:
    """The designs of hls/ by name (their design.desc files)."""
    return hls_designs.designs(HLS_DIR)


def library_entries() -> tuple[str, ...]:
    """Designs that are entries of the C-sim library (kernels in KERNEL_ORDER first, then the rest)."""
    ds = all_designs()
    kernels = [k for k in KERNEL_ORDER if k in ds and ds[k].csim_entry]
    return tuple(kernels + sorted(n for n, d in ds.items() if d.csim_entry and n not in kernels))


def kernel_keys_with_capi() -> tuple[str, ...]:
    """Kernels whose design has a C ABI wrapper (the ones the csim backend supports)."""
    ds = all_designs()
    return tuple(k for k in KERNEL_ORDER if k in ds and ds[k].csim_entry)


def snapshot_sources(files) -> dict[str, bytes]:
    """Read every source once: {path relative to hls/: bytes}. The build hashes and compiles this
    snapshot, so an edit landing mid-build (several engineers share the tree) can never end up in a
    cache entry keyed by other contents."""
    return {str(Path(f).relative_to(HLS_DIR)): Path(f).read_bytes() for f in sorted(set(files))}


def materialize(snapshot: dict[str, bytes], dest: Path) -> Path:
    """Write a snapshot under ``dest`` (the layout of hls/); returns ``dest``."""
    for rel, data in snapshot.items():
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return dest


def _hash_snapshot(h, snapshot: dict[str, bytes]):
    for rel in sorted(snapshot):
        h.update(f"\0{rel}\0".encode())
        h.update(snapshot[rel])


HEADER_SUFFIXES = (".h", ".hpp", ".inc", ".ipp")


def header_files(include_tb: bool) -> list[Path]:
    """Every header under hls/ (the sources include each other across folders), and the descriptions;
    the testbench headers (hls/include/tb, tb_*) only when ``include_tb``."""
    files = []
    for p in HLS_DIR.rglob("*"):
        if not p.is_file() or not (p.suffix in HEADER_SUFFIXES or p.name == hls_designs.DESC_NAME):
            continue
        rel = p.relative_to(HLS_DIR).parts
        if not include_tb and ("tb" in rel[:-1] or p.name.startswith("tb_")):
            continue
        files.append(p)
    return files


_CXX_VERSION: dict[str, str] = {}


def cxx_version(cxx: str) -> str:
    if cxx not in _CXX_VERSION:
        _CXX_VERSION[cxx] = subprocess.run([cxx, "--version"], capture_output=True, text=True,
                                           timeout=60).stdout.strip()
    return _CXX_VERSION[cxx]


def include_flags(hls_root: Path | None = None) -> list[str]:
    ap = hls4ml_ap_types()
    inc = (hls_root / "include") if hls_root is not None else INCLUDE_DIR
    return [f"-I{inc}"] + ([f"-I{ap}"] if ap else [])


def build_digest(kind: str, snapshot, flags) -> str:
    """sha256 key of a build: kind, flags, compiler version, ap_types location and every source
    (``snapshot``: a snapshot_sources() dict, or a list of files under hls/)."""
    if not isinstance(snapshot, dict):
        snapshot = snapshot_sources(snapshot)
    cxx = find_cxx() or "g++"
    h = hashlib.sha256()
    h.update(json.dumps({"kind": kind, "flags": list(flags), "cxx": cxx_version(cxx),
                         "ap_types": str(hls4ml_ap_types())}).encode())
    _hash_snapshot(h, snapshot)
    return h.hexdigest()[:32]


@contextmanager
def _file_lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _complete(entry: Path) -> bool:
    """A cache entry counts only when its build finished with nothing failed."""
    try:
        info = json.loads((entry / "build.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(info.get("complete", not info.get("errors")))


def cached_build(root: Path, digest: str, builder) -> tuple[Path, bool]:
    """Return (entry dir, cache_hit). ``builder(tmpdir)`` fills a fresh dir, which is renamed into place
    atomically under an exclusive lock, so concurrent processes build each digest once.

    A build is cached only when it completed (``build.json`` with ``"complete": false``, or a builder
    that raises, is never a cache entry): a partial build stays in ``<root>/.failed-<digest>-*`` for the
    process that made it, and the next build of the digest tries again."""
    root.mkdir(parents=True, exist_ok=True)
    final = root / digest
    if _complete(final):
        return final, True
    with _file_lock(root / f"{digest}.lock"):
        if _complete(final):
            return final, True
        for old in root.glob(f".failed-{digest}-*"):  # earlier failed attempts (their .so may still be
            shutil.rmtree(old, ignore_errors=True)  # mapped by a process; unlinking is safe on Linux)
        if final.exists():  # an entry left by an older harness that cached a failure
            shutil.rmtree(final, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=root))
        try:
            builder(tmp)
            if not _complete(tmp):
                failed = Path(tempfile.mkdtemp(prefix=f".failed-{digest}-", dir=root))
                os.replace(tmp, failed)
                return failed, False
            os.replace(tmp, final)  # atomic: readers see either nothing or a complete entry
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final, False


def run_cxx(cmd: list[str], what: str, cache: Path) -> subprocess.CompletedProcess:
    """Run one g++ command with the build timeout; a timeout is a CsimBuildError naming the cache."""
    limit = cxx_timeout_s()
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise CsimBuildError(f"g++ timed out after {limit:g} s {what} (cache folder {cache}; nothing was cached; "
                             f"raise EAGLE4_CXX_TIMEOUT_S on a slow machine):\n{' '.join(cmd)}") from None


def object_name(rel: str) -> str:
    return rel.replace("/", "__").rsplit(".", 1)[0] + ".o"


def compile_source(cxx: str, flags, src: Path, obj: Path, hls_root: Path, cache: Path) -> tuple[Path, int, str]:
    cmd = [cxx, *flags, *include_flags(hls_root), "-c", str(src), "-o", str(obj)]
    try:
        p = run_cxx(cmd, f"compiling {src.relative_to(hls_root)}", cache)
    except CsimBuildError as e:
        return src, 124, str(e).replace(str(hls_root), str(HLS_DIR))
    out = (" ".join(cmd) + "\n" + p.stdout + p.stderr) if p.returncode else p.stderr
    return src, p.returncode, out.replace(str(hls_root), str(HLS_DIR))  # messages name the real files


def build_library(cache_dir=None, sanitize: bool = False, jobs: int | None = None) -> tuple[Path, dict, bool]:
    """Build (or find) the csim library. Returns (path of the .so, build info, cache_hit).

    The library holds every design of hls/ whose design.desc has C-sim sources (the kernels' C-ABI
    wrappers, the fused designs' entries). Build info: ``kernels`` (the entries linked in), ``errors``
    {entry: compiler output} of entries whose sources failed (left out; using them raises
    CsimBuildError), ``cache`` (the folder the build lives in). A build with errors is never cached.
    """
    missing = tools_missing()
    if missing:
        raise BackendUnavailable(f"backend 'csim' is not available: {missing}")
    cxx = find_cxx()
    flags = list(BASE_FLAGS) + (list(SANITIZE_FLAGS) if sanitize else [])
    ds = all_designs()
    entries = library_entries()
    sources = {e: [str(f.relative_to(HLS_DIR)) for f in hls_designs.csim_sources(e, ds)] for e in entries}
    unique = sorted({s for ss in sources.values() for s in ss})
    snap = snapshot_sources(header_files(include_tb=False) + [HLS_DIR / s for s in unique])
    digest = build_digest("lib", snap, flags + list(entries))
    root = cache_root(cache_dir)
    root.mkdir(parents=True, exist_ok=True)

    def builder(tmp: Path):
        t0 = time.time()
        jobs_ = jobs or os.cpu_count() or 2
        src_root = materialize(snap, tmp / "src")
        failed: dict[str, str] = {}
        warned: dict[str, str] = {}
        with ThreadPoolExecutor(max_workers=jobs_) as ex:
            futs = {s: ex.submit(compile_source, cxx, flags, src_root / s, tmp / object_name(s), src_root, root)
                    for s in unique}
            for s, fut in futs.items():
                _, rc, out = fut.result()
                if rc:
                    failed[s] = out
                elif out.strip():
                    warned[s] = out
        errors = {e: "".join(failed[s] for s in sources[e] if s in failed) for e in entries
                  if any(s in failed for s in sources[e])}
        warnings = {e: "".join(warned[s] for s in sources[e] if s in warned) for e in entries
                    if any(s in warned for s in sources[e])}
        linked = [e for e in entries if e not in errors]
        objs = sorted({object_name(s) for e in linked for s in sources[e]})
        if linked:
            cmd = [cxx, "-shared", *([f for f in flags if f.startswith("-fsanitize")]), "-o", str(tmp / LIB_NAME),
                   *[str(tmp / o) for o in objs]]
            p = run_cxx(cmd, "linking the csim library", root)
            if p.returncode:
                raise CsimBuildError(f"linking the csim library failed (cache folder {root}; nothing was cached):\n"
                                     f"{' '.join(cmd)}\n{p.stdout}{p.stderr}")
        for o in tmp.glob("*.o"):
            o.unlink()
        info = {"kernels": linked, "errors": errors, "warnings": warnings, "flags": flags, "cxx": cxx_version(cxx),
                "digest": digest, "seconds": round(time.time() - t0, 2), "sanitize": sanitize,
                "sources": sources, "complete": not errors}
        (tmp / "build.json").write_text(json.dumps(info, indent=1))

    entry, hit = cached_build(root, digest, builder)
    info = json.loads((entry / "build.json").read_text())
    info["cache"] = str(entry)
    return entry / LIB_NAME, info, hit


def prune_cache(cache_dir=None, keep: int = 8) -> list[Path]:
    """Delete all but the ``keep`` most recently built entries of each kind (library, each testbench)
    from the cache; returns the removed directories. Manual housekeeping (every source edit makes a
    new entry); do not run it while other processes are using the cache."""
    removed: list[Path] = []
    for root in (cache_root(cache_dir), cache_root(cache_dir) / "tb"):
        if not root.is_dir():
            continue
        groups: dict[str, list[Path]] = {}
        for d in root.iterdir():
            if d.is_dir() and (d / "build.json").is_file():
                kind = next((f.name for f in d.iterdir() if f.is_file() and f.name != "build.json"), "?")
                groups.setdefault(kind, []).append(d)
        for entries in groups.values():
            entries.sort(key=lambda d: (d / "build.json").stat().st_mtime, reverse=True)
            for d in entries[keep:]:
                shutil.rmtree(d, ignore_errors=True)
                Path(f"{d}.lock").unlink(missing_ok=True)
                removed.append(d)
    return removed

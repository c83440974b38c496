"""C-simulation backend: the HLS C++ of every design compiled with g++ into one shared library.

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

Kernels are called through ``run``/``call_raw`` (spec order); the other entries through
``call_entry`` (``eagle4.backends.fused_csim`` reads the fused designs' port counters this way).

The library is loaded with ctypes rather than a compiled Python extension: the C ABI is flat
(arrays of pointers, shapes and scalars), so no build-time Python dependency (pybind11, headers,
a matching interpreter ABI) is needed and the same ``.so`` is what the C++ testbenches link.

Sanitizers: ``CsimBackend(sanitize=True)`` builds an ASan/UBSan library under its own cache key, but
loading it into Python needs ``LD_PRELOAD`` of libasan; the cleaner route, which the tests use, is
to build and run the testbench executables with the sanitizers (``eagle4.backends.csim_tb``).
"""

from __future__ import annotations

import csv
import ctypes
import fcntl
import hashlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from eagle4 import dtypes as dt
from eagle4 import envvars
from eagle4.backends import hls_designs
from eagle4.backends.base import Backend, BackendUnavailable, DeviceInfo, requested_buffers
from eagle4.report import atomic
from eagle4.spec import KERNEL_ORDER, check_arrays, kernel_spec

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

MAX_TENSORS = 64  # more than any kernel has
ERRBUF_LEN = 4096
# One g++ run (a compile or the link): generous for a loaded 2-core CI runner, short of a hang.
DEFAULT_CXX_TIMEOUT_S = 900.0


class CsimBuildError(RuntimeError):
    """g++ failed on a design's sources (or timed out); the message holds the compiler output and the
    cache folder the build used."""


class CsimCallError(RuntimeError):
    """A design entry of the library returned an error code; the message holds its error text."""


class PortCounter(ctypes.Structure):
    _fields_ = [("bytes_read", ctypes.c_uint64), ("bytes_written", ctypes.c_uint64)]


_CAPI_ARGTYPES = [
    ctypes.POINTER(ctypes.c_void_p),  # tensors
    ctypes.POINTER(ctypes.c_int64),  # shapes [4*n]
    ctypes.POINTER(ctypes.c_int32),  # elem_bytes
    ctypes.POINTER(ctypes.c_int64),  # iscalars
    ctypes.POINTER(ctypes.c_float),  # fscalars
    ctypes.POINTER(PortCounter),  # counters
    ctypes.c_char_p,  # errbuf
    ctypes.c_int64,  # errlen
]


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


def _object_name(rel: str) -> str:
    return rel.replace("/", "__").rsplit(".", 1)[0] + ".o"


def _compile(cxx: str, flags, src: Path, obj: Path, hls_root: Path, cache: Path) -> tuple[Path, int, str]:
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
            futs = {s: ex.submit(_compile, cxx, flags, src_root / s, tmp / _object_name(s), src_root, root)
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
        objs = sorted({_object_name(s) for e in linked for s in sources[e]})
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


# ---------------------------------------------------------------------------------------------
# Port-byte records for reports/csim_port_bytes.csv

PORT_BYTES_COLUMNS = ("kernel", "case_id", "port", "bytes_read", "bytes_written", "provenance")
_PORT_ROWS: list[dict] = []
_PORT_LOCK = threading.Lock()


def _rows_of(kernel: str, case_id: str, port_bytes: dict) -> list[dict]:
    return [{"kernel": kernel, "case_id": case_id, "port": port, "bytes_read": int(r), "bytes_written": int(w),
             "provenance": "csim"} for port, (r, w) in port_bytes.items()]


def write_port_bytes_csv(rows, path) -> Path:
    """Write rows (dicts keyed by PORT_BYTES_COLUMNS, or tuples in that order; provenance defaults to
    'csim') to a fresh CSV at ``path`` (atomically replaced)."""
    path = Path(path)
    with atomic.atomic_open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=PORT_BYTES_COLUMNS)
        w.writeheader()
        for r in rows:
            if not isinstance(r, dict):  # a (kernel, case_id, port, bytes_read, bytes_written[, provenance]) tuple
                r = dict(zip(PORT_BYTES_COLUMNS, r, strict=False))
            w.writerow({**{"provenance": "csim"}, **r})
    return path


def record_port_bytes(kernel: str, case_id: str, port_bytes: dict) -> None:
    """Collect one call's per-port bytes (``backend.last_port_bytes``) in memory."""
    with _PORT_LOCK:
        _PORT_ROWS.extend(_rows_of(kernel_spec(kernel).key, case_id, port_bytes))


def recorded_port_bytes() -> list[dict]:
    with _PORT_LOCK:
        return list(_PORT_ROWS)


def flush_port_bytes(path=None) -> int:
    """Append the collected rows to ``path`` (default ``<repo>/reports/csim_port_bytes.csv``; the header
    is written when the file is new) under a file lock (xdist workers share the file); returns the
    number of rows written and clears the collection."""
    path = Path(path) if path is not None else REPO / "reports" / "csim_port_bytes.csv"
    with _PORT_LOCK:
        rows, _PORT_ROWS[:] = list(_PORT_ROWS), []
    if not rows:
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    head, body = io.StringIO(), io.StringIO()
    csv.DictWriter(head, fieldnames=PORT_BYTES_COLUMNS).writeheader()
    csv.DictWriter(body, fieldnames=PORT_BYTES_COLUMNS).writerows(rows)
    with _file_lock(path.with_name(path.name + ".lock")):
        atomic.append_text(path, body.getvalue(), header=head.getvalue())
    return len(rows)


# ---------------------------------------------------------------------------------------------
# The backend

_LOADED: dict[str, ctypes.CDLL] = {}
_LOAD_LOCK = threading.Lock()

_POISON = {"f": np.nan, "i": -9, "u": 0xA5, "b": False}


def _poison_array(shape, dtype_name: str) -> np.ndarray:
    npd = dt.numpy_dtype(dtype_name)
    if dtype_name == "bfloat16":
        return np.full(shape, 0x7FC0, np.uint16).view(dt.BF16)
    kind = npd.kind
    val = _POISON.get(kind, 0)
    if kind == "u" and npd.itemsize > 1:
        val = 0
    return np.full(shape, val, dtype=npd)


class CsimBackend(Backend):
    name = "csim"
    provenance = "csim"

    def __init__(self, cache_dir: str | os.PathLike | None = None, sanitize: bool = False, jobs: int | None = None):
        self.cache_dir = cache_root(cache_dir)
        self.sanitize = sanitize
        self.jobs = jobs
        self.library_path: Path | None = None
        self.build_info: dict = {}
        self.cache_hit: bool | None = None
        self.last_port_bytes: dict[str, tuple[int, int]] = {}
        self._lib: ctypes.CDLL | None = None

    # -- availability ------------------------------------------------------------------------
    def available(self):
        missing = tools_missing()
        if missing:
            return False, missing
        if self.sanitize and "libasan" not in os.environ.get("LD_PRELOAD", ""):
            return False, ("an ASan-instrumented library can only be loaded into Python with libasan preloaded: "
                           "LD_PRELOAD=$(g++ -print-file-name=libasan.so) (or run the sanitized testbenches, "
                           "eagle4.backends.csim_tb)")
        return True, ""

    def supports(self, kernel: str) -> bool:
        return kernel_spec(kernel).key in kernel_keys_with_capi()

    def device_info(self):
        return DeviceInfo(self.name, "cpu", {"cxx": cxx_version(find_cxx()) if find_cxx() else None,
                                             "library": str(self.library_path) if self.library_path else None,
                                             "ap_types": str(hls4ml_ap_types())})

    # -- build and load ----------------------------------------------------------------------
    def build(self) -> Path:
        """Build (or find in the cache) and load the library; sets ``cache_hit`` and ``build_info``."""
        self.require()
        path, info, hit = build_library(self.cache_dir, sanitize=self.sanitize, jobs=self.jobs)
        self.library_path, self.build_info, self.cache_hit = path, info, hit
        if info["kernels"]:
            with _LOAD_LOCK:
                lib = _LOADED.get(str(path))
                if lib is None:
                    lib = ctypes.CDLL(str(path))
                    _LOADED[str(path)] = lib
            self._lib = lib
        return path

    def library(self) -> ctypes.CDLL:
        """The loaded library (built on first use): for callers of a design's synthesis top."""
        if self._lib is None:
            self.build()
        if self._lib is None:
            raise CsimBuildError(f"csim: no entry of the library compiled (cache folder {self.build_info.get('cache')}):\n"
                                 + "\n".join(self.build_info.get("errors", {}).values()))
        return self._lib

    def _require_entry(self, design: str):
        known = set(self.build_info.get("kernels", ())) | set(self.build_info.get("errors", {}))
        if self.library_path is None or design not in known:
            self.build()  # first use, or a design appeared since the build: a new digest
        errors = self.build_info.get("errors", {})
        if design in errors:
            raise CsimBuildError(f"csim: hls design {design} failed to compile (build folder "
                                 f"{self.build_info.get('cache')}, not cached: the next build retries):\n{errors[design]}")
        if design not in self.build_info.get("kernels", ()) or self._lib is None:
            raise BackendUnavailable(f"backend 'csim' has no build of {design} (no design.desc with C-sim sources)")

    def _symbol(self, design: str, symbol: str):
        self._require_entry(design)
        fn = getattr(self._lib, symbol)
        fn.argtypes = _CAPI_ARGTYPES
        fn.restype = ctypes.c_int
        return fn

    def _function(self, key: str):
        return self._symbol(key, f"eagle4_{key}")

    def _invoke(self, fn, arrays, iscalars, fscalars, n_counters: int) -> tuple[int, str, list[tuple[int, int]]]:
        """Marshal ``arrays`` (C-contiguous numpy arrays or None, in the entry's tensor order) and the
        scalars to the uniform C ABI (hls/include/eagle4_capi.h) and call ``fn``; outputs are written
        in place. Returns (return code, error text, per-counter (bytes read, bytes written))."""
        n = len(arrays)
        ptrs = (ctypes.c_void_p * max(1, n))()
        shapes = (ctypes.c_int64 * max(1, 4 * n))()
        ebytes = (ctypes.c_int32 * max(1, n))()
        for i, arr in enumerate(arrays):
            if arr is None:
                continue
            if arr.ndim > 4:
                raise ValueError(f"csim: tensor {i} has {arr.ndim} dimensions; the C ABI carries at most 4")
            if not arr.flags.c_contiguous:
                raise ValueError(f"csim: tensor {i} must be C-contiguous")
            ptrs[i] = arr.ctypes.data
            dims = list(arr.shape) + [1] * (4 - arr.ndim)
            for d in range(4):
                shapes[4 * i + d] = dims[d]
            ebytes[i] = arr.dtype.itemsize
        iscal = (ctypes.c_int64 * max(1, len(iscalars)))(*[int(v) for v in iscalars])
        fscal = (ctypes.c_float * max(1, len(fscalars)))(*[float(v) for v in fscalars])
        counters = (PortCounter * max(1, n_counters, n))()
        err = ctypes.create_string_buffer(ERRBUF_LEN)
        rc = fn(ptrs, shapes, ebytes, iscal, fscal, counters, err, ERRBUF_LEN)
        return rc, err.value.decode(errors="replace"), [(int(c.bytes_read), int(c.bytes_written)) for c in counters]

    def port_names(self, design: str, symbol: str) -> list[str]:
        """The port list a design's entry reports (its ``const char* <symbol>()``: comma-separated)."""
        self._require_entry(design)
        f = getattr(self._lib, symbol)
        f.restype = ctypes.c_char_p
        return [p for p in f().decode().split(",") if p]

    def call_entry(self, design: str, symbol: str, ports_symbol: str, arrays, iscalars, fscalars) -> dict[str, tuple[int, int]]:
        """Call a design entry that is not a spec kernel (the fused pipelines and their unfused chains):
        ``arrays`` in the entry's tensor order (None: absent); returns {port: (bytes read, written)} for
        the ports ``ports_symbol`` names (repeated names add up), also kept in ``last_port_bytes``.
        A non-zero return raises CsimCallError with the entry's message."""
        self.require()
        fn = self._symbol(design, symbol)
        ports = self.port_names(design, ports_symbol)
        self.last_port_bytes = {}
        rc, err, cnt = self._invoke(fn, list(arrays), iscalars, fscalars, len(ports))
        if rc != 0:
            raise CsimCallError(f"{symbol} returned {rc}: {err}")
        out: dict[str, list[int]] = {}
        for i, p in enumerate(ports):
            c = out.setdefault(p, [0, 0])
            c[0] += cnt[i][0]
            c[1] += cnt[i][1]
        self.last_port_bytes = {p: (r, w) for p, (r, w) in out.items()}
        return dict(self.last_port_bytes)

    # -- run -----------------------------------------------------------------------------------
    def _allocate(self, spec, inputs, params, env) -> dict[str, np.ndarray]:
        """Outputs the caller gave no prior contents for: the reference module's allocate decides the
        caps and which optional outputs exist (they are part of the spec); poison-filled."""
        try:
            from eagle4 import kernels

            mod = kernels.module(spec.key)
        except ImportError:
            mod = None
        if mod is not None and hasattr(mod, "allocate"):
            import torch

            tensors = {k: dt.to_torch(v) for k, v in inputs.items()}
            new = mod.allocate(tensors, params, torch.device("cpu"))
            return {k: dt.to_numpy(v) for k, v in new.items() if v is not None and k not in inputs}
        out = {}
        hidden = next((dt.logical_dtype(inputs[a.name]) for a in spec.tensors
                       if a.dtype == "hidden" and a.name in inputs), "float32")
        for a in spec.outputs:
            if a.name in inputs or a.optional:
                continue
            if "*" in a.shape:
                raise BackendUnavailable(f"csim: {spec.key}.{a.name} has a data-dependent cap; "
                                         f"eagle4.kernels.{spec.key}.allocate is needed to size it")
            shape = tuple(int(eval(e, {"__builtins__": {}}, dict(env))) for e in a.shape)
            out[a.name] = _poison_array(shape, hidden if a.dtype == "hidden" else a.dtype)
        return out

    def run(self, kernel, inputs, params, want=()):
        self.require()
        self.last_port_bytes = {}
        spec = kernel_spec(kernel)
        if not self.supports(spec.key):
            raise BackendUnavailable(f"backend 'csim' does not support {spec.key}: no hls/{spec.key}/{spec.key}_capi.cpp")
        self._function(spec.key)  # a kernel that failed to compile raises CsimBuildError here
        env = check_arrays(spec, inputs, params, role="inputs")
        inputs = {**inputs, **requested_buffers(spec, inputs, params, want)}  # optional outputs asked for
        outs = {a.name: np.array(inputs[a.name], copy=True, order="C") for a in spec.outputs if a.name in inputs}
        outs.update(self._allocate(spec, inputs, params, env))
        ins = {a.name: np.array(inputs[a.name], copy=True, order="C") for a in spec.tensors
               if a.role == "in" and a.name in inputs}
        if spec.key == "logits_to_probas" and "logits" in ins and ins["logits"].dtype != np.float32:
            ins["logits"] = ins["logits"].astype(np.float32)  # f16/bf16 -> f32 is exact (§5.3)
        self.call_raw(spec.key, {**ins, **outs}, params)
        return outs

    def call_raw(self, kernel: str, tensors: dict[str, np.ndarray], params: dict) -> None:
        """Marshal ``tensors`` (C-contiguous numpy arrays, outputs included; absent optional ones omitted)
        and the scalars to the uniform C ABI and call the wrapper; output arrays are written in place.
        No allocation and no spec check: ``run`` is the checked entry point. Raises PreconditionError
        with the wrapper's message on a negative return."""
        from eagle4.kernels import PreconditionError

        spec = kernel_spec(kernel)
        fn = self._function(spec.key)
        tensor_args = list(spec.tensors)
        ivals = [int(bool(params[a.name])) if a.dtype == "bool" else int(params[a.name])
                 for a in spec.scalars if a.dtype != "f32"]
        fvals = [float(np.float32(params[a.name])) for a in spec.scalars if a.dtype == "f32"]
        self.last_port_bytes = {}
        arrays = [tensors.get(a.name) for a in tensor_args]
        rc, err, counters = self._invoke(fn, arrays, ivals, fvals, len(tensor_args))
        self.last_port_bytes = {a.name: counters[i] for i, a in enumerate(tensor_args) if arrays[i] is not None}
        if rc < 0:
            raise PreconditionError(err or f"{spec.key}: refused (code {rc})")
        if rc != 0:
            raise RuntimeError(f"csim {spec.key}: unexpected return code {rc}: {err}")

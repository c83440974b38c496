"""C-simulation backend: calls into the g++ build of every HLS design (``eagle4.backends.csim_build``).

Kernels are called through ``run``/``call_raw`` (spec order); the other entries through
``call_entry`` (``eagle4.backends.fused_csim`` reads the fused designs' port counters this way). Each
call leaves its per-port byte counts (``eagle4.backends.csim_ports``) in ``last_port_bytes``.

The library is loaded with ctypes rather than a compiled Python extension: the C ABI is flat
(arrays of pointers, shapes and scalars), so no build-time Python dependency (pybind11, headers,
a matching interpreter ABI) is needed and the same ``.so`` is what the C++ testbenches link.

Sanitizers: ``CsimBackend(sanitize=True)`` builds an ASan/UBSan library under its own cache key, but
loading it into Python needs ``LD_PRELOAD`` of libasan; the cleaner route, which the tests use, is
to build and run the testbench executables with the sanitizers (``eagle4.backends.csim_tb``).
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

import numpy as np

from eagle4 import dtypes as dt
from eagle4.backends.base import Backend, BackendUnavailable, DeviceInfo, requested_buffers
from eagle4.backends.csim_build import (
    CsimBuildError,
    build_library,
    cache_root,
    cxx_version,
    find_cxx,
    hls4ml_ap_types,
    kernel_keys_with_capi,
    tools_missing,
)
from eagle4.backends.csim_ports import PortCounter, by_port, counts
from eagle4.spec import C_ABI_DTYPE, check_arrays, kernel_spec, shape_of

__all__ = ["CsimBackend", "CsimBuildError", "CsimCallError"]

ERRBUF_LEN = 4096


class CsimCallError(RuntimeError):
    """A design entry of the library returned an error code; the message holds its error text."""


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
        return rc, err.value.decode(errors="replace"), counts(counters)

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
        self.last_port_bytes = by_port(ports, cnt)
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
            out[a.name] = _poison_array(shape_of(a, env), hidden if a.dtype == "hidden" else a.dtype)
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
        for a in spec.tensors:  # a dtype class the C ABI carries in one element type (exact widening)
            if a.name in ins and a.dtype in C_ABI_DTYPE:
                ins[a.name] = ins[a.name].astype(dt.numpy_dtype(C_ABI_DTYPE[a.dtype]), copy=False)
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

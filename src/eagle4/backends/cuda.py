"""Our CUDA kernels (or a user's ``cost_draft_tree_kernel.cu``) as a backend, bound by op name.

The source is our ``cuda/`` folder by default (every ``cuda/*.cu``: one a kernel, the draft step and the
module, with the headers beside them), or one file of a user's (``CudaBackend(kernel_src=PATH)``, the
``EAGLE4_KERNEL_SRC`` environment variable, or pytest's ``--kernel-src``; a folder there builds its
``*.cu`` as ours does). It is built once per content and path with ``torch.utils.cpp_extension.load`` for the H100 (``-gencode=arch=compute_90,code=sm_90``,
``-fmad=false``, IEEE division and square root, no fast-math) into a cached build folder
(``EAGLE4_CUDA_BUILD_DIR``, default ``~/.cache/eagle4/cuda_ext``; a build lock that a killed build left
behind fails the next build by name after ``EAGLE4_CUDA_BUILD_LOCK_STALE_S`` seconds, 900 by default, where
torch would wait for ever). Each of the seven ops is looked
up by its CUDA op name (``spec.KERNELS[key].op``) on the built module, or, for a source that
registers them with ``TORCH_LIBRARY`` instead of pybind11, in ``torch.ops`` (any namespace);
``available()`` names the ops a source lacks.

``run(kernel, inputs, params)`` works like the ref backend: the inputs go to the GPU, the outputs
the caller did not pass are allocated by the reference module's ``allocate`` (poison-filled, on the
GPU), the reference module's precondition checker validates the call (data-dependent preconditions
cannot be raised from inside a kernel), and the op is called with the ABI's arguments in spec
order, mutating its outputs in place. A violated precondition raises ``PreconditionError``.
The HLS-extension output ``output_tokens`` of K1 (not part of the CUDA ABI) is filled on the GPU
from the remapped tokens and the sorted indices after the op, when it exists.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np

from eagle4 import dtypes as dt
from eagle4 import envvars
from eagle4.backends.base import Backend, BackendUnavailable, DeviceInfo, requested_buffers
from eagle4.spec import KERNELS, check_arrays, kernel_spec

REPO = Path(__file__).resolve().parents[3]
DEFAULT_SRC = REPO / "cuda"  # our sources: cuda/*.cu and the headers they include
ARCH_FLAG = "-gencode=arch=compute_90,code=sm_90"
NVCC_FLAGS = ("-O3", ARCH_FLAG, "-fmad=false", "--prec-div=true", "--prec-sqrt=true", "-ftz=false",
              "-lineinfo", "-std=c++17")
CXX_FLAGS = ("-O2", "-std=c++17")
OPS = tuple(k.op for k in KERNELS.values())

_LOCK = threading.Lock()
_BUILT: dict[str, object] = {}  # build key -> loaded module (or a torch.ops shim)


def _which_nvcc() -> str | None:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "nvcc").is_file():
        return str(Path(home) / "bin" / "nvcc")
    return shutil.which("nvcc")


def build_dir_root() -> Path:
    return Path(os.environ.get("EAGLE4_CUDA_BUILD_DIR") or Path.home() / ".cache" / "eagle4" / "cuda_ext")


def kernel_sources(src: str | os.PathLike) -> list[Path]:
    """The files one build compiles: a folder's ``*.cu`` (ours), or the one file given (a user's drop-in)."""
    src = Path(src)
    return sorted(src.glob("*.cu")) if src.is_dir() else [src]


def source_files(src: str | os.PathLike) -> list[Path]:
    """What a build of ``src`` reads of ours: a folder's ``*.cu`` and ``*.cuh``, or the one file."""
    src = Path(src)
    return sorted([*src.glob("*.cu"), *src.glob("*.cuh")]) if src.is_dir() else [src]


def source_digest(src: str | os.PathLike) -> str:
    """sha256 of a one-file source; of a folder, sha256 over each of its source files' name and sha256."""
    src = Path(src)
    if not src.is_dir():
        return hashlib.sha256(src.read_bytes()).hexdigest()
    lines = "".join(f"{f.name} {hashlib.sha256(f.read_bytes()).hexdigest()}\n" for f in source_files(src))
    return hashlib.sha256(lines.encode()).hexdigest()


def single_source(src: str | os.PathLike = DEFAULT_SRC) -> str:
    """Our folder of sources as one file (what a user drops in as ``cost_draft_tree_kernel.cu``): each ``*.cu``
    in turn with the folder's ``#include "..."`` headers inlined once (``#pragma once`` dropped)."""
    src = Path(src)
    seen: set[str] = set()

    def inline(path: Path) -> list[str]:
        out = []
        for line in path.read_text().splitlines():
            name = line[len('#include "'):-1] if line.startswith('#include "') and line.endswith('"') else None
            if name is not None and (src / name).is_file():
                if name not in seen:
                    seen.add(name)
                    out += inline(src / name)
            elif line.strip() != "#pragma once":
                out.append(line)
        return out

    return "\n".join(line for f in kernel_sources(src) for line in inline(f)) + "\n"


def build_key(src: Path) -> str:
    import torch

    h = hashlib.sha256()
    for f in source_files(src):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    h.update(str(src.resolve()).encode())
    h.update(" ".join(NVCC_FLAGS + CXX_FLAGS).encode())
    h.update(f"{torch.__version__}|{torch.version.cuda}".encode())
    return "eagle4_cuda_" + h.hexdigest()[:16]


class _TorchOpsModule:
    """A source that registers its ops with TORCH_LIBRARY: find each op name in any namespace."""

    def __init__(self, path: str):
        import torch

        self.path = path
        names = torch._C._dispatch_get_all_op_names()
        self._ops = {}
        for full in names:
            ns, _, op = full.partition("::")
            op = op.split(".")[0]
            if op in OPS and op not in self._ops:
                self._ops[op] = getattr(getattr(torch.ops, ns), op)

    def __getattr__(self, name):
        try:
            return self.__dict__["_ops"][name]
        except KeyError:
            raise AttributeError(name) from None


# torch's build lock (cpp_extension's FileBaton, `lock` in the build folder) is waited on without end, and a
# build killed mid-way (a timeout, Ctrl-C) leaves it behind: every later build of that source would then hang.
# A build of our source takes 2-3 minutes, so a lock untouched for longer than this is taken as left behind.
DEFAULT_BUILD_LOCK_STALE_S = 900.0


def build_lock_stale_s() -> float:
    return envvars.seconds("EAGLE4_CUDA_BUILD_LOCK_STALE_S", DEFAULT_BUILD_LOCK_STALE_S)


class BuildLockError(RuntimeError):
    """A build folder's lock outlived any build (see build_lock_stale_s)."""


def wait_for_build_lock(bdir: Path, stale_s: float | None = None, poll_s: float = 1.0, clock=None, sleep=None) -> None:
    """Return once ``bdir`` holds no build lock (another process's build has finished); raise BuildLockError,
    naming the file, once the lock has gone ``stale_s`` seconds without a change (a build killed mid-way).
    The lock is never removed here: whether its build still runs cannot be told from the file."""
    import time

    stale_s = build_lock_stale_s() if stale_s is None else stale_s
    clock, sleep = clock or time.time, sleep or time.sleep
    lock = Path(bdir) / "lock"
    while True:
        try:
            age = clock() - lock.stat().st_mtime
        except FileNotFoundError:
            return
        if age > stale_s:
            raise BuildLockError(
                f"{lock} has been there {age:.0f} s (a build takes minutes): a build of this source was killed "
                f"mid-way; remove the file to rebuild (EAGLE4_CUDA_BUILD_LOCK_STALE_S sets the {stale_s:.0f} s bound)")
        sleep(min(poll_s, stale_s - age + 0.01))


def _ops_only(e: ImportError) -> bool:
    """The import failed for want of a Python module init (no ``PyInit_<name>``): a source that only
    registers TORCH_LIBRARY ops, loaded as a plain library instead."""
    return "PyInit" in str(e) or "module export" in str(e)


def _import_built(key: str, path: Path):
    """A library an earlier build of the same key left (copied with its folder to a fresh machine):
    imported directly, without ninja's timestamp check, which a copied folder cannot satisfy."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location(key, path)
    try:
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    except ImportError as e:
        if not _ops_only(e):
            raise
        torch.ops.load_library(str(path))
        return _TorchOpsModule(str(path))


def load_extension(src: str | os.PathLike, verbose: bool = False):
    """Build (or reuse) the extension for ``src``; returns the module holding the ops."""
    import torch  # noqa: F401  (cpp_extension needs it imported)
    from torch.utils import cpp_extension

    src = Path(src).resolve()
    key = build_key(src)
    with _LOCK:
        if key in _BUILT:
            return _BUILT[key]
        bdir = build_dir_root() / key
        bdir.mkdir(parents=True, exist_ok=True)
        wait_for_build_lock(bdir)  # torch would wait on a left-behind lock for ever
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")  # the -gencode above is the one target
        kw = dict(name=key, sources=[str(f) for f in kernel_sources(src)], extra_cuda_cflags=list(NVCC_FLAGS), extra_cflags=list(CXX_FLAGS),
                  build_directory=str(bdir), verbose=verbose)
        built = bdir / f"{key}.so"
        if built.exists():  # the key hashes the sources, flags and torch: this library is that build
            mod = _import_built(key, built)
            _BUILT[key] = mod
            return mod
        try:
            mod = cpp_extension.load(**kw)
        except ImportError as e:
            if not _ops_only(e):
                raise
            lib = cpp_extension.load(is_python_module=False, **kw)
            mod = _TorchOpsModule(str(lib))
        _BUILT[key] = mod
        return mod


def _scalar(arg, value):
    if arg.dtype == "bool":
        return bool(value)
    if arg.dtype == "f32":
        return float(value)
    return int(value)


def _validate_with_reference(key: str, tensors: dict, params: dict) -> None:
    """The reference module's precondition checker, where it has one (raises PreconditionError)."""
    from eagle4 import kernels

    spec = kernel_spec(key)
    mod = kernels.module(key)
    kw = {a.name: (params[a.name] if a.role == "scalar" else tensors.get(a.name)) for a in spec.args}
    if key == "draft_tree_score":
        mod.check_preconditions(**kw)
    elif key == "update_draft_state":
        mod.check_preconditions(**kw)
    elif key == "work_deltas" and hasattr(mod, "_check"):
        mod._check(kw["work_scores"], kw["batch_size"], kw["node_count"], kw["node_top_k"], kw["row_stride"],
                   kw["work_deltas"], kw["per_req_deltas"])
    elif key == "tree_mask" and hasattr(mod, "_validate"):
        mod._validate(kw["seq_lens"], kw["req_pool_indices"], kw["req_to_token"], kw["S_max"], kw["tree_cache_locs"],
                      kw["tree_parent"], kw["B"], kw["T"], kw["Q"])
    elif key == "logits_to_probas" and hasattr(mod, "_check"):
        mod._check(kw["logits"], kw["temperatures"], kw["rows_per_req"], kw["write_probas"], kw["probas"],
                   kw["argmax_ids"], kw["is_greedy"])
    elif key == "reject_sample":
        mod.check_preconditions(**kw)
    elif key == "update_verify":
        outs = {a.name: tensors.get(a.name) for a in spec.outputs}
        ins = {a.name: kw[a.name] for a in spec.args if a.role != "out"}
        mod.check_preconditions(outputs=outs, **{k: v for k, v in ins.items()})


class CudaBackend(Backend):
    name = "cuda"
    provenance = "measured"

    def __init__(self, kernel_src: str | os.PathLike | None = None, device: int | str = 0, verbose: bool = False,
                 validate: bool = True):
        src = kernel_src or os.environ.get("EAGLE4_KERNEL_SRC") or DEFAULT_SRC
        self.kernel_src = Path(src).expanduser().resolve()
        self.device = device
        self.verbose = verbose
        self.validate = validate
        self._mod = None
        self._why: str | None = None

    # -- availability -------------------------------------------------------------------------
    def _load(self):
        if self._mod is not None or self._why is not None:
            return self._mod
        try:
            import torch
        except ImportError as e:
            self._why = f"torch is not importable ({e})"
            return None
        if not torch.cuda.is_available():
            self._why = (f"no NVIDIA GPU: torch.cuda.is_available() is False (torch {torch.__version__}, "
                         f"CUDA build {torch.version.cuda}); the cuda backend runs on an H100 (--hw=cuda)")
            return None
        if torch.version.cuda is None:
            self._why = f"torch {torch.__version__} is a CPU-only build; install a CUDA build of torch"
            return None
        if _which_nvcc() is None:
            self._why = ("nvcc not found (not on PATH and no CUDA_HOME/bin/nvcc): the CUDA kernels are built at "
                         "first use with torch.utils.cpp_extension and need the CUDA toolkit")
            return None
        if not (self.kernel_src.is_file() or (self.kernel_src.is_dir() and kernel_sources(self.kernel_src))):
            self._why = (f"kernel source {self.kernel_src} does not exist or holds no .cu file (kernel_src / "
                         "EAGLE4_KERNEL_SRC / --kernel-src)")
            return None
        try:
            self._mod = load_extension(self.kernel_src, verbose=self.verbose)
        except Exception as e:  # compiler errors come back as RuntimeError with the build log
            self._why = f"building {self.kernel_src} failed: {type(e).__name__}: {str(e)[-3000:]}"
            return None
        missing = self.missing_ops()
        if missing:
            self._why = (f"{self.kernel_src} does not define the op(s) {', '.join(missing)} (looked up by name on "
                         "the pybind11 module and in torch.ops); KERNELS.md gives each op's ABI")
        return self._mod

    def missing_ops(self) -> list[str]:
        if self._mod is None:
            return list(OPS)
        return [op for op in OPS if not callable(getattr(self._mod, op, None))]

    def available(self):
        self._load()
        return (self._why is None, self._why or "")

    def supports(self, kernel: str) -> bool:
        self._load()
        return self._mod is not None and callable(getattr(self._mod, kernel_spec(kernel).op, None))

    def op(self, kernel: str):
        """The raw op (ABI arguments, in-place outputs): what the perf suite times."""
        self.require()
        return getattr(self._mod, kernel_spec(kernel).op)

    def draft_step_op(self):
        """The one-launch draft step (K1 -> K2 -> K3; K1's, K2's and K3's ABI arguments one after the
        other), or None for a source that does not define ``draft_step`` (then a draft step is the three ops)."""
        self.require()
        fn = getattr(self._mod, "draft_step", None)
        return fn if callable(fn) else None

    @property
    def torch_device(self):
        import torch

        return torch.device("cuda", self.device) if isinstance(self.device, int) else torch.device(self.device)

    # -- running ------------------------------------------------------------------------------
    def call(self, kernel: str, tensors: dict, params: dict) -> dict:
        """Run on torch CUDA tensors (outputs not given are allocated); returns every output tensor."""
        from eagle4 import kernels
        from eagle4.kernels import PreconditionError

        spec = kernel_spec(kernel)
        fn = self.op(spec.key)
        dev = self.torch_device
        all_t = dict(tensors)
        if any(all_t.get(a.name) is None for a in spec.outputs if a.abi):
            # some output missing: the reference allocator (it may read device data, e.g. K4's caps);
            # a caller passing every output (the device engine under graph capture) skips it
            all_t.update(kernels.module(spec.key).allocate(all_t, params, dev))
        if self.validate:
            _validate_with_reference(spec.key, all_t, params)
        args = [(_scalar(a, params[a.name]) if a.role == "scalar" else all_t.get(a.name)) for a in spec.args if a.abi]
        try:
            fn(*args)
        except ValueError as e:  # the op's own checks (std::invalid_argument): preconditions and ABI mismatches
            raise PreconditionError(f"{spec.op}: {e}") from e
        except RuntimeError as e:
            if "precondition" in str(e):
                raise PreconditionError(f"{spec.op}: {e}") from e
            raise
        if spec.key == "draft_tree_score" and all_t.get("output_tokens") is not None:
            K = int(params["node_top_k"])
            all_t["output_tokens"].copy_(all_t["topk_tokens_sampling"].gather(1, all_t["sort_layer_indices"][:, :K]))
        return {a.name: all_t[a.name] for a in spec.outputs if all_t.get(a.name) is not None}

    @property
    def graph_safe(self) -> bool:
        """Without the reference's precondition checks (``validate=False``) a call is kernel launches
        only (no host read of device data), so a CUDA graph may capture it."""
        return not self.validate

    def run(self, kernel, inputs, params, want=()):
        import torch

        self.require()
        spec = kernel_spec(kernel)
        check_arrays(spec, inputs, params, role="inputs")
        inputs = {**inputs, **requested_buffers(spec, inputs, params, want)}
        dev = self.torch_device
        tensors = {k: dt.to_torch(v, dev) for k, v in inputs.items()}
        out = self.call(spec.key, tensors, params)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        return {k: dt.to_numpy(v) for k, v in out.items()}

    # -- provenance ---------------------------------------------------------------------------
    def device_info(self):
        import torch

        details = {"torch": torch.__version__, "cuda": str(torch.version.cuda), "numpy": np.__version__,
                   "kernel_src": str(self.kernel_src), "nvcc_flags": " ".join(NVCC_FLAGS)}
        if self.kernel_src.exists():
            details["kernel_src_sha256"] = source_digest(self.kernel_src)
        name = "cpu"
        if torch.cuda.is_available():
            name = torch.cuda.get_device_name(self.torch_device)
            details["driver"] = nvidia_driver() or "unknown"
            cap = torch.cuda.get_device_capability(self.torch_device)
            details["compute_capability"] = f"{cap[0]}.{cap[1]}"
        nv = _which_nvcc()
        if nv:
            try:
                details["nvcc"] = subprocess.run([nv, "--version"], capture_output=True, text=True,
                                                 timeout=30).stdout.strip().splitlines()[-1]
            except (OSError, subprocess.TimeoutExpired, IndexError):
                details["nvcc"] = "unknown"
        return DeviceInfo(self.name, name, details)


def nvidia_driver() -> str | None:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None


__all__ = ["CudaBackend", "BackendUnavailable", "load_extension", "DEFAULT_SRC", "NVCC_FLAGS", "OPS", "kernel_sources",
           "single_source", "source_digest", "source_files"]

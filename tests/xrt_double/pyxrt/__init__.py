"""TEST DOUBLE of the pyxrt surface the xrt backend uses (XRT's Python binding). Tests only.

Never importable by accident: it is found only when ``tests/xrt_double`` is put on ``sys.path`` /
``PYTHONPATH`` (the tests do it), and it says what it is (``EAGLE4_TEST_DOUBLE``), so the backend labels
every number it produces ``double``, never ``measured``.

Underneath, the xclbin's kernels are the Vitis entry points generated from the tops
(``eagle4.backends.xrt_abi``, as ``make -C hls xclbin`` generates them) compiled with the tops by the C-sim
build stack (``eagle4.backends.csim``: g++, counting ports, cached by source
hash) and called through ctypes with the device copies of the buffer objects, so the argument order,
the 32-bit scalars and the counters block are those the hardware build gets.

It rejects the misuse real XRT rejects (message in XRT's words where XRT has one):
* ``run.set_arg`` with a bad index ("Bad argument index"), a bo for a scalar or an int for a buffer, a
  scalar that does not fit the 32-bit int pyxrt passes, a bo allocated in a memory bank the argument is
  not connected to (the generated connectivity of eagle4.backends.xrt_abi.render_connectivity);
* ``run.start`` with an argument never set, or while a run of the same compute unit was started and not
  yet waited for;
* ``bo.read`` of bytes a kernel wrote since the last ``sync(FROM_DEVICE)`` (real XRT silently returns the
  stale host copy; the double refuses, so a missing sync is a test failure), and a start while a buffer
  holds host writes not synced to the device.
A kernel can be made to hang (``hang(kernel_name)``): its runs never complete, ``wait(timeout_ms)``
returns ``ERT_CMD_STATE_TIMEOUT``.
"""

from __future__ import annotations

import ctypes
import enum
import hashlib
import json
import os
import struct
import threading
from pathlib import Path

import numpy as np

EAGLE4_TEST_DOUBLE = True
XRT_VERSION = "eagle4-test-double (C-sim underneath; not XRT)"
PLATFORM = "eagle4_double_platform"
MAGIC = "EAGLE4-XRT-DOUBLE-XCLBIN"
HBM_BANKS = 32

_HUNG: set[str] = set()
_LOCK = threading.Lock()


def hang(kernel_name: str | None) -> None:
    """Make every run of ``kernel_name`` hang (None: none hangs)."""
    _HUNG.clear()
    if kernel_name:
        _HUNG.add(kernel_name)


class xclBOSyncDirection(enum.IntEnum):  # noqa: N801 (pyxrt's names)
    XCL_BO_SYNC_BO_TO_DEVICE = 0
    XCL_BO_SYNC_BO_FROM_DEVICE = 1


class ert_cmd_state(enum.IntEnum):  # noqa: N801
    ERT_CMD_STATE_NEW = 1
    ERT_CMD_STATE_QUEUED = 2
    ERT_CMD_STATE_RUNNING = 3
    ERT_CMD_STATE_COMPLETED = 4
    ERT_CMD_STATE_ERROR = 5
    ERT_CMD_STATE_ABORT = 6
    ERT_CMD_STATE_SUBMITTED = 7
    ERT_CMD_STATE_TIMEOUT = 8
    ERT_CMD_STATE_NORESPONSE = 9


class xrt_info_device(enum.IntEnum):  # noqa: N801
    bdf = 0
    interface_uuid = 1
    kdma = 2
    max_clock_frequency_mhz = 3
    m2m = 4
    name = 5
    nodma = 6
    offline = 7
    platform = 12
    host = 14


def _n_devices() -> int:
    return int(os.environ.get("EAGLE4_XRT_DOUBLE_DEVICES", "1"))


def enumerate_devices() -> int:
    return _n_devices()


# ---------------------------------------------------------------------------------------------
# "link": the double's xclbin is a JSON file with the metadata a real xclbin carries


def link(path, platform: str = PLATFORM, clock_mhz: float = 300.0, kernels=None) -> Path:
    """Write the double's xclbin for the generated entry points (the metadata v++ --link would embed:
    kernels, arguments with sizes, the memory bank of every global argument)."""
    from eagle4.backends import xrt_abi

    banks = xrt_abi.bank_map()
    ks = []
    for name in kernels or xrt_abi.KERNEL_NAMES:
        iface = xrt_abi.interface(name)
        args = []
        for i, (aname, kind, size) in enumerate(iface.xrt_args()):
            ctype = "uint64_t*"
            if kind == "scalar":
                ctype = next(a.host_scalar for a in iface.args if a.name == aname)
            args.append({"index": i, "name": aname, "kind": kind, "size": size if kind == "scalar" else 8,
                         "ctype": ctype, "banks": banks.get((name, aname), []) if kind == "global" else []})
        ks.append({"name": name, "args": args})
    body = {"magic": MAGIC, "platform": platform, "clock_mhz": clock_mhz, "kernels": ks}
    text = json.dumps(body, indent=1, sort_keys=True)
    body["uuid"] = hashlib.sha256(text.encode()).hexdigest()[:32]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=1, sort_keys=True))
    tmp.replace(path)
    return path


class uuid:  # noqa: N801
    def __init__(self, s: str):
        self._s = s

    def to_string(self) -> str:
        return self._s

    def __eq__(self, other):
        return isinstance(other, uuid) and other._s == self._s

    def __hash__(self):
        return hash(self._s)


class xclbin:  # noqa: N801
    class xclbinkernel:  # noqa: N801
        def __init__(self, meta):
            self._m = meta

        def get_name(self) -> str:
            return self._m["name"]

        def get_num_args(self) -> int:
            return len(self._m["args"])

    class xclbinmem:  # noqa: N801
        def __init__(self, i):
            self._i = i

        def get_tag(self) -> str:
            return f"HBM[{self._i}]"

        def get_index(self) -> int:
            return self._i

        def get_used(self) -> bool:
            return True

        def get_size_kb(self) -> int:
            return 256 * 1024

        def get_base_address(self) -> int:
            return self._i << 28

    def __init__(self, path: str):
        p = Path(path)
        try:
            meta = json.loads(p.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise RuntimeError(f"{path}: not an xclbin the test double can load ({type(e).__name__})") from None
        if meta.get("magic") != MAGIC:
            raise RuntimeError(f"{path}: not an xclbin the test double can load")
        self._meta = meta
        self._path = p

    def get_kernels(self):
        return [xclbin.xclbinkernel(k) for k in self._meta["kernels"]]

    def get_xsa_name(self) -> str:
        return self._meta["platform"]

    def get_uuid(self) -> uuid:
        return uuid(self._meta["uuid"])

    def get_mems(self):
        return [xclbin.xclbinmem(i) for i in range(HBM_BANKS)]


class device:  # noqa: N801
    def __init__(self, index: int = 0):
        if not isinstance(index, int) or index < 0 or index >= _n_devices():
            raise RuntimeError(f"No such device '{index}'")
        self._index = index
        self._xclbin: xclbin | None = None

    def load_xclbin(self, x) -> uuid:
        self._xclbin = x if isinstance(x, xclbin) else xclbin(str(x))
        return self._xclbin.get_uuid()

    def get_xclbin_uuid(self) -> uuid:
        if self._xclbin is None:
            raise RuntimeError("no xclbin loaded")
        return self._xclbin.get_uuid()

    def get_info(self, key) -> str:
        key = xrt_info_device(key)
        if key == xrt_info_device.name:
            return "eagle4-xrt-double"
        if key == xrt_info_device.platform:
            return json.dumps({"platforms": [{"static_region": {"vbnv": PLATFORM}}]})
        if key == xrt_info_device.bdf:
            return "0000:00:00.0"
        if key == xrt_info_device.max_clock_frequency_mhz:
            return str(int(self._xclbin._meta["clock_mhz"]) if self._xclbin else 0)
        if key == xrt_info_device.host:
            return json.dumps({"version": XRT_VERSION})
        return "NA"


class bo:  # noqa: N801
    class flags(enum.IntEnum):  # noqa: N801
        normal = 0
        cacheable = 1
        device_only = 2
        host_only = 3

    def __init__(self, dev, size: int, flags, group: int | None = None):
        if isinstance(dev, bo):  # bo(parent, size, offset): a sub-buffer sharing the parent's storage
            parent, offset = dev, int(flags)
            if offset < 0 or int(size) <= 0 or offset + int(size) > parent._size:
                raise RuntimeError(f"sub-buffer of {size} bytes at {offset} exceeds the parent's {parent._size}")
            self._size, self.group = int(size), parent.group
            self._host = memoryview(parent._host)[offset: offset + self._size]
            self._dev = memoryview(parent._dev)[offset: offset + self._size]
            self._host_dirty = parent._host_dirty[offset: offset + self._size]
            self._dev_newer = parent._dev_newer[offset: offset + self._size]
            return
        if not isinstance(dev, device):
            raise TypeError("bo(): the first argument must be a pyxrt.device")
        if int(size) <= 0:
            raise RuntimeError("bo(): size must be > 0")
        if not 0 <= int(group) < HBM_BANKS:
            raise RuntimeError(f"bo(): memory group {group} does not exist on this device")
        self._size = int(size)
        self.group = int(group)
        self._host = bytearray(self._size)
        self._dev = bytearray(self._size)
        self._host_dirty = np.zeros(self._size, bool)  # bytes written by the host, not synced to the device
        self._dev_newer = np.zeros(self._size, bool)   # bytes a kernel may have written, not synced back

    def size(self) -> int:
        return self._size

    def address(self) -> int:
        return id(self._dev)

    def write(self, data, seek: int) -> None:
        b = memoryview(data).cast("B")
        if seek < 0 or seek + len(b) > self._size:
            raise RuntimeError(f"bo.write: {len(b)} bytes at {seek} exceed the buffer's {self._size}")
        self._host[seek: seek + len(b)] = b
        self._host_dirty[seek: seek + len(b)] = True

    def read(self, size: int, skip: int):
        if skip < 0 or skip + size > self._size:
            raise RuntimeError(f"bo.read: {size} bytes at {skip} exceed the buffer's {self._size}")
        if self._dev_newer[skip: skip + size].any():
            raise RuntimeError("bo.read: a kernel wrote this buffer since its last sync(XCL_BO_SYNC_BO_FROM_DEVICE); "
                               "the host copy is stale (test double: real XRT would return the stale bytes)")
        return np.frombuffer(bytes(self._host[skip: skip + size]), dtype=np.int8)

    def sync(self, direction, size: int | None = None, offset: int = 0) -> None:
        size = self._size if size is None else int(size)
        if offset < 0 or offset + size > self._size:
            raise RuntimeError(f"bo.sync: {size} bytes at {offset} exceed the buffer's {self._size}")
        if xclBOSyncDirection(direction) == xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE:
            self._dev[offset: offset + size] = self._host[offset: offset + size]
            self._host_dirty[offset: offset + size] = False
        else:
            self._host[offset: offset + size] = self._dev[offset: offset + size]
            self._dev_newer[offset: offset + size] = False


class kernel:  # noqa: N801
    def __init__(self, dev: device, xuuid: uuid, name: str, *mode):
        if not isinstance(dev, device) or dev._xclbin is None:
            raise RuntimeError("kernel(): no xclbin loaded on the device")
        if xuuid != dev._xclbin.get_uuid():
            raise RuntimeError("kernel(): the xclbin uuid is not the one loaded on the device")
        meta = next((k for k in dev._xclbin._meta["kernels"] if k["name"] == name), None)
        if meta is None:
            raise RuntimeError(f"No such kernel '{name}'")
        self._dev, self._name, self._meta = dev, name, meta
        self._in_flight: run | None = None

    def group_id(self, argno: int) -> int:
        args = self._meta["args"]
        if not 0 <= argno < len(args):
            raise RuntimeError(f"Bad argument index '{argno}'")
        banks = args[argno]["banks"]
        return banks[0] if banks else -1


class run:  # noqa: N801
    def __init__(self, k: kernel):
        if not isinstance(k, kernel):
            raise TypeError("run(): expects a pyxrt.kernel")
        self._k = k
        self._args: dict[int, object] = {}
        self._state = ert_cmd_state.ERT_CMD_STATE_NEW
        self._waited = True

    def set_arg(self, index: int, value) -> None:
        args = self._k._meta["args"]
        if not isinstance(index, int) or not 0 <= index < len(args):
            raise RuntimeError(f"Bad argument index '{index}'")
        a = args[index]
        if a["kind"] == "global":
            if not isinstance(value, bo):
                raise TypeError(f"set_arg({index}): argument '{a['name']}' of {self._k._name} is a global buffer; "
                                f"got {type(value).__name__}")
            if a["banks"] and value.group not in a["banks"]:
                raise RuntimeError(f"set_arg({index}): bo in memory bank HBM[{value.group}] but argument '{a['name']}' "
                                   f"of {self._k._name} is connected to {[f'HBM[{b}]' for b in a['banks']]}")
        else:
            if isinstance(value, bo) or isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"set_arg({index}): argument '{a['name']}' of {self._k._name} is a scalar; "
                                f"pyxrt takes an int, got {type(value).__name__}")
            if not -(2**31) <= int(value) < 2**31:
                raise TypeError(f"set_arg({index}): {value} does not fit the 32-bit int pyxrt passes")
            if a["size"] != 4:
                raise RuntimeError("Bad argument size '4'")
        self._args[index] = value

    def start(self) -> None:
        k = self._k
        missing = [a["name"] for a in k._meta["args"] if a["index"] not in self._args]
        if missing:
            raise RuntimeError(f"start(): arguments never set on {k._name}: {missing}")
        bos = [v for v in self._args.values() if isinstance(v, bo)]
        dirty = [k._meta["args"][i]["name"] for i, v in self._args.items() if isinstance(v, bo) and v._host_dirty.any()]
        if dirty:
            raise RuntimeError(f"start(): buffers {dirty} hold host writes not synced to the device "
                               "(sync(XCL_BO_SYNC_BO_TO_DEVICE) before the run; test double)")
        with _LOCK:
            prev = k._in_flight
            if prev is not None and not prev._waited:
                raise RuntimeError(f"start(): a run of {k._name} was started and not waited for")
            self._waited = False
            k._in_flight = self
        if k._name in _HUNG:
            self._state = ert_cmd_state.ERT_CMD_STATE_RUNNING
            return
        _execute(k._name, k._meta, self._args)
        for b in bos:
            b._dev_newer[:] = True
        self._state = ert_cmd_state.ERT_CMD_STATE_COMPLETED

    def wait(self, timeout_ms: int = 0):
        if self._state == ert_cmd_state.ERT_CMD_STATE_RUNNING:
            if timeout_ms:
                return ert_cmd_state.ERT_CMD_STATE_TIMEOUT
            raise RuntimeError("wait() without a timeout on a hung run would never return (test double)")
        self._waited = True
        return self._state

    def state(self):
        return self._state


# ---------------------------------------------------------------------------------------------
# Execution: the entry points compiled by the C-sim build stack

_LIBS: dict[str, ctypes.CDLL] = {}


def _library() -> ctypes.CDLL:
    """The generated entry points linked with the synthesized sources of every design they wrap (as each
    design.desc lists them), built by the C-sim build stack (same flags, cache and snapshot rules)."""
    if "lib" in _LIBS:
        return _LIBS["lib"]
    import subprocess

    from eagle4.backends import csim_build, hls_designs, xrt_abi

    hls = csim_build.HLS_DIR
    ds = csim_build.all_designs()
    srcs: list[Path] = []
    for d in ("draft_tree_score", "update_draft_state", "work_deltas", "tree_mask", "logits_to_probas",
              "reject_sample", "update_verify", "fused_draft", "fused_verify"):
        srcs += [f for f in hls_designs.synth_sources(d, ds) if f not in srcs]
    snap = csim_build.snapshot_sources(csim_build.header_files(include_tb=False) + srcs)
    generated = {rel: data for rel, data in xrt_abi.generated_sources().items() if rel.endswith(".cpp")}
    snap.update(generated)  # the entry points, generated from the tops as the board build generates them
    rels = [str(s.relative_to(hls)) for s in srcs] + sorted(generated)
    flags = list(csim_build.BASE_FLAGS)
    digest = "xrtdouble-" + csim_build.build_digest("xrt-double", snap, flags + rels)
    root = csim_build.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    cxx = csim_build.find_cxx()

    def builder(tmp: Path):
        src_root = csim_build.materialize(snap, tmp / "src")
        objs = []
        for rel in rels:
            # the tops include their headers by folder-relative names; the entry points by "<key>/<key>.hpp"
            fl = flags + [f"-I{src_root}", f"-I{(src_root / rel).parent}", f"-I{src_root / 'fused' / 'common'}"]
            obj = tmp / rel.replace("/", "__").replace(".cpp", ".o")
            _, rc, out = csim_build.compile_source(cxx, fl, src_root / rel, obj, src_root, root)
            if rc:
                raise RuntimeError(f"test double: compiling {rel} failed (nothing cached):\n{out}")
            objs.append(str(obj))
        p = subprocess.run([cxx, "-shared", "-o", str(tmp / "libxrtdouble.so"), *objs], capture_output=True, text=True)
        if p.returncode:
            raise RuntimeError(f"test double: link failed:\n{p.stderr}")
        for o in objs:
            Path(o).unlink()
        (tmp / "build.json").write_text(json.dumps({"kernels": list(xrt_abi.KERNEL_NAMES), "sources": rels,
                                                    "complete": True}))

    entry, _ = csim_build.cached_build(root, digest, builder)
    _LIBS["lib"] = ctypes.CDLL(str(entry / "libxrtdouble.so"))
    return _LIBS["lib"]


def _execute(name: str, meta: dict, args: dict[int, object]) -> None:
    lib = _library()
    fn = getattr(lib, name)
    cargs, types, keep = [], [], []
    for a in meta["args"]:
        v = args[a["index"]]
        if a["kind"] == "global":
            buf = (ctypes.c_char * v._size).from_buffer(v._dev)
            keep.append(buf)
            cargs.append(ctypes.cast(buf, ctypes.c_void_p))
            types.append(ctypes.c_void_p)
        elif a["ctype"] == "float":  # the register holds the float's bits (pyxrt passes them as an int)
            cargs.append(struct.unpack("<f", struct.pack("<i", int(v)))[0])
            types.append(ctypes.c_float)
        else:
            cargs.append(int(v))
            types.append(ctypes.c_int)
    fn.argtypes = types
    fn.restype = None
    fn(*cargs)

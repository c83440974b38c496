"""FPGA board backend: the seven kernels (and the two fused pipelines) from an xclbin through pyxrt.

``XrtBackend(xclbin=PATH)`` (or ``EAGLE4_XCLBIN``, or the contract's ``[fpga] xclbin``): opens device 0,
loads the xclbin, and finds every entry point of ``eagle4.backends.xrt_abi.KERNEL_NAMES`` by name (a
stale xclbin, whose argument count differs from the tops', is refused). One call of ``run``:

1. checks the arrays against the spec (shapes, dtypes) and allocates the outputs as the C-sim does;
2. binds the entry point's arguments by name: a buffer object per m_axi argument, allocated in the
   memory bank the argument is connected to (``kernel.group_id``), reused across calls; the scalars from
   the params, or derived from the arrays as the C ABI wrappers derive them (``DERIVED``), each a
   32-bit int (float bits for f32 scalars);
3. writes and syncs every buffer to the device, starts the run and waits with a timeout (never
   unbounded: a hung run raises ``XrtTimeout`` naming the kernel, the call and the timeout, and the
   kernel handle is reopened so the next call does not inherit it);
4. syncs back and reads the outputs and the counters block (``last_counters``; ``last_port_bytes``
   when the build counts bytes), and times the call (``last_timing``: host->device, kernel, device->host).

Kernel preconditions are the design's: the tops have no error channel except K6's ``err_info`` and the
fused pipelines' status, which ``run`` turns into ``PreconditionError``.

Provenance: ``measured`` on a board. The pyxrt test double of ``tests/xrt_double`` declares itself
(``EAGLE4_TEST_DOUBLE``); numbers obtained through it are labelled ``double``, which no gate accepts.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import struct
import time
from pathlib import Path

import numpy as np

from eagle4 import envvars
from eagle4.backends import xrt_abi
from eagle4.backends.base import Backend, BackendUnavailable, DeviceInfo, requested_buffers
from eagle4.spec import check_arrays, kernel_spec

DEFAULT_TIMEOUT_S = 10.0
MIN_BO_BYTES = 64  # absent optional buffers still need a valid bo (the flag scalar keeps the kernel off it)


class XrtTimeout(RuntimeError):
    """A run did not complete within the timeout; the message names kernel, call and timeout."""


def _present(name):
    return lambda t, p: int(t.get(name) is not None)


# Scalars of the tops that are not spec params: derived from the arrays exactly as the C ABI wrappers
# (hls/<key>/<key>_capi.cpp) derive them before calling the same top.
DERIVED = {
    "draft_tree_score": {
        "hot_len": lambda t, p: int(t["hot_token_id"].shape[0]) if p["use_hot_token_id"] and t.get("hot_token_id") is not None else 0,
        "hidden_size": lambda t, p: int(t["input_hidden_states"].shape[-1]),
        "has_tokens": _present("topk_tokens_sampling"),
        "write_output_tokens": _present("output_tokens"),
    },
    "work_deltas": {"write_per_req": _present("per_req_deltas")},
    "logits_to_probas": {
        "B": lambda t, p: int(t["temperatures"].shape[0]),
        "G": lambda t, p: int(p["rows_per_req"]),
        "V": lambda t, p: int(t["logits"].shape[-1]),
    },
    "update_verify": {
        "hidden_words": lambda t, p: int(t["hidden_states"].shape[-1] * t["hidden_states"].dtype.itemsize // 2),
        "has_node_ids": _present("verify_node_ids"),
    },
}


def _runtime():
    """The pyxrt module, imported lazily; BackendUnavailable naming what is missing."""
    try:
        return importlib.import_module("pyxrt")
    except ImportError as e:
        raise BackendUnavailable(
            f"pyxrt (XRT's Python binding) is not importable ({e}): install XRT and `source /opt/xilinx/xrt/setup.sh`, "
            "or run inside the fpga-xrt image") from None


def is_double(rt) -> bool:
    return bool(getattr(rt, "EAGLE4_TEST_DOUBLE", False))


def resolve_xclbin(xclbin: str | os.PathLike | None = None, contract=None) -> Path | None:
    """--xclbin, else EAGLE4_XCLBIN, else the contract's [fpga] xclbin (relative to the contract)."""
    if xclbin:
        return Path(xclbin)
    if os.environ.get("EAGLE4_XCLBIN"):
        return Path(os.environ["EAGLE4_XCLBIN"])
    if contract is not None:
        from eagle4.contract import fpga_section

        rel = fpga_section(contract).xclbin
        if rel:
            base = Path(getattr(contract, "source_path", ".") or ".").parent
            return (base / rel) if not Path(rel).is_absolute() else Path(rel)
    return None


def board_missing(xclbin: str | os.PathLike | None = None, device_index: int = 0) -> str | None:
    """None when pyxrt, a device and the xclbin are all here, else what is missing (one sentence)."""
    try:
        rt = _runtime()
    except BackendUnavailable as e:
        return str(e)
    enum = getattr(rt, "enumerate_devices", None)  # older pyxrt lacks it: open the device instead
    try:
        present = int(enum()) > device_index if enum is not None else bool(rt.device(device_index))
    except Exception as e:  # noqa: BLE001 - any failure of the driver query means no usable device
        return f"no FPGA device {device_index}: pyxrt could not open it ({type(e).__name__}: {e})"
    if not present:
        return (f"no FPGA device {device_index}: pyxrt.enumerate_devices() = {enum()} "
                "(check `xbutil examine`, the driver and the board's power)")
    path = resolve_xclbin(xclbin)
    if path is None:
        return ("no xclbin: pass --xclbin PATH, set EAGLE4_XCLBIN or [fpga] xclbin in the contract "
                "(build one with `make -C hls xclbin TARGET=hw PLATFORM=...`)")
    if not path.is_file():
        return f"the xclbin {path} does not exist (build it with `make -C hls xclbin TARGET=hw PLATFORM=...`)"
    return None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class XrtBackend(Backend):
    name = "xrt"

    def __init__(self, xclbin: str | os.PathLike | None = None, device_index: int = 0,
                 timeout_s: float | None = None):
        self.xclbin_path = resolve_xclbin(xclbin)
        self.device_index = device_index
        self.timeout_s = float(timeout_s) if timeout_s else envvars.seconds("EAGLE4_XRT_TIMEOUT_S", DEFAULT_TIMEOUT_S)
        self._rt = None
        self._dev = None
        self._uuid = None
        self._kernels: dict[str, object] = {}
        self._bos: dict[tuple[str, int], object] = {}
        self.board: dict[str, str] = {}
        self.last_counters: dict = {}
        self.last_port_bytes: dict[str, tuple[int, int]] = {}
        self.last_timing: dict[str, float] = {}

    @property
    def provenance(self) -> str:  # type: ignore[override]
        if self._rt is None:
            try:
                self._rt = _runtime()
            except BackendUnavailable:
                return "measured"
        return "double" if is_double(self._rt) else "measured"

    # -- availability and opening ------------------------------------------------------------
    def available(self):
        why = board_missing(self.xclbin_path, self.device_index)
        return (why is None), (why or "")

    def open(self) -> None:
        if self._dev is not None:
            return
        self.require()
        rt = self._rt = _runtime()
        self._dev = rt.device(self.device_index)
        xb = rt.xclbin(str(self.xclbin_path))
        self._uuid = self._dev.load_xclbin(xb)
        have = {k.get_name(): k.get_num_args() for k in xb.get_kernels()}
        missing = [n for n in xrt_abi.KERNEL_NAMES if n not in have]
        if missing:
            raise BackendUnavailable(f"backend 'xrt': the xclbin {self.xclbin_path} lacks the kernels {missing} "
                                     "(rebuild it with `make -C hls xclbin`)")
        stale = {n: (have[n], len(xrt_abi.interface(n).xrt_args())) for n in xrt_abi.KERNEL_NAMES
                 if have[n] != len(xrt_abi.interface(n).xrt_args())}
        if stale:
            raise BackendUnavailable(f"backend 'xrt': the xclbin {self.xclbin_path} was built from other tops "
                                     f"(kernel: (xclbin args, current args)) {stale}; rebuild it with `make -C hls xclbin`")
        for n in xrt_abi.KERNEL_NAMES:
            self._kernels[n] = rt.kernel(self._dev, self._uuid, n)
        self.board = self._board_info(xb)

    def _board_info(self, xb) -> dict[str, str]:
        rt = self._rt
        info = {"fpga_backend": "pyxrt test double (C-sim underneath)" if is_double(rt) else "pyxrt",
                "fpga_xclbin": str(self.xclbin_path), "fpga_xclbin_sha256": _sha256(self.xclbin_path),
                "fpga_xclbin_uuid": self._uuid.to_string(), "fpga_shell": xb.get_xsa_name()}
        for key, label in (("name", "fpga_board"), ("bdf", "fpga_bdf"), ("max_clock_frequency_mhz", "fpga_clock_mhz")):
            try:
                info[label] = self._dev.get_info(getattr(rt.xrt_info_device, key))
            except Exception as e:  # noqa: BLE001 - a query the driver does not answer is recorded as such
                info[label] = f"unavailable ({type(e).__name__})"
        try:
            host = json.loads(self._dev.get_info(rt.xrt_info_device.host))
            info["fpga_xrt_version"] = str(host.get("version") or (host.get("xrt") or {}).get("version")
                                           or (host.get("build") or {}).get("version") or host)
        except Exception as e:  # noqa: BLE001
            info["fpga_xrt_version"] = f"unavailable ({type(e).__name__})"
        return info

    def device_info(self) -> DeviceInfo:
        board = self.board.get("fpga_board", "fpga (not opened)")
        return DeviceInfo(self.name, f"{board} [{self.provenance}]", dict(self.board))

    def supports(self, kernel: str) -> bool:
        return True  # every spec kernel has an entry point (xrt_abi.KERNEL_TABLE)

    # -- one call ------------------------------------------------------------------------------
    def _entry(self, key: str, tensors: dict) -> str:
        if key == "draft_tree_score":
            return "krnl_draft_tree_score_f32" if tensors["input_hidden_states"].dtype.itemsize == 4 \
                else "krnl_draft_tree_score"
        return f"krnl_{key}"

    def _bo(self, kname: str, index: int, nbytes: int):
        k = self._kernels[kname]
        key = (kname, index)
        b = self._bos.get(key)
        if b is None or b.size() < nbytes:
            b = self._rt.bo(self._dev, max(nbytes, MIN_BO_BYTES), self._rt.bo.flags.normal, k.group_id(index))
            self._bos[key] = b
        return b

    def run(self, kernel, inputs, params, want=()):
        from eagle4.backends.csim import CsimBackend
        from eagle4.kernels import PreconditionError

        self.open()
        spec = kernel_spec(kernel)
        env = check_arrays(spec, inputs, params, role="inputs")
        inputs = {**inputs, **requested_buffers(spec, inputs, params, want)}  # optional outputs asked for
        outs = {a.name: np.array(inputs[a.name], copy=True, order="C") for a in spec.outputs if a.name in inputs}
        outs.update(CsimBackend._allocate(self, spec, inputs, params, env))  # same output sizing as the C-sim
        ins = {a.name: np.ascontiguousarray(inputs[a.name]) for a in spec.tensors if a.role == "in" and a.name in inputs}
        if spec.key == "logits_to_probas" and ins["logits"].dtype != np.float32:
            ins["logits"] = ins["logits"].astype(np.float32)  # f16/bf16 -> f32 is exact (§5.3), as the C-sim does
        tensors = {**ins, **outs}
        kname = self._entry(spec.key, tensors)
        derived = DERIVED.get(spec.key, {})
        scalars = {}
        for a in xrt_abi.interface(kname).scalars:
            if a.name in derived:
                scalars[a.name] = derived[a.name](tensors, params)
            elif a.name in params:
                scalars[a.name] = params[a.name]
            else:
                raise BackendUnavailable(f"backend 'xrt': {kname}.{a.name} is neither a param of {spec.key} nor "
                                         "derived (eagle4.backends.xrt.DERIVED); the top changed")
        bufs = self._upload(kname, tensors)
        shapes = {n: tuple(a.shape) for n, a in ins.items()}
        self._launch(kname, bufs, scalars, what=f"params {dict(params)}, input shapes {shapes}")
        self._download(bufs, outs)
        if spec.key == "reject_sample" and self.last_counters["status"] != 0:
            raise PreconditionError(f"reject_sample: the kernel refused the call (status "
                                    f"{self.last_counters['status']}, err_info {self.last_counters['aux']})")
        return outs

    # -- buffers and launches (shared by the kernels and the fused pipelines) -----------------------
    def _upload(self, kname: str, arrays: dict[str, np.ndarray | None]) -> dict[str, tuple[object, int]]:
        """One bo per m_axi argument of ``kname`` (in its bank), filled from ``arrays`` and synced to the device;
        plus the counters block. Returns {argument: (bo, bytes used)}."""
        t0 = time.perf_counter()
        to_dev = self._rt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE
        bufs = {}
        for i, (name, kind, _) in enumerate(xrt_abi.interface(kname).xrt_args()):
            if kind != "global":
                continue
            if name == "e4_counters":
                nbytes = 8 * xrt_abi.counters_words(len(xrt_abi.interface(kname).buffers))
                b = self._bo(kname, i, nbytes)
            else:
                arr = arrays.get(name)
                nbytes = arr.nbytes if arr is not None else 0
                b = self._bo(kname, i, nbytes)
                if nbytes:
                    b.write(np.ascontiguousarray(arr).reshape(-1).view(np.uint8), 0)
            b.sync(to_dev, b.size(), 0)
            bufs[name] = (b, nbytes)
        self.last_timing = {"h2d_s": time.perf_counter() - t0}
        return bufs

    def _launch(self, kname: str, bufs: dict, scalars: dict, *, what: str, views: dict | None = None) -> None:
        """Set every argument (``views``: {argument: sub-bo} replacing a whole buffer), start, wait with the
        timeout, read the counters block into ``last_counters``."""
        rt, iface = self._rt, xrt_abi.interface(kname)
        t1 = time.perf_counter()
        r = rt.run(self._kernels[kname])
        for i, (name, kind, _) in enumerate(iface.xrt_args()):
            if kind == "global":
                r.set_arg(i, (views or {}).get(name) or bufs[name][0])
            else:
                r.set_arg(i, _register(scalars[name], next(a.host_scalar for a in iface.args if a.name == name),
                                       kname, name))
        r.start()
        state = r.wait(int(self.timeout_s * 1000))
        t2 = time.perf_counter()
        if state != rt.ert_cmd_state.ERT_CMD_STATE_COMPLETED:
            self._kernels[kname] = rt.kernel(self._dev, self._uuid, kname)  # do not reuse the hung handle
            self._bos = {key: b for key, b in self._bos.items() if key[0] != kname}
            kind = XrtTimeout if "TIMEOUT" in str(state) else RuntimeError
            raise kind(f"xrt: {kname} ({iface.key or 'fused pipeline'}) did not complete: state {state} after "
                       f"{self.timeout_s:g} s (call: {what}); the kernel handle was reopened")
        cb, nbytes = bufs["e4_counters"]
        cb.sync(rt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE, nbytes, 0)
        words = np.asarray(cb.read(nbytes, 0)).view(np.uint64)
        self.last_timing["kernel_s"] = self.last_timing.get("kernel_s", 0.0) + (t2 - t1)
        self._read_counters(kname, iface, words)

    def _download(self, bufs: dict, outs: dict[str, np.ndarray]) -> None:
        t0 = time.perf_counter()
        from_dev = self._rt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE
        for name, arr in outs.items():
            if arr is None:
                continue
            b, nbytes = bufs[name]
            if nbytes:
                b.sync(from_dev, nbytes, 0)
                arr.reshape(-1).view(np.uint8)[:] = np.asarray(b.read(nbytes, 0)).view(np.uint8)
        self.last_timing["d2h_s"] = time.perf_counter() - t0

    # -- the fused pipelines (the host protocol of hls/fused/*/..._synth.cpp) ------------------------
    def fused_draft_step(self, s, inputs: dict[str, np.ndarray], candidates=None) -> dict[str, np.ndarray]:
        """One draft step of ``krnl_fused_draft`` (``s``: eagle4.backends.fused_csim.DraftShape): phase 0, one
        phase-1 call per layer on that layer's slices (sub-buffers) of the per-layer buffers, phase 2.
        ``candidates`` (cand_p, cand_t): the testbench mode (bypass_lm_head). Returns the DRAFT_OUTPUTS."""
        from eagle4.backends import fused_csim as fc

        self.open()
        kname = "krnl_fused_draft"
        a = {k: np.ascontiguousarray(np.array(v, copy=True)) for k, v in inputs.items() if v is not None}
        if candidates is not None:
            a["cand_p"] = np.ascontiguousarray(candidates[0], dtype=np.float32)
            a["cand_t"] = np.ascontiguousarray(candidates[1], dtype=np.int64)
        (B, K, D, H, Vt, Vh, N, M, I, S_max, Tcap, capkv, cappack, use_hot, hid_code, w_code,
         vn_final) = fc._draft_iscalars(s, a)
        if (hid_code, w_code) != (1, fc.W_CODES["int4"]):
            raise ValueError("krnl_fused_draft is built for bf16 hidden states and a packed int4 LM head "
                             f"(got hidden code {hid_code}, weight code {w_code})")
        cfg = dict(B=B, K=K, D=D, H=H, Vt=Vt, Vh=Vh, N=N, M=M, I=I, S_max=S_max, Tcap=Tcap, capkv=capkv,
                   cappack=cappack, use_hot=use_hot, vn_final=vn_final, bypass_lm_head=int(candidates is not None))
        for name, part in zip(fc.LM_WEIGHT_PORTS, fc.split_lm_weight(a.pop("lm_weight")), strict=True):
            a[name] = part  # the LM head over the weight ports (the design's layout)
        bufs = self._upload(kname, a)
        widths, vns = a["widths"].tolist(), a["verify_nums"].tolist()
        per_layer = {"draft_hidden": B * K * H, "out_hidden": B * K * H, "out_tokens": B * K, "work_deltas": K + 1,
                     "qo_indptr": B + 1, "kv_indptr": B + 1, "kv_indices": capkv, "positions": B * K,
                     "mask_indptr_bits": B + 1, "mask_indptr_bytes": B + 1, "packed_mask": cappack,
                     "cand_p": B * 64, "cand_t": B * 64}

        def call(phase, d=0):
            views = {}
            if phase == 1:
                for name, per in per_layer.items():
                    if name in a and bufs[name][1]:
                        item = a[name].dtype.itemsize
                        off, size = d * per * item, bufs[name][1] - d * per * item
                        views[name] = self._rt.bo(bufs[name][0], size, off)
            sc = {**cfg, "phase": phase, "W": widths[d] if phase == 1 else 0,
                  "W_next": widths[d + 1] if phase == 1 and d + 1 < D else 0, "Vn": vns[d] if phase == 1 else 0}
            self._launch(kname, bufs, sc, what=f"phase {phase} layer {d}", views=views)
            if self.last_counters["status"] != 0:
                raise RuntimeError(f"xrt: {kname} phase {phase} layer {d} returned {self.last_counters['status']} "
                                   "(-2: a size exceeds a bound of e4f_bounds.h)")

        call(0)
        for d in range(D):
            call(1, d)
        call(2)
        outs = {k: a[k] for k in fc.DRAFT_OUTPUTS if k in a}
        self._download(bufs, outs)
        return outs

    def fused_verify_step(self, s, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One verify step of ``krnl_fused_verify`` (``s``: fused_csim.VerifyShape, bf16 hidden states)."""
        from eagle4.backends import fused_csim as fc

        self.open()
        kname = "krnl_fused_verify"
        a = {k: np.ascontiguousarray(np.array(v, copy=True)) for k, v in inputs.items() if v is not None}
        isc = fc._verify_iscalars(s, a)
        if isc[7] != 1:
            raise ValueError("krnl_fused_verify is built for bf16 hidden states")
        sc = dict(zip(("B", "Q", "S", "V", "H", "S_max", "eos", "capkv", "cappack"),
                      [v for i, v in enumerate(isc) if i != 7], strict=True))
        sc.update(threshold_single=s.threshold_single, threshold_acc=s.threshold_acc,
                  has_node_ids=int(a.get("verify_node_ids") is not None))
        bufs = self._upload(kname, a)
        self._launch(kname, bufs, sc, what=f"B={s.B} Q={s.Q} V={s.V}")
        if self.last_counters["status"] != 0:
            raise RuntimeError(f"xrt: {kname} returned {self.last_counters['status']}")
        outs = {k: a[k] for k in fc.VERIFY_OUTPUTS if k in a and k not in fc.VERIFY_DEBUG}  # taps: no ports
        self._download(bufs, outs)
        return outs

    def _read_counters(self, kname, iface, words) -> None:
        if int(words[0]) != xrt_abi.COUNTERS_MAGIC:
            raise RuntimeError(f"xrt: {kname} wrote no counters block (word 0 = {int(words[0]):#x}, expected "
                               f"{xrt_abi.COUNTERS_MAGIC:#x}); the xclbin was not built by `make -C hls xclbin`")
        head = {n: int(words[i]) for i, n in enumerate(xrt_abi.HEADER_WORDS)}
        for n in ("status", "aux"):
            head[n] = int(np.int64(np.uint64(head[n])))
        ports = {a.name: (int(words[8 + 2 * i]), int(words[9 + 2 * i])) for i, a in enumerate(iface.buffers)}
        counted = all(r != xrt_abi.NOT_COUNTED for r, _ in ports.values())
        self.last_counters = {**head, "kernel": kname, "ports": ports, "bytes_counted": counted,
                              "cycles_counted": head["cycles"] != xrt_abi.NOT_COUNTED}
        self.last_port_bytes = ports if counted else {}


def _register(v, host_scalar: str, kname: str, name: str) -> int:
    """The 32-bit register value pyxrt's run.set_arg(index, int) passes."""
    if host_scalar == "float":
        return struct.unpack("<i", struct.pack("<f", float(np.float32(v))))[0]
    iv = int(bool(v)) if isinstance(v, (bool, np.bool_)) else int(v)
    if not -(2**31) <= iv < 2**31:
        raise ValueError(f"xrt: {kname}.{name} = {iv} does not fit the entry point's 32-bit register")
    return iv


def board_fields(xclbin=None) -> dict[str, str]:
    """Board name, shell, XRT version, xclbin path/hash/uuid and clock of the FPGA the xrt backend opens
    (``xclbin`` or EAGLE4_XCLBIN); one ``fpga_board`` line saying why when there is no usable board."""
    why = board_missing(xclbin)
    if why:
        return {"fpga_board": f"absent ({why})"}
    b = XrtBackend(xclbin=xclbin)
    try:
        b.open()
    except Exception as e:  # noqa: BLE001 - the manifest records why, the run itself reports the failure
        return {"fpga_board": f"unusable ({type(e).__name__}: {e})"}
    return {**b.board, "fpga_provenance": b.provenance}

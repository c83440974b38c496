"""One interface for every backend: run a kernel by name on named numpy arrays; plus, for backends
that can, a device-tensor interface for engines that keep their state on the device.

``run(kernel, inputs, params) -> outputs``
* ``inputs``: every pure input tensor, plus the prior contents of in/out buffers and of output
  buffers whose untouched regions are compared (sentinels), keyed by the spec's argument name;
* ``params``: the kernel's scalar arguments by name;
* returns every output the backend produced (in/out buffers after the call included), keyed by name.
A backend never mutates the caller's arrays.

``call(kernel, tensors, params) -> tensors`` (device-tensor interface, ``eagle4.workload.engine``)
* ``tensors``: torch tensors on the backend's device, keyed by the spec's argument name; output
  buffers the caller passes are written in place (outputs it omits are allocated);
* no numpy, no host copy, no synchronisation; ``graph_safe`` says whether a call may be captured
  in a CUDA graph (no host-side checks that read device data).
Parity keeps using ``run``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from eagle4.spec import KernelSpec, check_arrays, shape_of


class BackendUnavailable(RuntimeError):
    """The backend cannot run here (missing tool, library, device or board); the message says what."""


@dataclass(frozen=True)
class DeviceInfo:
    backend: str
    device: str  # e.g. "cpu", "NVIDIA H100 80GB HBM3", "xilinx_u55c_gen3x16_xdma_3_202210_1"
    details: dict


class Backend(ABC):
    name: str = "?"
    provenance: str = "?"  # how its outputs are obtained: "reference", "csim", "measured", "dump"

    def available(self) -> tuple[bool, str]:
        """(True, "") when the backend can run here, else (False, what is missing and how to get it)."""
        return True, ""

    def require(self) -> None:
        ok, why = self.available()
        if not ok:
            raise BackendUnavailable(f"backend {self.name!r} is not available: {why}")

    @abstractmethod
    def run(self, kernel: str, inputs: dict[str, np.ndarray], params: dict,
            want: Collection[str] = ()) -> dict[str, np.ndarray]:
        ...

    def device_info(self) -> DeviceInfo:
        return DeviceInfo(self.name, "cpu", {})

    def call(self, kernel: str, tensors: dict, params: dict) -> dict:
        """Device-tensor interface (see the module docstring); backends without one say so."""
        raise BackendUnavailable(f"backend {self.name!r} has no device-tensor interface (only run() on numpy arrays)")

    @property
    def graph_safe(self) -> bool:
        return False

    def supports(self, kernel: str) -> bool:
        return True


def requested_buffers(spec: KernelSpec, inputs: dict[str, np.ndarray], params: dict,
                      want: Collection[str]) -> dict[str, np.ndarray]:
    """Poison-filled buffers for the optional outputs in ``want`` that ``inputs`` does not hold yet.

    Passing the buffer is how the CUDA op (and every backend here) is asked for an optional output,
    so a backend adds these to its inputs and runs as usual. Outputs with a data-dependent cap
    (``*`` in the shape) are sized by the kernel when its inputs ask for them, so they are left out.
    """
    import torch

    from eagle4 import dtypes as dt
    from eagle4.kernels import poison

    optional = {a.name for a in spec.outputs if a.optional}
    unknown = sorted(set(want) - optional)
    if unknown:
        raise ValueError(f"{spec.key}: {unknown} are not optional outputs of {spec.op}; optional: {sorted(optional)}")
    todo = [a for a in spec.outputs if a.name in want and a.name not in inputs and "*" not in a.shape]
    if not todo:
        return {}
    env = check_arrays(spec, inputs, params, role="inputs")
    hidden = next((dt.logical_dtype(inputs[a.name]) for a in spec.tensors
                   if a.dtype == "hidden" and a.name in inputs), "float32")
    return {a.name: dt.to_numpy(poison(shape_of(a, env), dt.torch_dtype(hidden if a.dtype == "hidden" else a.dtype),
                                       torch.device("cpu")))
            for a in todo}

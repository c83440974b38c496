"""One interface for every backend: run a kernel by name on named numpy arrays.

``run(kernel, inputs, params) -> outputs``
* ``inputs``: every pure input tensor, plus the prior contents of in/out buffers and of output
  buffers whose untouched regions are compared (sentinels), keyed by the spec's argument name;
* ``params``: the kernel's scalar arguments by name;
* returns every output the backend produced (in/out buffers after the call included), keyed by name.
A backend never mutates the caller's arrays.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np


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
    def run(self, kernel: str, inputs: dict[str, np.ndarray], params: dict) -> dict[str, np.ndarray]:
        ...

    def device_info(self) -> DeviceInfo:
        return DeviceInfo(self.name, "cpu", {})

    def supports(self, kernel: str) -> bool:
        return True

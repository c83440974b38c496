"""The PyTorch reference as a backend (CPU, or CUDA tensors with device="cuda")."""

from __future__ import annotations

import numpy as np
import torch

from eagle4 import dtypes as dt
from eagle4 import kernels
from eagle4.backends.base import Backend, DeviceInfo, requested_buffers
from eagle4.spec import check_arrays, kernel_spec


class ReferenceBackend(Backend):
    name = "ref"
    provenance = "reference"

    def __init__(self, device: str = "cpu"):
        self.device = torch.device(device)

    def available(self):
        if self.device.type == "cuda" and not torch.cuda.is_available():
            return False, "torch.cuda.is_available() is False (no NVIDIA GPU or driver on this machine)"
        return True, ""

    def run(self, kernel, inputs, params, want=()):
        self.require()
        spec = kernel_spec(kernel)
        check_arrays(spec, inputs, params, role="inputs")
        inputs = {**inputs, **requested_buffers(spec, inputs, params, want)}
        tensors = {k: dt.to_torch(v, self.device) for k, v in inputs.items()}
        out = kernels.call(spec.key, tensors, params)
        return {k: dt.to_numpy(v) for k, v in out.items()}

    def call(self, kernel, tensors, params):
        """Device-tensor interface: the reference on torch tensors, outputs written in place. Its
        precondition checks read device data, so it is not graph-safe."""
        return kernels.call(kernel_spec(kernel).key, tensors, params)

    def device_info(self):
        name = torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu"
        return DeviceInfo(self.name, name, {"torch": torch.__version__, "numpy": np.__version__})

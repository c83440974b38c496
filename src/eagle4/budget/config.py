"""What the budget reads from the contract: the validated ``[fpga]`` section (its schema lives with
the contract loader, :mod:`eagle4.contract.fpga`), and the bytes per element of each dtype."""

from __future__ import annotations

from eagle4.contract import fpga_section
from eagle4.contract.fpga import BackendDecl, CsimSizes, FpgaModel, FpgaSection

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1, "fp8": 1, "int4": 0.5}

__all__ = ["DTYPE_BYTES", "fpga_section", "FpgaSection", "FpgaModel", "BackendDecl", "CsimSizes"]

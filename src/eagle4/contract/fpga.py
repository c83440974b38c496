"""The contract's ``[fpga]`` section: device, bandwidth, clock targets, the deployment model the
byte accounting uses, what the "initial unfused backend" is and what the fused backend changes.

Validated by the contract loader (:func:`eagle4.contract.load_contract`); the budget reads it as
``contract.fpga`` (defaults when the contract has no ``[fpga]``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from eagle4.contract.base import Section


class FpgaModel(Section):
    """Model dimensions of the byte accounting (target vocabulary, drafter, dtypes)."""

    name: str = "llama-3.1-8b target + eagle3-style draft head"
    hidden_size: int = Field(4096, ge=1)
    vocab_size: int = Field(128256, ge=2)
    hot_vocab_size: int = Field(32768, ge=1)
    drafter_layers: int = Field(1, ge=0)
    drafter_fc_in: int = Field(3, ge=0, description="fc input = fc_in * hidden (EAGLE-3 fuses 3 hidden states)")
    drafter_intermediate: int = Field(14336, ge=1)
    drafter_heads: int = Field(32, ge=1)
    drafter_kv_heads: int = Field(8, ge=1)
    drafter_head_dim: int = Field(128, ge=1)
    hidden_dtype: Literal["float32", "bfloat16", "float16"] = "bfloat16"
    kv_dtype: Literal["float32", "bfloat16", "float16", "int8", "fp8"] = "bfloat16"
    logits_dtype: Literal["float32"] = "float32"

    @property
    def drafter_params(self) -> int:
        H, I = self.hidden_size, self.drafter_intermediate
        q = H * self.drafter_heads * self.drafter_head_dim
        kv = 2 * H * self.drafter_kv_heads * self.drafter_head_dim
        o = self.drafter_heads * self.drafter_head_dim * H
        mlp = 3 * H * I
        per_layer = q + kv + o + mlp + 2 * H
        return self.drafter_fc_in * H * H + self.drafter_layers * per_layer


class BackendDecl(Section):
    """What one FPGA backend does (the unfused baseline or the fused design)."""

    lm_head_vocab: Literal["full", "hot"] = "full"
    lm_head_dtype: Literal["float32", "bfloat16", "int8", "int4"] = "bfloat16"
    drafter_dtype: Literal["float32", "bfloat16", "float16", "int8", "fp8", "int4"] = "bfloat16"
    k5_passes: int = Field(2, ge=1, le=3, description="unfused only: logits reads per K5 row")
    k4_materialize_bool: bool = True
    k6_sglang_style: bool = True


class CsimSizes(Section):
    """Small-but-representative C-sim sizes; counted bytes are scaled linearly in H and V."""

    hidden: int = Field(32, ge=1, le=2048)
    vocab: int = Field(1024, ge=16, le=65536)
    hot_vocab: int = Field(256, ge=16, le=8192)


class FpgaSection(Section):
    device: str = "AMD Versal V80 (xcv80)"
    hbm_peak_gbps: float = Field(820.0, gt=0)
    hbm_efficiency: float = Field(0.7, gt=0, le=1)
    pcie_gbps: float = Field(32.0, gt=0, description="host link bandwidth per direction, GB/s (declared: PCIe Gen5 x8 "
                             "/ Gen4 x16 payload; a board measurement replaces it)")
    pcie_latency_us: float = Field(10.0, ge=0, description="fixed cost of one DMA transfer, us (declared)")
    bram_mb: float = 16.5
    uram_mb: float = 67.6
    fclk_target_mhz: float = Field(300.0, gt=0, description="declared target clock (model)")
    fclk_public_estimate_mhz: float = Field(
        107.9, gt=0, description="public V80 synthesis of a comparable CostDraftTree orchestrator: 9.27 ns")
    fclk_sweep_mhz: list[float] = Field(default_factory=lambda: [100.0, 200.0, 300.0])
    ii_target: int = Field(1, ge=1, description="declared initiation interval of the inner loops (model)")
    lanes: int = Field(256, ge=1, description="elements processed per cycle per stage at II (model)")
    axi_bytes_per_cycle: int = Field(1024, ge=1, description="m_axi width of one stage: ports x 64 B (model)")
    lm_head_macs_per_cycle: int = Field(4096, ge=1, description="MAC array of the draft LM head (model; V80 DSP58s)")
    ctrl_cycles_per_call: int = Field(300, ge=0, description="control/launch overhead per kernel call (model)")
    synth_reports_dir: str = "reports/synth"
    xclbin: str | None = Field(None, description="the board image of the xrt backend (relative to the contract)")
    model: FpgaModel = FpgaModel()
    unfused: BackendDecl = BackendDecl()
    fused: BackendDecl = BackendDecl(lm_head_vocab="hot", lm_head_dtype="int8", drafter_dtype="int8", k5_passes=1,
                                     k4_materialize_bool=False, k6_sglang_style=False)
    csim: CsimSizes = CsimSizes()

"""WP2's kernel regions (eagle4.workload.step_profile.region_of): every kernel of our CUDA sources is counted
as one of the seven kernels, never as PyTorch glue."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eagle4.workload.step_profile import region_of

CUDA = Path(__file__).resolve().parents[2] / "cuda"
GLOBAL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(")


def test_every_kernel_of_our_cuda_sources_is_in_a_kernel_region():
    names = sorted({n for f in CUDA.glob("*.cu*") for n in GLOBAL.findall(f.read_text())})
    assert len(names) >= 7, names
    for n in names:  # as the profiler names an instantiated template
        assert region_of(f"void {n}<__nv_bfloat16, 8>(__nv_bfloat16 const*, float const*, long)").startswith("K"), n
    assert region_of("void k5s1_kernel<__nv_bfloat16, 8>(__nv_bfloat16 const*, float const*, long)") == "K5"


@pytest.mark.parametrize("name,region", [
    ("nvjet_sm90_tst_256x64_64x5_4x1_v_bz_NNT", "gemm"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0",
     "attention"),
    ("void at::native::mbtopk::computeBlockDigitCounts<long, unsigned int, unsigned long, 2>(...)", "sort_topk"),
    ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "torch_glue"),
    ("triton_poi_fused__unsafe_view_mul_silu_split_0", "torch_glue"),
])
def test_library_and_inductor_kernels_keep_their_regions(name, region):
    assert region_of(name) == region


def test_the_wp2_table_shows_both_roofline_bounds(tmp_path):
    """The self-check's hotspot table gives the byte and the FLOP bound of each batch's step (a compute-bound
    step beside a byte-only roofline says nothing)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("selfcheck", CUDA.parent / "scripts" / "gpu_selfcheck_e2e.py")
    selfcheck = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(selfcheck)
    point = {"B": 128, "step_s_median": 0.239, "kernel_s_per_step": 0.238, "step_over_kernels": 1.005,
             "roofline_bytes_s": 0.00861, "roofline_flops_s": 0.13491, "regions": [("gemm", 0.786)], "top3": 0.964,
             "top_kernels": [("nvjet_sm90_tst_256x64_64x5_4x1_v_bz_NNT", 0.1)], "launches_per_region": {"torch_glue": 463}}
    selfcheck.write_hotspots({"device": "NVIDIA H200", "points": [point]}, tmp_path)
    text = (tmp_path / "h100_e2e_hotspots.md").read_text()
    assert "| roofline bytes/FLOPs (ms) |" in text and "| 8.61 / 134.91 |" in text, text
    assert "dense bf16 989.4 TFLOP/s" in text, text

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

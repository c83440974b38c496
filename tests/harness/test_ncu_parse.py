"""Nsight Compute's CSV as the bench's report step reads it: every kernel of ours the profiler's filter
admits is a launch of a probed point, whatever form it takes (templates print as ``void k6r_kernel<1, 1>(...)``);
other kernels (PyTorch's) are not ours; a count that disagrees with the probe is refused, naming the file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eagle4.perf.ncu import (
    KERNEL_REGEX,
    check_source,
    kernel_names,
    parse_ncu_csv,
    source_text,
    unprofiled_kernels,
)
from eagle4.perf.points import Point

pytestmark = [pytest.mark.cpu]

# the names ncu printed for our kernels in the H100 session of 8ad4df2 (reports/cards/h100-sxm/*/cuda_kernel_ncu_raw.csv), and the
# K5 register form held to 4 blocks per SM, named like them
OURS = ["void k1_kernel<uint4>(const float *, long *)", "k2_kernel(const float *, const long *)",
        "void k5r_kernel<1>(const float *, const float *, long, int)", "void k5_kernel<float, 4>(const T1 *)",
        "void k5r4_kernel<8>(const float *, const float *, long, int)",
        "void k6r_kernel<4, 1>(const long *, const long *)", "void k7_kernel<uint4>(const int *)"]


def _csv(tmp_path, names):
    lines = ['# provenance: measured -- a line above ncu\'s header', '"ID","Kernel Name","Metric Name","Metric Value"']
    for i, n in enumerate(names):
        lines += [f'"{i}","{n}","dram__bytes_read.sum","{1000 * (i + 1)}"',
                  f'"{i}","{n}","dram__bytes_write.sum","{10 * (i + 1)}"']
    p = tmp_path / "ncu.csv"
    p.write_text("\n".join(lines) + "\n")
    return p


def _points(n):
    return [("default", [Point("tree_mask", "K4", {"B": b, "variant": "verify"}) for b in range(1, n + 1)])]


def test_every_form_of_our_kernels_is_a_launch(tmp_path):
    got = parse_ncu_csv(_csv(tmp_path, OURS), _points(len(OURS)))
    assert [got[("default", f"tree_mask/verify/B{b}")] for b in range(1, len(OURS) + 1)] == \
        [1010.0 * i for i in range(1, len(OURS) + 1)]


def test_pytorch_kernels_are_not_ours_and_a_short_profile_is_refused(tmp_path):
    names = ["void at::native::vectorized_elementwise_kernel<4>(int)", *OURS[:2], "sm90_xmma_gemm_k1_kernel"]
    assert len(parse_ncu_csv(_csv(tmp_path, names), _points(2))) == 2
    with pytest.raises(ValueError, match=r"ncu\.csv: 2 profiled launches of our kernels for 3 probed points"):
        parse_ncu_csv(_csv(tmp_path, names), _points(3))


def test_the_profilers_filter_admits_what_the_parser_counts():
    # ncu -k regex: searches the function name; every name the parser counts must pass it
    assert all(re.search(KERNEL_REGEX, n) for n in OURS)


def test_every_kernel_of_our_source_is_in_the_profilers_filter():
    # a kernel form added to the source but not to KERNEL_REGEX would go unprofiled and the bench's report
    # step would refuse the short profile (it did, once, for k5r1_kernel); the draft step's kernel is not
    # an ncu point (ncu.probed)
    src = source_text(Path(__file__).resolve().parents[2] / "cuda")
    assert {"k1_kernel", "k2_kernel", "k3_kernel", "k4_kernel", "k5_kernel", "k5s1_kernel", "k5r1_kernel",
            "k5r14_kernel", "k5rn_kernel", "k6_kernel", "k6r_kernel", "k7_kernel", "step_kernel"} == kernel_names(src)
    assert unprofiled_kernels(src) == []


def test_the_benchs_preflight_names_a_kernel_the_filter_misses(tmp_path):
    # scripts/bench_h100_kernels.sh runs check_source before its runs: 8ed4d4d's bench found the gap only after them
    src = tmp_path / "k.cu"
    src.write_text("__global__ void __launch_bounds__(256, 4) k5x9_kernel(const float* a) {}\n"
                   "__global__ void k1_kernel(int n) {}\n__global__ void step_kernel(int n) {}\n")
    assert unprofiled_kernels(src.read_text()) == ["k5x9_kernel"]
    with pytest.raises(SystemExit, match=r"k\.cu: kernels k5x9_kernel are not admitted by eagle4\.perf\.ncu\.KERNEL_REGEX"):
        check_source(src)
    src.write_text("__global__ void k1_kernel(int n) {}\n")
    check_source(src)  # nothing missing: returns


def test_ncu_probe_takes_only_the_named_kernels_and_refuses_an_unknown_one(monkeypatch):
    # the sign-off's sanitizers at the B = 1 points launch only the kernels it covers (ncu-probe --kernels)
    import eagle4.perf.ncu as ncu
    from eagle4.perf import kernel_bench

    seen = []
    monkeypatch.setattr(ncu, "ncu_probe", lambda shape, points: seen.extend(p.kernel for p in points))
    assert kernel_bench.main(["ncu-probe", "--points", "B1", "--kernels", "reject_sample,logits_to_probas"]) == 0
    assert set(seen) == {"reject_sample", "logits_to_probas"} and len(seen) == 3  # K5's draft and verify point, K6's
    with pytest.raises(SystemExit, match="no point of kernel"):
        kernel_bench.main(["ncu-probe", "--kernels", "reject_sampel"])

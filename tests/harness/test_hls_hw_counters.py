"""The hardware counters block (hls/include/eagle4_hw_counters.h): the layout the xrt backend reads
(eagle4.backends.xrt_abi.HEADER_WORDS), filled from the counting ports, NOT_COUNTED where nothing counted."""

from __future__ import annotations

import re
import subprocess

import pytest

from eagle4.backends import csim_build

HEADER = csim_build.INCLUDE_DIR / "eagle4_hw_counters.h"


def test_layout_matches_the_xrt_reader():
    from eagle4.backends import xrt_abi

    text = HEADER.read_text()
    words = dict((m.group(1).lower(), int(m.group(2))) for m in re.finditer(r"W_([A-Z_]+) = (\d+)", text))
    assert [name for name, _ in sorted(words.items(), key=lambda kv: kv[1])] == list(xrt_abi.HEADER_WORDS)
    assert int(re.search(r"HEADER_WORDS = (\d+)", text).group(1)) == len(xrt_abi.HEADER_WORDS)
    assert int(re.search(r"EAGLE4_HWC_MAGIC (0x[0-9A-Fa-f]+)ull", text).group(1), 16) == xrt_abi.COUNTERS_MAGIC


@pytest.mark.parametrize("counted", [True, False])
def test_a_top_fills_the_block(tmp_path, counted):
    if csim_build.tools_missing():
        pytest.fail(csim_build.tools_missing(), pytrace=False)
    src = tmp_path / "t.cpp"
    src.write_text("""#include <cstdio>
#include "eagle4_hw_counters.h"
void top(PORT(const int32_t) in, PORT(int64_t) out, int n) { for (int i = 0; i < n; ++i) out[i] = in[i] + 1; }
int main() {
  int32_t a[5] = {1, 2, 3, 4, 5}; int64_t b[5]; uint64_t blk[12];
#ifdef EAGLE4_CSIM_COUNTERS
  eagle4::PortCounter pc[2] = {};
  top(PORT_ARG((const int32_t*)a, pc, 0), PORT_ARG(b, pc, 1), 5);
  eagle4::hwc::write_block(blk, 0, 7, pc, 2);
#else
  top(a, b, 5);
  eagle4::hwc::write_block_uncounted(blk, 0, 7, 2);
#endif
  for (int i = 0; i < eagle4::hwc::block_words(2); ++i) std::printf("%llu\\n", (unsigned long long)blk[i]);
}
""")
    exe = tmp_path / "t"
    flags = ["-DEAGLE4_HW_COUNTERS"] if counted else []
    p = csim_build.run_cxx([csim_build.find_cxx(), "-std=c++17", *flags, f"-I{csim_build.INCLUDE_DIR}", str(src), "-o", str(exe)],
                     "test", tmp_path)
    assert p.returncode == 0, p.stderr
    words = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.split()]
    nc = 2**64 - 1
    assert words[:4] == [0xE4C00001, 0, 7, 2]
    assert words[4:8] == [nc] * 4  # no clock in a C++ run: cycles and stalls are NOT_COUNTED, never 0
    assert words[8:] == ([5 * 4, 0, 0, 5 * 8] if counted else [nc] * 4)

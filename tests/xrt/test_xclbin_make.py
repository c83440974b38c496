"""`make -C hls xclbin`: stops at once without v++ or PLATFORM; with a stand-in v++ it compiles one .xo per
entry point (the entry point + the design's synthesized sources) and links them with the HBM bank map."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from eagle4.backends import xrt_abi

REPO = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path) -> dict:
    env = dict(os.environ)
    dirs = [d for d in env.get("PATH", "").split(os.pathsep) if not Path(d, "v++").exists()]
    (tmp_path / "bin").mkdir(exist_ok=True)
    env["PATH"] = os.pathsep.join([str(tmp_path / "bin"), *dirs])
    env["PYTHON"] = sys.executable
    return env


def _make(tmp_path, *args):
    return subprocess.run(["make", "-C", str(REPO / "hls"), "xclbin", f"BUILD={tmp_path / 'build'}", *args],
                          env=_env(tmp_path), capture_output=True, text=True, timeout=600)


def test_stops_clearly_without_vpp(tmp_path):
    res = _make(tmp_path, "PLATFORM=xilinx_v80")
    assert res.returncode != 0
    assert "'v++' is not on PATH" in res.stderr and "settings64.sh" in res.stderr


@pytest.mark.parametrize("args,msg", [((), "PLATFORM is required"),
                                      (("PLATFORM=p", "TARGET=fpga"), "TARGET must be sw_emu, hw_emu or hw")])
def test_stops_clearly_without_platform_or_with_a_bad_target(tmp_path, args, msg):
    tool = tmp_path / "bin" / "v++"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    res = _make(tmp_path, *args)
    assert res.returncode != 0 and msg in res.stderr


@pytest.mark.parametrize("target", ["sw_emu", "hw_emu", "hw"])
def test_compile_and_link_with_a_stand_in_vpp(tmp_path, target):
    log = tmp_path / "calls.log"
    tool = tmp_path / "bin" / "v++"
    tool.parent.mkdir(parents=True)
    # Stand-in for v++: records each call and writes the file named by -o (as v++ would).
    tool.write_text(f"""#!/bin/sh
echo "$@" >> {log}
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
[ -n "$out" ] && echo stand-in > "$out"
""")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "eagle4.xclbin"
    res = _make(tmp_path, f"TARGET={target}", "PLATFORM=xilinx_v80_gen5x8", f"XCLBIN_OUT={out}")
    assert res.returncode == 0, res.stdout + res.stderr
    calls = log.read_text().splitlines()
    compiles = [c for c in calls if c.startswith("-c ")]
    links = [c for c in calls if c.startswith("-l ")]
    assert len(compiles) == len(xrt_abi.KERNEL_NAMES) and len(links) == 1
    for name in xrt_abi.KERNEL_NAMES:
        c = next(c for c in compiles if f" -k {name} " in c)
        assert f"-t {target} --platform xilinx_v80_gen5x8" in c
        for src in xrt_abi.vitis_sources(name, tmp_path / "build" / "xclbin" / target / "gen"):
            assert str(src) in c, (name, src)
        assert f"-I {REPO / 'hls' / 'include'}" in c
        assert f"{name}.xo" in links[0]
    cfg = tmp_path / "build" / "xclbin" / target / "gen" / "connectivity.cfg"
    assert f"--config {cfg}" in links[0] and f"-o {out}" in links[0]
    assert cfg.read_text() == xrt_abi.render_connectivity()
    assert (cfg.parent / "kernels" / "krnl_work_deltas.cpp").read_text() == \
        xrt_abi.render_entry_point(xrt_abi.interface("krnl_work_deltas"))
    assert out.is_file() and "eagle4 signoff --hw=fpga --xclbin" in res.stdout

"""hls/Makefile: stops at once without Vitis; with a stand-in tool it drives each step and copies reports."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "tests" / "data" / "hls-reports" / "gct02__AHLS__main_csynth.xml"


def _env_without_vitis(tmp_path: Path) -> dict:
    env = dict(os.environ)
    dirs = [d for d in env.get("PATH", "").split(os.pathsep)
            if not any(Path(d, t).exists() for t in ("vitis_hls", "vitis-run"))]
    env["PATH"] = os.pathsep.join([str(tmp_path / "bin"), *dirs])
    env["PYTHON"] = sys.executable
    return env


@pytest.mark.parametrize("target", ["csim", "csynth", "cosim", "export"])
def test_targets_fail_clearly_without_vitis(tmp_path, target):
    (tmp_path / "bin").mkdir()
    res = subprocess.run(["make", "-C", str(REPO / "hls"), target], env=_env_without_vitis(tmp_path),
                         capture_output=True, text=True)
    assert res.returncode != 0
    assert "neither 'vitis_hls' nor 'vitis-run' is on PATH" in res.stderr
    assert "settings64.sh" in res.stderr


def test_csynth_with_stand_in_tool_copies_reports_and_parses_them(tmp_path):
    if not REPORT.is_file():
        pytest.fail(f"fixture missing: {REPORT}")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    tool = bin_dir / "vitis_hls"
    # Stand-in for vitis_hls: records how it was called and produces the report a csynth would.
    tool.write_text(f"""#!/bin/sh
echo "$@ kernel=$EAGLE4_KERNEL step=$EAGLE4_STEP part=$EAGLE4_PART clock=$EAGLE4_CLOCK_NS" >> {log}
ls "$EAGLE4_DUMP_DIR"/*.npz > /dev/null || exit 3
mkdir -p proj/solution1/syn/report && cp {REPORT} proj/solution1/syn/report/csynth.xml
""")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    build, reports = tmp_path / "build", tmp_path / "reports"
    res = subprocess.run(["make", "-C", str(REPO / "hls"), "csynth", "KERNEL=work_deltas", f"BUILD={build}",
                          f"REPORTS={reports}", "CLOCK_NS=4.0"], env=_env_without_vitis(tmp_path),
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    call = log.read_text()
    assert "run_hls.tcl" in call and "kernel=work_deltas step=csynth" in call
    assert "part=xcv80-lsva4737-2MHP-e-S clock=4.0" in call
    assert (reports / "work_deltas" / "csynth.xml").is_file()
    summary = (reports / "summary.csv").read_text()
    assert "main" in summary and "2023.2" in summary
    shutil.rmtree(build, ignore_errors=True)

"""What a newcomer hits on a fresh clone (issue 43): no command writes into the current folder unless
asked."""

from __future__ import annotations

import subprocess
import sys

import pytest

XML = ("<profile><ReportVersion><Version>2021.1</Version></ReportVersion><UserAssignments>"
       "<TopModelName>k</TopModelName><TargetClockPeriod>3.33</TargetClockPeriod></UserAssignments>"
       "<PerformanceEstimates><SummaryOfOverallLatency><Best-caseLatency>10</Best-caseLatency>"
       "<Worst-caseLatency>12</Worst-caseLatency><Interval-min>12</Interval-min></SummaryOfOverallLatency>"
       "</PerformanceEstimates><AreaEstimates><Resources><DSP48E>4</DSP48E></Resources></AreaEstimates>"
       "</profile>")


def test_synth_report_writes_nothing_unasked(tmp_path):
    src = tmp_path / "in" / "csynth.xml"
    src.parent.mkdir()
    src.write_text(XML)
    cwd = tmp_path / "clone"
    cwd.mkdir()
    out = subprocess.run([sys.executable, "-m", "eagle4.cli", "synth-report", str(src)], cwd=cwd,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "k" in out.stdout
    assert list(cwd.iterdir()) == []  # no reports/synth/summary.csv under the current folder


def test_gates_under_fpga_without_a_board_end_with_a_verdict(tmp_path):
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in __import__("os").environ.items() if k != "EAGLE4_XCLBIN"}
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
                          "tests/gates/test_signoff_gates.py", "--hw=fpga", "--reports-dir", str(tmp_path / "rep")],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode != 0
    lines = out.stdout.splitlines()
    assert "VERDICT: NOT SIGNED OFF" in lines, out.stdout[-3000:]
    assert any(ln.startswith("* no gate evaluated: --hw=fpga: the FPGA board is not usable") for ln in lines)


@pytest.mark.parametrize("where", ["under_a_file", "a_folder"])
def test_output_path_that_cannot_be_written_is_one_line(tmp_path, where):
    src = tmp_path / "csynth.xml"
    src.write_text(XML)
    (tmp_path / "plain").write_text("x")
    (tmp_path / "folder.csv").mkdir()
    out_path = tmp_path / "plain" / "summary.csv" if where == "under_a_file" else tmp_path / "folder.csv"
    out = subprocess.run([sys.executable, "-m", "eagle4.cli", "synth-report", str(src), "--csv", str(out_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    err = out.stderr.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in out.stderr and str(tmp_path) in err[0], out.stderr

"""What a newcomer hits on a fresh clone (issue 43): no command writes into the current folder unless
asked."""

from __future__ import annotations

import subprocess
import sys

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

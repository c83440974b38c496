"""The synthesis-report parser on the eight real reports of tests/data/hls-reports and on edge cases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eagle4.report.synth_report import KEYS, SynthReportError, parse_report

SHARED = Path(__file__).resolve().parents[1] / "data" / "hls-reports"

# Expected values read by hand off each file.
EXPECTED = {
    "BojanFaletic__MA_HLS__csynth.xml": dict(tool_version="2020.2", top="ma", part="xc7a200t-fbg676-2",
        clock_target_ns=10.0, clock_estimated_ns=7.224, latency_best=1, latency_worst=1, interval_min=1,
        interval_max=1, dsp=0, ff=493, lut=185, available_dsp=740, available_lut=134600),
    "BojanFaletic__MA_HLS__ma_csynth.rpt": dict(tool_version="2020.2", top="ma", part="xc7a200t-fbg676-2",
        clock_target_ns=10.0, clock_estimated_ns=7.224, latency_best=1, latency_worst=1, interval_min=1,
        interval_max=1, bram_18k=0, dsp=0, ff=493, lut=185, uram=0, available_bram_18k=730, available_ff=269200),
    "Achilisnard__Fibonacci__csynth.xml": dict(tool_version="2019.2", top="fibonacci", clock_estimated_ns=4.242,
        latency_best=None, latency_worst=None, interval_min=None, interval_max=None, dsp=0, available_dsp=220),
    "Achilisnard__Fibonacci__fibonacci_csynth.rpt": dict(tool_version="2019.2", top="fibonacci",
        part="xc7z020-clg484-1", clock_target_ns=10.0, clock_estimated_ns=4.242, latency_best=None,
        interval_max=None, dsp=0, ff=269, lut=351, available_dsp=220, available_lut=53200),
    "JaneCrystal1874__FIRIn2Features__csynth.xml": dict(tool_version="2019.1", top="feature_extractor_ip",
        latency_best=None, interval_min=None, dsp=26, available_dsp=220, bram_18k=6),
    "agustinsilva447__hls_div__csynth.xml": dict(tool_version="2022.1", top="division_hls", clock_estimated_ns=6.075,
        latency_best=15, latency_worst=15, interval_min=16, interval_max=16, ff=16, lut=81),
    "gct02__AHLS__main_csynth.xml": dict(tool_version="2023.2", top="main", clock_target_ns=5.0,
        clock_estimated_ns=4.842, latency_best=51860, latency_worst=115348, interval_min=51861,
        interval_max=115349, dsp=67),
    "BrunoMor99__Taffo-VitisHLS__csynth.rpt": dict(tool_version="2022.2", top="array_copy",
        part="xc7v585t-ffg1761-2", clock_target_ns=None, latency_best=77, interval_min=78, dsp=6, ff=1391,
        lut=2110, bram_18k=0, uram=0, available_lut=None),
}


def _shared(name: str) -> Path:
    p = SHARED / name
    if not p.is_file():
        pytest.fail(f"fixture {p} is missing: the shared/ folder beside the checkout must hold the HLS reports")
    return p


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_reports(name):
    r = parse_report(_shared(name))
    assert list(r) == list(KEYS)
    for k, v in EXPECTED[name].items():
        assert r[k] == v, f"{name}: {k} = {r[k]!r}, expected {v!r}"


def test_cli_json_and_summary_csv(tmp_path):
    files = [str(_shared(n)) for n in sorted(EXPECTED)]
    out = subprocess.run([sys.executable, "-m", "eagle4.cli", "synth-report", *files, "--json",
                          "--csv", str(tmp_path / "summary.csv")], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert len(data) == len(files) and all(set(d) == set(KEYS) for d in data)
    rows = (tmp_path / "summary.csv").read_text().splitlines()
    assert len(rows) == len(files) + 1 and rows[0].startswith("file,tool_version")


def test_undef_and_question_marks_are_null(tmp_path):
    f = tmp_path / "csynth.xml"
    f.write_text("<profile><ReportVersion><Version>2021.1</Version></ReportVersion><UserAssignments>"
                 "<TopModelName>k</TopModelName><TargetClockPeriod>3.33</TargetClockPeriod></UserAssignments>"
                 "<PerformanceEstimates><SummaryOfOverallLatency><Best-caseLatency>?</Best-caseLatency>"
                 "<Worst-caseLatency>undef</Worst-caseLatency><Interval-min>12</Interval-min></SummaryOfOverallLatency>"
                 "</PerformanceEstimates><AreaEstimates><Resources><DSP48E>4</DSP48E></Resources></AreaEstimates>"
                 "</profile>")
    r = parse_report(f)
    assert (r["latency_best"], r["latency_worst"], r["interval_min"], r["dsp"]) == (None, None, 12, 4)
    assert r["clock_target_ns"] == 3.33 and r["part"] is None and r["available_dsp"] is None


@pytest.mark.parametrize("content,msg", [
    ("<profile><unclosed>", "not well-formed XML"),
    ("<html></html>", "not a csynth <profile>"),
    ("just some text", "not a csynth.xml"),
    ("== Synthesis Summary Report of 'x'\n* Version: 2023.1\n", "without its Performance"),
])
def test_bad_files_are_rejected_clearly(tmp_path, content, msg):
    f = tmp_path / "r.rpt"
    f.write_text(content)
    with pytest.raises(SynthReportError, match=msg):
        parse_report(f)


def test_missing_file(tmp_path):
    with pytest.raises(SynthReportError, match="cannot read"):
        parse_report(tmp_path / "nope.xml")

"""Parser of Vivado/Vitis HLS synthesis reports (three layouts).

* ``csynth.xml`` (Vivado HLS 2019 and older: ``DSP48E``; Vitis HLS 2020.2+: ``DSP``);
* the per-module text report (``== Vitis HLS Report for`` / ``== Vivado HLS Report for``);
* the solution summary (``== Synthesis Summary Report of``, Vitis 2022+).

Every key is None where the file does not say; ``undef``/``?`` latencies are None.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

KEYS = ("tool_version", "top", "part", "clock_target_ns", "clock_estimated_ns", "latency_best", "latency_worst",
        "interval_min", "interval_max", "bram_18k", "dsp", "ff", "lut", "uram", "available_bram_18k",
        "available_dsp", "available_ff", "available_lut", "available_uram")
_RESOURCES = ("bram_18k", "dsp", "ff", "lut", "uram")


class SynthReportError(ValueError):
    """The file is none of the three report layouts, or is malformed."""


def _num(text: str | None, kind=float):
    """A number, or None for undef / ? / - / empty."""
    if text is None:
        return None
    t = text.strip().split()[0] if text.strip() else ""
    t = t.replace("ns", "")
    if t in ("", "undef", "?", "-", "N/A"):
        return None
    try:
        return kind(float(t)) if kind is int else kind(t)
    except ValueError:
        return None


def _empty() -> dict:
    return dict.fromkeys(KEYS)


def parse_xml(text: str, source: str) -> dict:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise SynthReportError(f"{source}: not well-formed XML ({e})") from e
    if root.tag != "profile":
        raise SynthReportError(f"{source}: XML root is <{root.tag}>, not a csynth <profile>")
    r = _empty()
    r["tool_version"] = root.findtext("ReportVersion/Version")
    ua = root.find("UserAssignments")
    if ua is not None:
        r["top"] = ua.findtext("TopModelName")
        r["part"] = ua.findtext("Part")
        r["clock_target_ns"] = _num(ua.findtext("TargetClockPeriod"))
    pe = root.find("PerformanceEstimates")
    if pe is not None:
        r["clock_estimated_ns"] = _num(pe.findtext("SummaryOfTimingAnalysis/EstimatedClockPeriod"))
        lat = pe.find("SummaryOfOverallLatency")
        if lat is not None:
            r["latency_best"] = _num(lat.findtext("Best-caseLatency"), int)
            r["latency_worst"] = _num(lat.findtext("Worst-caseLatency"), int)
            r["interval_min"] = _num(lat.findtext("Interval-min"), int)
            r["interval_max"] = _num(lat.findtext("Interval-max"), int)
    area = root.find("AreaEstimates")
    if area is not None:
        for prefix, node in (("", area.find("Resources")), ("available_", area.find("AvailableResources"))):
            if node is None:
                continue
            for key, tags in (("bram_18k", ("BRAM_18K",)), ("dsp", ("DSP", "DSP48E")), ("ff", ("FF",)),
                              ("lut", ("LUT",)), ("uram", ("URAM",))):
                for tag in tags:
                    if node.find(tag) is not None:
                        r[prefix + key] = _num(node.findtext(tag), int)
                        break
    return r


def _table_rows(block: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in block.splitlines() if line.strip().startswith("|")]


def _section(text: str, title: str) -> str:
    m = re.search(r"==\s*" + re.escape(title) + r".*?\n=+\n(.*?)(?=\n=+\n==|\Z)", text, re.S)
    return m.group(1) if m else ""


def _header_fields(r: dict, text: str) -> None:
    v = re.search(r"\*\s*Version:\s*(\S+)", text)
    r["tool_version"] = v.group(1) if v else None
    d = re.search(r"\*\s*Target device:\s*(\S+)", text)
    r["part"] = d.group(1) if d else None


def parse_module_report(text: str, source: str) -> dict:
    r = _empty()
    m = re.search(r"== (?:Vitis|Vivado) HLS Report for '([^']+)'", text)
    r["top"] = m.group(1)
    _header_fields(r, text)
    perf = _section(text, "Performance Estimates")
    timing = re.search(r"\|\s*ap_clk\s*\|\s*([\d.]+)\s*ns\s*\|\s*([\d.]+)\s*ns", perf)
    if timing:
        r["clock_target_ns"], r["clock_estimated_ns"] = float(timing.group(1)), float(timing.group(2))
    lat = re.search(r"\+ Latency:.*?\* Summary:(.*?)(?:\+ Detail:|\Z)", perf, re.S)
    if lat:
        rows = [row for row in _table_rows(lat.group(1)) if row and not re.search(r"[A-Za-z]{3,}", row[0] + row[1])]
        data = rows[-1] if rows else None
        if data and len(data) >= 6:
            r["latency_best"], r["latency_worst"] = _num(data[0], int), _num(data[1], int)
            r["interval_min"], r["interval_max"] = _num(data[4], int), _num(data[5], int)
    util = _section(text, "Utilization Estimates")
    rows = _table_rows(util.split("+ Detail:")[0])
    if rows:
        header = [h.upper() for h in rows[0]]
        col = {}
        for key, names in (("bram_18k", ("BRAM_18K",)), ("dsp", ("DSP", "DSP48E")), ("ff", ("FF",)),
                           ("lut", ("LUT",)), ("uram", ("URAM",))):
            for n in names:
                if n in header:
                    col[key] = header.index(n)
        for row in rows[1:]:
            prefix = {"Total": "", "Available": "available_"}.get(row[0])
            if prefix is None:
                continue
            for key, i in col.items():
                r[prefix + key] = _num(row[i], int) if i < len(row) else None
    return r


def parse_summary_report(text: str, source: str) -> dict:
    r = _empty()
    m = re.search(r"== Synthesis Summary Report of '([^']+)'", text)
    r["top"] = m.group(1)
    _header_fields(r, text)
    rows = _table_rows(text.split("+ Performance & Resource Estimates:")[-1].split("\n\n\n")[0])
    header_rows = [row for row in rows if row and row[0].startswith(("Modules", "& Loops"))]
    top_row = next((row for row in rows if row and row[0].lstrip().startswith("+ ")), None)
    if top_row is None or len(header_rows) < 2:
        raise SynthReportError(f"{source}: summary report without its Performance & Resource Estimates table")
    # column names are split over two header lines; join them
    names = [(a + " " + b).strip().lower() for a, b in zip(header_rows[0], header_rows[1], strict=False)]

    def cell(pred):
        for i, n in enumerate(names):
            if pred(n):
                return top_row[i] if i < len(top_row) else None
        return None

    r["latency_best"] = r["latency_worst"] = _num(cell(lambda n: n.startswith("latency") and "cycles" in n), int)
    interval = _num(cell(lambda n: n.strip() == "interval"), int)
    r["interval_min"] = r["interval_max"] = interval
    for key, label in (("bram_18k", "bram"), ("dsp", "dsp"), ("ff", "ff"), ("lut", "lut"), ("uram", "uram")):
        raw = cell(lambda n, lab=label: n.strip() == lab)
        # the summary prints "-" for an unused resource: zero, not unknown
        r[key] = 0 if raw is not None and raw.strip() == "-" else _num(raw, int)
    return r


def parse_report(path: str | Path) -> dict:
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as e:
        raise SynthReportError(f"{path}: cannot read ({e})") from e
    stripped = text.lstrip()
    if stripped.startswith("<"):
        return parse_xml(text, str(path))
    if re.search(r"== (?:Vitis|Vivado) HLS Report for '", text):
        return parse_module_report(text, str(path))
    if "== Synthesis Summary Report of '" in text:
        return parse_summary_report(text, str(path))
    raise SynthReportError(f"{path}: not a csynth.xml, a per-module HLS report or a synthesis summary report")

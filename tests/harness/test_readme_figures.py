"""README.md's status table: a line a row, no cell over 300 characters, every link resolving, and every GPU figure it
quotes read back out of the record it links (``reports/cards/<card>/<contract>/``) at the precision quoted. A new
bench that changes a figure fails here, naming the value the record gives."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from eagle4.perf import records
from eagle4.perf.rows import ours_in_graph

pytestmark = [pytest.mark.cpu]

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
CARDS = REPO / records.CARDS_DIR
K5V = "logits_to_probas/verify/B{}/Q64/V128256"


def _rows(card: str, contract: str) -> dict:
    return ours_in_graph(records.read_csv(CARDS / card / contract / records.KERNEL_SUMMARY))


def _kernel(card: str, b: int, field: str, fmt: str) -> str:
    return format(float(_rows(card, "deployment-8b")[("deployment-8b", K5V.format(b))][field]), fmt)


def _all_ours(card: str) -> list[dict]:
    return [s for c in ("default", "deployment-8b") for s in _rows(card, c).values()]


def _e2e_default(point: str) -> str:
    runs = records.read_csv(CARDS / "h100-sxm" / "default" / "h100_baseline_runs.csv")
    return f"{statistics.mean(float(r['tokens_per_s']) for r in runs if r['point'] == point):.0f}"


def _e2e_deployment(point: str) -> str:
    pts = records.read_csv(CARDS / "h100-sxm" / "deployment-8b" / "h100_e2e_points.csv")
    return f"{float(next(p for p in pts if p['point'] == point)['tokens_per_s_mean']):.0f}"


def _e2e_h200(point: str) -> list[str]:
    pts = records.read_csv(CARDS / "h200" / "deployment-8b" / "h100_e2e_points.csv")
    p = next(p for p in pts if p["point"] == point)
    return [f"{float(p['tokens_per_s_mean']):.0f}", f"{float(p['step_over_floor']):.2f}"]


def _all_valid() -> list[str]:
    pts = records.read_csv(CARDS / "h100-sxm" / "deployment-8b" / "h100_e2e_points.csv")
    return ["VALID at every point"] if {p["status"] for p in pts} == {"VALID"} else ["(a point is not VALID)"]


# (phrase: a regex whose groups are figures, the figures the records give, as quoted)
CLAIMS = [
    (r"(\S+)x at B = 1 \((\S+) us\), (\S+)x at B = 128 \(the 1\.3x bar",
     lambda: [_kernel("h100-sxm", 1, "ours_over_roofline", ".2f"), _kernel("h100-sxm", 1, "median_us", ".2f"),
              _kernel("h100-sxm", 128, "ours_over_roofline", ".2f")]),
    (r"(\S+)x at B = 1 \((\S+) us\), (\S+)x at B = 128 \|",
     lambda: [_kernel("h200", 1, "ours_over_roofline", ".2f"), _kernel("h200", 1, "median_us", ".2f"),
              _kernel("h200", 128, "ours_over_roofline", ".2f")]),
    (r"b1 (\d+) tok/s, b8 (\d+) tok/s \(5 runs", lambda: [_e2e_default("b1"), _e2e_default("b8")]),
    (r"b1 (\d+) tok/s at (\S+)x the floor, b8 (\d+) tok/s at (\S+)x the floor, b32 (\d+) tok/s at (\S+)x the floor, "
     r"b128 (\d+) tok/s at (\S+)x the floor",
     lambda: [*_e2e_h200("b1"), *_e2e_h200("b8"), *_e2e_h200("b32"), *_e2e_h200("b128")]),
    (r"b1 (\d+) tok/s, b32 (\d+) tok/s; (VALID at every point)",
     lambda: [_e2e_deployment("b1"), _e2e_deployment("b32"), *_all_valid()]),
]
# (phrase, the records' value it bounds from above)
BOUNDS = [
    (r"ours / best same-computation anchor <= ([\d.]+)",
     lambda: max(float(s["ours_over_anchor"]) for s in _all_ours("h100-sxm") if s["ours_over_anchor"])),
    (r"every graph row of ours within ([\d.]+)% CoV", lambda: 100 * max(float(s["cov"]) for s in _all_ours("h100-sxm"))),
]


def _table() -> list[str]:
    text = README.read_text()
    section = text[text.index("## Where things stand"):]
    return [ln for ln in section.splitlines() if ln.startswith("|")]


def test_the_status_table_is_a_line_a_row_with_short_cells_and_live_links():
    rows = _table()
    assert len(rows) >= 5
    for ln in rows:
        cells = ln.strip().strip("|").split("|")
        assert all(len(c.strip()) <= 300 for c in cells), f"a cell over 300 characters: {ln[:80]}..."
    for target in re.findall(r"\]\(([^)]+)\)", README.read_text()):
        if "://" not in target:
            assert (REPO / target.split("#")[0]).exists(), f"README links {target}, which is not in the checkout"


def test_the_readme_is_short():
    assert len(README.read_text().splitlines()) <= 150


def test_the_quoted_gpu_figures_are_the_records():
    text, stale = " ".join(README.read_text().split()), []
    for pattern, value in CLAIMS:
        hits = re.findall(pattern, text)
        assert len(hits) == 1, f"{len(hits)} matches of {pattern!r} (the claim must be there, once)"
        quoted = list(hits[0]) if isinstance(hits[0], tuple) else [hits[0]]
        if quoted != value():
            stale.append(f"{pattern!r}: quotes {quoted}, the records give {value()}")
    assert not stale, "README.md quotes figures the records do not give:\n" + "\n".join(stale)


def test_the_quoted_bounds_hold():
    text = " ".join(README.read_text().split())
    for pattern, value in BOUNDS:
        hits = re.findall(pattern, text)
        assert hits, f"no {pattern!r}"
        for q in hits:
            assert value() <= float(q), f"{pattern!r} quotes {q}, the records give {value():.4g}"


def test_a_stale_figure_is_named():
    pattern, value = CLAIMS[2]
    assert re.findall(pattern, "b1 9999 tok/s, b8 1 tok/s (5 runs") == [("9999", "1")] != value()

"""The H100 kernel figures that README.md and cuda/README.md quote are the committed rows' (issue 14: "the README
quotes these ratios").

The figures are typed by hand into prose, and each new bench changes them; this test reads every quoted figure of
the current rows back out of the text and compares it with ``reports/cuda_kernel_times.csv`` at the precision the
text uses. A figure that no longer matches fails with the value the rows give, so an install of new rows cannot leave
the READMEs describing the previous ones. Figures of earlier benches ("was ...", "before ...") are history, not
checked here: their own records hold them. A bound ("<= 0.35", "within 0.46% CoV") must hold, not be tight.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eagle4.perf import h100_manifest
from eagle4.perf.rows import ours_in_graph, read_csv

pytestmark = [pytest.mark.cpu]

REPO = Path(__file__).resolve().parents[2]
REPORTS = REPO / "reports"
D, DEP = "default", "deployment-8b"
K5V = "logits_to_probas/verify/B{}/Q64/V128256"
K5D = "logits_to_probas/draft/B{}/Q8/V32768"


OURS = ours_in_graph(read_csv(REPORTS / "cuda_kernel_times.csv"))


def _f(contract: str, point: str, field: str, fmt: str) -> str:
    return format(float(OURS[(contract, point)][field]), fmt)


def us(contract: str, point: str, fmt: str = ".2f") -> str:
    return _f(contract, point, "median_us", fmt)


def roof(contract: str, point: str) -> str:
    return _f(contract, point, "ours_over_roofline", ".2f")


def copy(contract: str, point: str) -> str:
    return _f(contract, point, "ours_over_copy", ".2f")


def span(points: list[tuple[str, str]], fmt: str) -> list[str]:
    """The least and largest median of these points, as a "lo-hi" range quotes them."""
    vals = [float(OURS[p]["median_us"]) for p in points]
    return [format(min(vals), fmt), format(max(vals), fmt)]


def _b1(kernel: str) -> list[tuple[str, str]]:
    return sorted(k for k in OURS if OURS[k]["kernel"] == kernel and OURS[k]["B"] == "1")


def _bench() -> list[str]:
    """The bench's date and commit, as quoted."""
    manifest = REPORTS / h100_manifest.NAME
    created, commit = (h100_manifest.field(manifest, p) for p in (h100_manifest.CREATED, h100_manifest.GIT_COMMIT))
    return [str(created)[:10], str(commit)[:7]]


# (README phrase: a regex whose groups are figures of the current rows, the figures the rows give, as quoted)
BOTH = [
    (r"(\d{4}-\d\d-\d\d) [\d:]+ UTC, commit (\w+),", _bench),
    (r"verify (?:\(V = 128256\) )?(\S+) / (\S+) / (\S+)x at B = 8 / 32 / 128",
     lambda: [roof(DEP, K5V.format(b)) for b in (8, 32, 128)]),
    (r"(\S+) / (\S+) / (\S+)x at the verify points of B = 8 / 32 / 128 \(",
     lambda: [copy(DEP, K5V.format(b)) for b in (8, 32, 128)]),
    (r"K6 at B = 128 (\S+) us", lambda: [us(DEP, "reject_sample/B128/Q64/V128256", ".1f")]),
    (r"at B = 32 (\S+) us", lambda: [us(DEP, "reject_sample/B32/Q64/V128256", ".1f")]),
    (r"at B = 8 (\S+?)(?: us)? \(7\.45 before", lambda: [us(DEP, "reject_sample/B8/Q64/V128256")]),
    (r"K4 (\S+)-(\S+?)(?: us \(was|, K7)", lambda: span(_b1("tree_mask"), ".1f")),
    (r"K7 (\S+) / (\S+?)[ ,]", lambda: [us(D, "update_verify/B1/Q16/dtypefloat32", ".1f"),
                                        us(DEP, "update_verify/B1/Q64/dtypebfloat16", ".1f")]),
    (r"K6 (\S+) / (\S+) \(", lambda: [us(D, "reject_sample/B1/Q16/V16384"), us(DEP, "reject_sample/B1/Q64/V128256")]),
]
README = BOTH + [
    (r"and (\S+)x at B = 1 \((\S+) us, was", lambda: [roof(DEP, K5V.format(1)), us(DEP, K5V.format(1), ".1f")]),
    (r"draft (\S+)x at B = 128 \(bar met", lambda: [roof(DEP, K5D.format(128))]),
    (r"and (\S+)x at B = 32 \(bar met since", lambda: [roof(DEP, K5D.format(32))]),
    (r"(\S+)x at B = 1, (\S+)x / (\S+)x at the draft points of B = 128 / 32",
     lambda: [copy(DEP, K5V.format(1)), copy(DEP, K5D.format(128)), copy(DEP, K5D.format(32))]),
    (r"K5 at B = 8: (\S+) / (\S+) us at the draft points",
     lambda: [us(D, "logits_to_probas/draft/B8/Q4/V16384"), us(DEP, K5D.format(8))]),
    (r"one launch\) (\S+) us default / (\S+) us deployment-8b at B = 1 and (\S+) us at B = 128",
     lambda: [us(D, "draft_step/B1/dtypefloat32", ".1f"), us(DEP, "draft_step/B1/dtypebfloat16", ".1f"),
              us(DEP, "draft_step/B128/dtypebfloat16", ".1f")]),
    (r"K5 (\S+) / (\S+) / (\S+) \(was", lambda: [us(D, "logits_to_probas/draft/B1/Q4/V16384"),
                                                 us(D, "logits_to_probas/verify/B1/Q16/V16384"), us(DEP, K5D.format(1))]),
    (r"beside our (\S+)-(\S+) us at the default B = 1 K5 points",
     lambda: span([k for k in _b1("logits_to_probas") if k[0] == D], ".2f")),
]
CUDA_README = BOTH + [
    (r"and (\S+)x at B = 1 \(the same K5 code", lambda: [roof(DEP, K5V.format(1))]),
    (r"K5 draft \(V = 32768\) (\S+)x at B = 128 and (\S+)x at B = 32",
     lambda: [roof(DEP, K5D.format(128)), roof(DEP, K5D.format(32))]),
    (r"(\S+)x / (\S+)x at the draft points of B = 128 / 32, (\S+)x at the verify point of B = 1",
     lambda: [copy(DEP, K5D.format(128)), copy(DEP, K5D.format(32)), copy(DEP, K5V.format(1))]),
    (r"one launch\) (\S+) us default / (\S+) us deployment-8b,",
     lambda: [us(D, "draft_step/B1/dtypefloat32", ".1f"), us(DEP, "draft_step/B1/dtypebfloat16", ".1f")]),
    (r"K5 (\S+) \(4 rows of 16384\), (\S+) \(16 rows of 16384\), (\S+) \(8 rows of 32768\) and (\S+) \(64 rows",
     lambda: [us(D, "logits_to_probas/draft/B1/Q4/V16384"), us(D, "logits_to_probas/verify/B1/Q16/V16384"),
              us(DEP, K5D.format(1)), us(DEP, K5V.format(1), ".1f")]),
    (r"K5 at B = 8: (\S+) us \(32 rows of 16384\) and (\S+) \(64 rows of 32768\)",
     lambda: [us(D, "logits_to_probas/draft/B8/Q4/V16384"), us(DEP, K5D.format(8))]),
    (r"the draft step at B = 128 (\S+) us", lambda: [us(DEP, "draft_step/B128/dtypebfloat16", ".1f")]),
]
# (phrase, the rows' value it bounds from above)
BOUNDS = [
    (r"every graph row of ours within ([\d.]+)% CoV", lambda: 100 * max(float(r["cov"]) for r in OURS.values())),
    (r"anchor <= ([\d.]+)", lambda: max(float(r["ours_over_anchor"]) for r in OURS.values() if r["ours_over_anchor"])),
]


def _text(name: str) -> str:
    return " ".join((REPO / name).read_text().split())  # prose wraps anywhere


@pytest.mark.parametrize(("name", "claims"), [("README.md", README), ("cuda/README.md", CUDA_README)])
def test_the_quoted_h100_figures_are_the_committed_rows(name, claims):
    text, stale = _text(name), []
    for pattern, rows in claims:
        hits = re.findall(pattern, text)
        assert len(hits) == 1, f"{name}: {len(hits)} matches of {pattern!r} (the claim must be there, once)"
        quoted = list(hits[0]) if isinstance(hits[0], tuple) else [hits[0]]
        if quoted != rows():
            stale.append(f"{pattern!r}: quotes {quoted}, the rows give {rows()}")
    assert not stale, f"{name} quotes figures the committed rows do not give:\n" + "\n".join(stale)


@pytest.mark.parametrize("name", ["README.md", "cuda/README.md"])
def test_the_quoted_h100_bounds_hold(name):
    text = _text(name)
    for pattern, value in BOUNDS:
        hits = re.findall(pattern, text)
        assert hits, f"{name}: no {pattern!r}"
        for q in hits:
            assert value() <= float(q), f"{name}: {pattern!r} quotes {q}, the rows give {value():.4g}"


def test_a_stale_figure_is_named():
    # the check itself: a README quoting other figures than the rows fails, naming the rows' value
    text = "K6 at B = 128 99.9 us"
    pattern, rows = next(c for c in BOTH if c[0].startswith("K6 at B = 128"))
    assert re.findall(pattern, text) == ["99.9"] != rows()

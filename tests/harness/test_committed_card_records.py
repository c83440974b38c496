"""The committed records of cards other than the baseline (``reports/cards/<card>/<commit>/``, see its README): each
one a sign-off call's logs and its kernel bench, every row measured on the one card its folder names, its roofline
that card's HBM peak, its steps clean, and none of its rows among the baseline's in ``reports/``.

The peaks are typed here from the vendors' datasheets, apart from ``eagle4.perf.card``, so that a wrong peak there
fails here; medians, CoV and ratios are recomputed from the raw rows with numpy.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from eagle4.perf import h100_manifest
from eagle4.perf.card import BASELINE, card_of
from eagle4.perf.points import model_bytes, operating_points, shape_from_contract
from eagle4.perf.rows import RAW_FIELDS, ours_in_graph, read_csv
from eagle4.perf.signoff_record import unclean_steps

pytestmark = [pytest.mark.cpu]

REPO = Path(__file__).resolve().parents[2]
CARDS = REPO / "reports" / "cards"
RECORDS = sorted(p for p in CARDS.glob("*/*") if p.is_dir())
PEAK_TBPS = {"h200": 4.8}  # NVIDIA H200 datasheet: 141 GB HBM3e at 4.8 TB/s
CONTRACTS = {p.stem: p for p in (REPO / "contracts" / "default.toml", REPO / "contracts" / "deployment-8b.toml")}


def test_the_records_exist():
    assert RECORDS, f"{CARDS.relative_to(REPO)} holds no record: its README names the committed ones"


@pytest.fixture(scope="module", params=RECORDS, ids=lambda p: f"{p.parent.name}/{p.name}")
def record(request) -> Path:
    return request.param


@pytest.fixture(scope="module")
def raw(record) -> list[dict]:
    rows = read_csv(record / "bench" / "cuda_kernel_times_raw.csv")
    assert rows, "the raw CSV has no rows"
    return rows


@pytest.fixture(scope="module")
def summary(record) -> list[dict]:
    return read_csv(record / "bench" / "cuda_kernel_times.csv")


def _manifest(record: Path, pattern: str) -> str:
    value = h100_manifest.field(record / "bench" / h100_manifest.NAME, pattern)
    assert value, f"{record.name}: the bench manifest has no line matching {pattern}"
    return value


def test_every_step_clean_and_the_catalog_passed(record):
    assert unclean_steps(record) == [], unclean_steps(record)
    log = (record / "pytest_log.txt").read_text()
    passed = re.search(r"^(\d+) passed", log, re.M)
    assert passed and int(passed.group(1)) > 1000 and " failed" not in log, "the whole catalog's parity must pass"
    assert log.rstrip().endswith("exit 0")


def test_rows_are_measured_on_the_folders_card_and_not_the_baseline(record, raw, summary):
    devices = {r["device"] for r in raw} | {s["device"] for s in summary}
    assert len(devices) == 1, f"rows of several cards: {devices}"
    card = card_of(devices.pop())
    assert card.slug == record.parent.name, f"rows of the {card.name} in the folder of {record.parent.name}"
    assert card != BASELINE, "the baseline card's rows live in reports/, not under reports/cards/"
    assert card_of(_manifest(record, h100_manifest.DEVICE)) == card, "the manifest names another GPU than the rows"
    commit = _manifest(record, h100_manifest.GIT_COMMIT)
    assert commit.startswith(record.name), f"the folder {record.name} holds the bench of {commit[:7]}"
    for r in raw:
        assert set(RAW_FIELDS) <= set(r) and r["provenance"] == "measured" and r["git_commit"] == commit, r
    benched = (record / "bench_source.txt").read_text().split()
    assert benched[:3] == ["cuda/cost_draft_tree_kernel.cu", "sha256", _manifest(record, h100_manifest.KERNEL_SRC)]


def test_rows_name_the_contracts_the_manifest_names(record, raw):
    listed = dict(re.findall(h100_manifest.CONTRACT, (record / "bench" / h100_manifest.NAME).read_text(), re.M))
    assert listed and {r["contract"] for r in raw} == set(listed)
    for r in raw:
        assert r["contract_sha256"] == listed[r["contract"]], r


def test_summary_recomputed_from_raw_with_the_cards_own_roofline(record, raw, summary):
    groups = defaultdict(list)
    for r in raw:
        groups[(r["contract"], r["point"], r["impl"], r["mode"])].append(float(r["median_us"]))
    by_key = {(s["contract"], s["point"], s["impl"], s["mode"]): s for s in summary}
    assert set(by_key) == set(groups), "summary and raw rows cover different points"
    shapes = {}
    for name in {k[0] for k in groups}:
        shape = shape_from_contract(CONTRACTS[name])
        if shape.contract_hash != next(r["contract_sha256"] for r in raw if r["contract"] == name):
            pytest.fail(f"{record.relative_to(REPO)}: contracts/{name}.toml changed since this bench; its run rule and "
                        "points are no longer the ones it ran: archive the record or bench again", pytrace=False)
        shapes[name] = shape
    for key, meds in groups.items():
        s, sh = by_key[key], shapes[key[0]]
        assert len(meds) >= sh.runs, f"{key}: {len(meds)} runs"
        med, cov = float(np.median(meds)), float(np.std(meds, ddof=1) / np.mean(meds))
        assert abs(float(s["median_us"]) - med) <= 1e-3 * med + 1e-3, key
        assert abs(float(s["cov"]) - cov) <= 1e-5 + 1e-3 * cov, key
        assert s["valid"] == str(cov <= sh.cov_max).lower(), key
    bps = PEAK_TBPS[record.parent.name] * 1e12
    pts = {(n, p.pid): p for n, sh in shapes.items() for p in operating_points(sh)}
    ours = ours_in_graph(summary)
    assert ours, "no graph rows of ours"
    for (c, pid), s in ours.items():
        floor_us = sum(model_bytes(pts[(c, pid)])) / bps * 1e6
        assert abs(float(s["roofline_us"]) - floor_us) <= 1e-3 * floor_us + 1e-4, (c, pid)
        assert float(s["ours_over_roofline"]) == pytest.approx(float(s["median_us"]) / floor_us, rel=1e-3, abs=6e-5)


def test_the_report_names_its_card(record):
    md = (record / "bench" / "kernel_anchors.md").read_text()
    card = card_of(read_csv(record / "bench" / "cuda_kernel_times.csv")[0]["device"])
    assert md.startswith(f"# {card.name} kernels") and f"HBM {PEAK_TBPS[record.parent.name]:g} TB/s" in md


def test_no_row_of_another_card_among_the_baselines():
    for name in ("cuda_kernel_times.csv", "cuda_kernel_times_raw.csv"):
        devices = {r["device"] for r in read_csv(REPO / "reports" / name)}
        assert {card_of(d) for d in devices} == {BASELINE}, f"reports/{name}: {devices}"


def test_the_readme_table_quotes_the_rows():
    """reports/cards/README.md's side-by-side table: each H200 figure from the h200 record's rows, each H100 figure from
    the committed baseline rows, at the precision quoted."""
    text = (CARDS / "README.md").read_text()
    points = {"K5 verify B = 1": "logits_to_probas/verify/B1/Q64/V128256",
              "K5 verify B = 128": "logits_to_probas/verify/B128/Q64/V128256", "K6 B = 128": "reject_sample/B128/Q64/V128256"}
    h200 = ours_in_graph(read_csv(CARDS / "h200" / "919740b" / "bench" / "cuda_kernel_times.csv"))
    h100 = ours_in_graph(read_csv(REPO / "reports" / "cuda_kernel_times.csv"))
    seen = 0
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        label = next((k for k in points if cells[0].startswith(k + " ") or cells[0] == k), None)
        if label is None:
            continue
        seen += 1
        for rows, (us, roof, copy) in ((h200, cells[1:4]), (h100, cells[4:7])):
            s = rows[("deployment-8b", points[label])]
            assert us == f"{float(s['median_us']):.2f}" and roof == f"{float(s['ours_over_roofline']):.2f}", (label, cells)
            assert copy == (f"{float(s['ours_over_copy']):.2f}" if s["ours_over_copy"] else ""), (label, cells)
    assert seen == len(points), f"the table quotes {seen} of {len(points)} points"


@pytest.mark.parametrize("log", sorted(CARDS.glob("*/*.txt")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_single_runs_log_passed(log):
    """A log beside the records (one pytest run on that card, e.g. h200/chain_cuda_parity_*.txt): it names the card
    and its run passed whole."""
    text = log.read_text()
    assert card_of(text.splitlines()[1].split(",")[0]).slug == log.parent.name, "its second line names the GPU"
    assert re.search(r"^\d+ passed", text, re.M) and " failed" not in text and text.rstrip().endswith("exit 0")

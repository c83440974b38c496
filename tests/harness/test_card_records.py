"""Rules every committed GPU record keeps (``reports/cards/<card>/<contract>/``, eagle4.perf.records), checked over
every record there is, for any card: the folder names a card of the table and a contract of ``contracts/``; every
row is measured, on that one card, under that contract's current hash; the manifest names the same card, contract
hash and commit as the rows; each point has at least the contract's runs (and never fewer than MIN_RUNS); the
summary's medians, CoV and validity are recomputed from the raw rows, and its roofline at the card's declared peak;
an end-to-end point's CoV of tokens/s over its runs is within the contract's limit. And every contract has the
record of its ``[baseline]`` card.

No figure and no date of a particular bench is typed here: a new bench that keeps the rules passes unchanged.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from eagle4.cards import card_of
from eagle4.contract import MIN_RUNS, baseline_card, load_contract
from eagle4.perf import records
from eagle4.perf.points import BenchShape, model_bytes, operating_points, shape_from_contract
from eagle4.perf.rows import RAW_FIELDS, ours_in_graph

pytestmark = [pytest.mark.cpu]

REPO = Path(__file__).resolve().parents[2]
CONTRACTS = {p.stem: p for p in sorted((REPO / "contracts").glob("*.toml"))}
RECORDS = records.all_records(REPO)


def _id(r: records.Record) -> str:
    return f"{r.card.slug}/{r.contract}"


KERNEL = [r for r in RECORDS if r.has_kernel_bench]
E2E = [(r, prefix) for r in RECORDS for prefix in r.e2e_prefixes]


def test_the_store_holds_records():
    assert KERNEL, f"no kernel bench under {records.CARDS_DIR}"
    assert E2E, f"no end-to-end bench under {records.CARDS_DIR}"


@pytest.mark.parametrize("name", sorted(CONTRACTS))
def test_every_contract_has_the_record_of_its_baseline_card(name):
    """A contract without its card's record may exist only while it judges nothing (no ``[[gates]]``):
    it is shown as awaiting its bench, never passed."""
    c = load_contract(CONTRACTS[name], verify_files=False)
    d = records.baseline_dir(c, REPO)
    if (d / records.KERNEL_RAW).is_file():
        return
    why = f"{name}: [baseline] card = {baseline_card(c).name!r}, but {d.relative_to(REPO)} holds no kernel bench"
    assert not c.gates, why + " and the contract has [[gates]]"
    pytest.xfail(why + " (awaiting its bench; the contract has no gates)")


@pytest.mark.parametrize("rec", RECORDS, ids=_id)
def test_the_folder_names_a_contract_and_holds_a_bench(rec):
    assert rec.contract in CONTRACTS, f"{rec.path.relative_to(REPO)}: no contracts/{rec.contract}.toml"
    assert rec.has_kernel_bench or rec.e2e_prefixes, f"{rec.path.relative_to(REPO)}: neither bench's rows"


@pytest.fixture(scope="module")
def shapes() -> dict[str, BenchShape]:
    return {name: shape_from_contract(path) for name, path in CONTRACTS.items()}


def _current(rec: records.Record, sha: str, shapes) -> BenchShape:
    shape = shapes[rec.contract]
    if sha != shape.contract_hash:
        pytest.fail(f"{rec.path.relative_to(REPO)}: rows of contract {sha[:12]}, contracts/{rec.contract}.toml is "
                    f"{shape.contract_hash[:12]}: a changed contract needs a new bench", pytrace=False)
    return shape


# -- the kernel bench ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rec", KERNEL, ids=_id)
def test_kernel_rows_are_one_cards_under_the_manifest(rec, shapes):
    raw, summary = records.read_csv(rec.need(records.KERNEL_RAW)), records.read_csv(rec.need(records.KERNEL_SUMMARY))
    assert raw and summary
    assert set(RAW_FIELDS) <= set(raw[0]), f"raw columns missing: {set(RAW_FIELDS) - set(raw[0])}"
    devices = {r["device"] for r in raw + summary}
    assert len(devices) == 1, f"one measurement is one card: {devices}"
    assert card_of(devices.pop()) == rec.card, "rows of another card than the folder's"
    assert {r["provenance"] for r in raw + summary} == {"measured"}
    assert {r["contract"] for r in raw + summary} == {rec.contract}
    shas = {r["contract_sha256"] for r in raw + summary}
    assert len(shas) == 1
    sha = shas.pop()
    _current(rec, sha, shapes)
    manifest = rec.need(records.KERNEL_MANIFEST)
    assert card_of(records.manifest_field(manifest, records.DEVICE) or "") == rec.card, "the manifest's GPU"
    assert dict(re.findall(records.CONTRACT, manifest.read_text(), re.M)).get(rec.contract) == sha, \
        "the manifest does not name this contract's hash"
    assert {r["git_commit"] for r in raw + summary} == {records.manifest_field(manifest, records.GIT_COMMIT)}
    assert records.manifest_field(manifest, records.KERNEL_SRC), "the manifest names no kernel source digest"
    log = rec.need(records.KERNEL_LOG).read_text(errors="replace")
    assert log.rstrip().endswith("exit 0"), "the bench's log does not end in exit 0"


@pytest.mark.parametrize("rec", KERNEL, ids=_id)
def test_kernel_summary_recomputed_from_raw_at_the_cards_peak(rec, shapes):
    raw, summary = records.read_csv(rec.need(records.KERNEL_RAW)), records.read_csv(rec.need(records.KERNEL_SUMMARY))
    shape = _current(rec, raw[0]["contract_sha256"], shapes)
    groups = defaultdict(list)
    for r in raw:
        groups[(r["point"], r["impl"], r["mode"])].append(float(r["median_us"]))
    by_key = {(s["point"], s["impl"], s["mode"]): s for s in summary}
    assert set(by_key) == set(groups), "summary and raw rows cover different points"
    for key, meds in groups.items():
        s = by_key[key]
        assert len(meds) >= max(shape.runs, MIN_RUNS) and int(s["n_runs"]) == len(meds), f"{key}: {len(meds)} runs"
        med, cov = float(np.median(meds)), float(np.std(meds, ddof=1) / np.mean(meds))
        assert abs(float(s["median_us"]) - med) <= 1e-3 * med + 1e-3, key
        assert abs(float(s["cov"]) - cov) <= 1e-5 + 1e-3 * cov, key
        assert s["valid"] == str(cov <= shape.cov_max).lower(), key
    ours = ours_in_graph(summary)
    assert ours, "no graph rows of ours"
    bad = [f"{p}: CoV {float(s['cov']):.4f}" for (_, p), s in ours.items() if s["valid"] != "true"]
    assert not bad, f"our graph rows outside the run rule (CoV <= {shape.cov_max}): {bad}"
    pts = {p.pid: p for p in operating_points(shape)}
    for (_, pid), s in ours.items():
        floor_us = sum(model_bytes(pts[pid])) / rec.card.hbm_bps * 1e6
        assert abs(float(s["roofline_us"]) - floor_us) <= 1e-3 * floor_us + 1e-4, pid
        assert float(s["ours_over_roofline"]) == pytest.approx(float(s["median_us"]) / floor_us, rel=1e-3, abs=6e-5)


# -- the end-to-end bench --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("rec", "prefix"), E2E, ids=lambda x: _id(x) if isinstance(x, records.Record) else x)
def test_e2e_rows_are_one_cards_with_the_run_rule_and_cov(rec, prefix):
    from eagle4.workload.tp_run import with_tp

    c = with_tp(load_contract(CONTRACTS[rec.contract], verify_files=False), records.prefix_tp(prefix))
    raw = records.read_csv(rec.need(f"{prefix}_raw.csv"))
    runs = records.read_csv(rec.need(f"{prefix}_runs.csv"))
    assert raw and runs
    for rows in (raw, runs):
        assert {r["contract_sha256"] for r in rows} == {c.sha256}, "rows of another contract hash"
        assert {r["provenance"] for r in rows} == {"measured"}
    devices = {r["device"] for r in runs} | {r["device"] for r in raw if "device" in r}
    assert len(devices) == 1 and card_of(devices.pop()) == rec.card, f"one measurement is one card: {devices}"
    commits = {r["commit"] for r in runs}
    assert len(commits) == 1 and commits == {r["commit"] for r in raw}, "runs and raw rows of several commits"
    by_point = defaultdict(list)
    for r in runs:
        by_point[r["point"]].append(float(r["tokens_per_s"]))
    assert set(by_point) == {p.name for p in c.operating_points}, "points other than the contract's"
    for point, tps in by_point.items():
        assert len(tps) >= max(c.runs.runs, MIN_RUNS), f"{point}: {len(tps)} runs"
        cov = float(np.std(tps, ddof=1) / np.mean(tps))
        assert cov <= c.runs.cov_max, f"{point}: CoV {cov:.4f} over the contract's {c.runs.cov_max}"
    manifest = rec.file(f"{prefix}_manifest.json")
    if manifest is not None:
        m = json.loads(manifest.read_text())
        assert m["contract_sha256"] == c.sha256 and card_of(m["device"]) == rec.card and m["commit"] in commits
    else:  # the host-loop bench's manifest is its summary's header
        text = rec.need(f"{prefix}_summary.md").read_text()
        assert c.sha256 in text and next(iter(commits)) in text, "the summary names another contract or commit"
    assert rec.need(records.E2E_LOG).read_text(errors="replace").strip(), "the bench's log is empty"


def test_a_tensor_parallel_record_is_read_under_its_degree(tmp_path):
    """``tp<N>_e2e_*`` files are an e2e record whose rows carry the hash of the contract at ``[model] tp = N``."""
    from eagle4.workload.tp_run import with_tp

    d = tmp_path / records.CARDS_DIR / "h200" / "deployment-70b"
    d.mkdir(parents=True)
    for name in ("tp2_e2e_raw.csv", "tp4_e2e_raw.csv.gz", "tpx_e2e_raw.csv", "h100_e2e_raw.csv"):
        (d / name).write_text("")
    rec = next(r for r in records.all_records(tmp_path) if r.contract == "deployment-70b")
    assert rec.e2e_prefixes == ["h100_e2e", "tp2_e2e", "tp4_e2e"]
    assert [records.prefix_tp(p) for p in rec.e2e_prefixes] == [None, 2, 4]
    c = load_contract(CONTRACTS["deployment-70b"], verify_files=False)
    assert with_tp(c, 4).sha256 != c.sha256 and with_tp(c, c.model.tp).sha256 == c.sha256


def test_a_record_of_another_card_or_contract_is_refused(tmp_path):
    """The rules above catch a row of another card and a folder of no card at all."""
    bad = tmp_path / records.CARDS_DIR / "a100" / "default"
    bad.mkdir(parents=True)
    with pytest.raises(ValueError, match="no card with folder name 'a100'"):
        records.all_records(tmp_path)


PACK_KERNEL_REPORTS = ("kernel_anchors.md", "hotspots_ranked.md", "cuda_bytes_per_token.csv")


def test_the_packs_kernel_reports_are_summarized_from_the_records(tmp_path, shapes):
    """``reports/``'s kernel reports are what ``python -m eagle4.perf.kernel_bench summarize`` writes from the raw rows
    of the default contract's ``[baseline]`` card (every contract that card has a record of), byte for byte."""
    from eagle4.perf.kernel_report import write_reports

    card = baseline_card(load_contract(CONTRACTS["default"], verify_files=False))
    recs = [r for r in KERNEL if r.card == card]
    assert recs, f"no kernel bench of {card.name}"
    raw = [row for r in recs for row in records.read_csv(r.need(records.KERNEL_RAW))]
    write_reports([shapes[r.contract] for r in recs], raw, tmp_path, recs[0].file(records.KERNEL_NCU))
    stale = [n for n in PACK_KERNEL_REPORTS if (tmp_path / n).read_bytes() != (REPO / "reports" / n).read_bytes()]
    raws = " ".join(str(r.need(records.KERNEL_RAW).relative_to(REPO)) for r in recs)
    cs = " ".join(f"--contract contracts/{r.contract}.toml" for r in recs)
    assert not stale, (f"reports/{stale} differ from the records' summary: python -m eagle4.perf.kernel_bench summarize "
                       f"{raws} {cs} --reports DIR --ncu-csv ...; copy {', '.join(PACK_KERNEL_REPORTS)} into reports/")

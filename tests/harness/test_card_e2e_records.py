"""Every committed e2e record under ``reports/cards/<card>/<contract>/`` names its card and carries its
independent floor (``eagle4.workload.floor``) per point, and its points are what its raw rows say:
tokens/s mean and CoV from the runs, TTFT and ITL medians from the per-request rows.

The one way out is the record's own manifest: a bench that had no floor wrote no floor ceilings
(``eagle4.perf.records.measured_before_floor``). Such a record is shown as "no floor (measured before the
floor existed)", claims no floor column, and no contract with gates is judged on it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from eagle4.cards import card_named, card_of_slug
from eagle4.contract import load_contract
from eagle4.perf import records
from eagle4.stats import cov_or_nan
from eagle4.workload.serving_metrics import pct

ROOT = Path(__file__).resolve().parents[2]
# every e2e bench's points file: the full records (h100_e2e_*) and partial ones (h200_e2e_partial_*: points of a
# contract measured in part, under a prefix no baseline reader takes for the contract's record)
POINTS = records.e2e_points_files(ROOT)


def _rows(path: Path) -> list[dict]:
    """A bench's CSV as committed: plain, or gzipped where it is over 1 MB."""
    return records.read_csv(path if path.exists() else path.with_name(path.name + ".gz"))


def _key(p: Path) -> str:
    return f"{p.parent.parent.name}/{p.parent.name}"


def _id(p: Path) -> str:
    return f"{_key(p)}/{p.name.removesuffix('.gz').removesuffix('_points.csv')}"


def test_there_is_an_e2e_record_with_a_floor():
    assert any(not records.measured_before_floor(p) for p in POINTS), [str(p) for p in POINTS]


@pytest.mark.parametrize("points", POINTS, ids=_id)
def test_every_row_has_its_floor_and_its_card(points):
    if records.measured_before_floor(points):
        # the bench had no floor: the rows claim none either (a half-floored record is no old record)
        claimed = [k for k in (records.FLOOR_FIELD, "step_over_floor") if k in (_rows(points) or [{}])[0]]
        assert not claimed, f"{points}: columns {claimed}, but {records.points_manifest(points).name} has no " \
                            f"{records.FLOOR_ERA_FIELD}"
        pytest.xfail(f"{_key(points)}: {records.BEFORE_THE_FLOOR}")
    missing = records.floor_or_card_missing(points)
    assert not missing, "\n".join(missing)
    folder_card = card_of_slug(points.parent.parent.name)
    for i, r in enumerate(_rows(points)):
        where = f"{points}: row {i + 2} ({r.get('point')})"
        assert card_named(r["card"]) == folder_card, f"{where}: card {r['card']!r} is not the folder's"
        for k in ("step_over_floor", "roofline_bytes_s", "roofline_flops_s", "draft_s_median", "verify_s_median"):
            v = float(r.get(k) or "nan")
            assert math.isfinite(v) and v > 0, f"{where}: {k} = {r.get(k)!r}"
        assert float(r["step_over_floor"]) == pytest.approx(float(r["step_s_median"]) / float(r["floor_step_s"]),
                                                            rel=1e-6), where
        assert r.get("provenance") == "measured", where


@pytest.mark.parametrize("contract", sorted((ROOT / "contracts").glob("*.toml")), ids=lambda p: p.stem)
def test_no_gate_passes_on_a_record_measured_before_the_floor(contract):
    c = load_contract(contract, verify_files=False)
    old = [p for p in records.e2e_points_files(ROOT)
           if p.parent == records.baseline_dir(c, ROOT) and records.measured_before_floor(p)]
    assert not (c.gates and old), f"{contract.name}: [[gates]] judged on {[str(p) for p in old]}: " \
                                  f"{records.BEFORE_THE_FLOOR}"


FLOORED = ("point,card,floor_step_s,step_s_median\n"
           "b1,H200,0.0084,0.0131\n")


def _synthetic(tmp_path, text: str, manifest: dict) -> Path:
    import json

    d = tmp_path / records.CARDS_DIR / "h200" / "deployment-8b"
    d.mkdir(parents=True)
    (d / "x_e2e_manifest.json").write_text(json.dumps(manifest))
    (d / "x_e2e_points.csv").write_text(text)
    return d / "x_e2e_points.csv"


@pytest.mark.parametrize(("text", "field"), [
    ("point,card,step_s_median\nb1,H200,0.0131\n", "floor_step_s"),
    ("point,card,floor_step_s\nb1,H200,\n", "floor_step_s"),
    ("point,card,floor_step_s\nb1,H200,inf\n", "floor_step_s"),
    ("point,floor_step_s\nb1,0.0084\n", "card"),
    ("point,card,floor_step_s\nb1, ,0.0084\n", "card"),
], ids=["no_floor_column", "empty_floor", "infinite_floor", "no_card_column", "blank_card"])
def test_a_row_without_its_floor_or_its_card_fails_naming_file_and_field(tmp_path, text, field):
    points = _synthetic(tmp_path, text, {records.FLOOR_ERA_FIELD: []})
    assert records.e2e_points_files(tmp_path) == [points]
    assert not records.measured_before_floor(points)  # a floor-era bench: no way out through the old-record rule
    [line] = records.floor_or_card_missing(points)
    assert "\n" not in line and str(points) in line and field in line and "(b1)" in line


def test_a_floored_row_passes_and_a_manifest_without_ceilings_is_before_the_floor(tmp_path):
    points = _synthetic(tmp_path, FLOORED, {records.FLOOR_ERA_FIELD: []})
    assert records.floor_or_card_missing(points) == []
    records.points_manifest(points).write_text("{}")
    assert records.measured_before_floor(points)


@pytest.mark.parametrize("points", POINTS, ids=_id)
def test_points_are_recomputed_from_the_raw_rows(points):
    prefix = points.name.removesuffix(".gz").removesuffix("_points.csv")
    runs, raw = _rows(points.with_name(f"{prefix}_runs.csv")), _rows(points.with_name(f"{prefix}_raw.csv"))
    for r in _rows(points):
        ru = [x for x in runs if x["point"] == r["point"]]
        rq = [x for x in raw if x["point"] == r["point"]]
        assert len(ru) == int(r["runs"]), r["point"]
        tps = [float(x["tokens_per_s"]) for x in ru]
        assert float(r["tokens_per_s_mean"]) == pytest.approx(float(np.mean(tps)), rel=1e-6)
        assert float(r["tokens_per_s_cov"]) == pytest.approx(cov_or_nan(tps), rel=1e-5)
        ttft = [float(x["ttft_s"]) for x in rq if x["ttft_s"] not in (None, "")]
        itl = [float(v) for x in rq for v in str(x["itl_s"]).split(";") if v]
        assert float(r["ttft_p50_s"]) == pytest.approx(pct(ttft, 50), rel=1e-5)
        assert float(r["itl_p50_s"]) == pytest.approx(pct(itl, 50), rel=1e-5)
        assert float(r["step_s_median"]) == pytest.approx(float(np.median([float(x["step_s_median"]) for x in ru])),
                                                          rel=1e-6)
        if "floor_step_s" in r:
            assert float(r["floor_step_s"]) == pytest.approx(
                float(np.median([float(x["floor_step_s"]) for x in ru])), rel=1e-6)

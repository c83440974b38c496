"""Every committed e2e record under ``reports/cards/<card>/<contract>/`` names its card and carries its
independent floor (``eagle4.workload.floor``) per point, and its points are what its raw rows say:
tokens/s mean and CoV from the runs, TTFT and ITL medians from the per-request rows."""

from __future__ import annotations

import csv
import gzip
import io
import math
from pathlib import Path

import numpy as np
import pytest

from eagle4.cards import card_named, card_of_slug
from eagle4.stats import cov_or_nan
from eagle4.workload.serving_metrics import pct

ROOT = Path(__file__).resolve().parents[2]
CARDS = ROOT / "reports" / "cards"
# every e2e bench's points file: the full records (h100_e2e_*) and partial ones (h200_e2e_partial_*: points of a
# contract measured in part, under a prefix no baseline reader takes for the contract's record)
POINTS = sorted(CARDS.glob("*/*/*_e2e_points.csv")) + sorted(CARDS.glob("*/*/*_e2e_partial_points.csv"))
# Records measured before the floor existed, on a card no longer lent here: they keep their rows as
# measured and are named one by one (a new record is never exempt).
BEFORE_THE_FLOOR = {"h100-sxm/deployment-8b"}


def _rows(path: Path) -> list[dict]:
    if not path.exists() and path.with_name(path.name + ".gz").exists():
        with gzip.open(path.with_name(path.name + ".gz"), "rt", newline="") as f:
            return list(csv.DictReader(io.StringIO(f.read())))
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _key(p: Path) -> str:
    return f"{p.parent.parent.name}/{p.parent.name}"


def _id(p: Path) -> str:
    return f"{_key(p)}/{p.name.removesuffix('_points.csv')}"


def test_there_is_an_e2e_record_with_a_floor():
    assert any(_key(p) not in BEFORE_THE_FLOOR for p in POINTS), [str(p) for p in POINTS]


@pytest.mark.parametrize("points", POINTS, ids=_id)
def test_every_row_has_its_floor_and_its_card(points):
    if _key(points) in BEFORE_THE_FLOOR:
        pytest.xfail(f"{_key(points)}: measured before the floor existed (named in BEFORE_THE_FLOOR)")
    folder_card = card_of_slug(points.parent.parent.name)
    for i, r in enumerate(_rows(points)):
        where = f"{points}: row {i + 2} ({r.get('point')})"
        assert r.get("card"), f"{where}: no card"
        assert card_named(r["card"]) == folder_card, f"{where}: card {r['card']!r} is not the folder's"
        for k in ("floor_step_s", "step_over_floor", "roofline_bytes_s", "roofline_flops_s", "draft_s_median",
                  "verify_s_median"):
            v = float(r.get(k) or "nan")
            assert math.isfinite(v) and v > 0, f"{where}: {k} = {r.get(k)!r}"
        assert float(r["step_over_floor"]) == pytest.approx(float(r["step_s_median"]) / float(r["floor_step_s"]),
                                                            rel=1e-6), where
        assert r.get("provenance") == "measured", where


@pytest.mark.parametrize("points", POINTS, ids=_id)
def test_points_are_recomputed_from_the_raw_rows(points):
    prefix = points.name.removesuffix("_points.csv")
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

"""Scenario selection and like-for-like reduction of engine rows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from eagle4.engines import import_results
from eagle4.engines.figures import figure, ratio, row_stage, select

DATA = Path(__file__).resolve().parents[1] / "data" / "engine_results" / "eagle3"


@pytest.fixture(scope="module")
def rows():
    return import_results(DATA / "micro-1") + import_results(DATA / "full")


def sel(rows, **kw):
    return select(rows, micro_max_decode_steps=512, **kw)


def test_selection_by_context_batch_spec_tokens_and_stage(rows):
    got = sel(rows, context=32768, batch=1, spec_tokens=3, stage="micro")
    assert [r.label for r in got] == ["Speculative_Single_Context32K_3tokens"] and got[0].decode_steps == 512
    full = sel(rows, context=32768, batch=1, spec_tokens=3, stage="full")
    assert len(full) == 1 and full[0].decode_steps == 32768 and row_stage(full[0], 512) == "full"
    assert sel(rows, context=16384, batch=1, spec_tokens=3, stage="micro") == []


def test_ratio_of_medians(rows):
    spec = figure(sel(rows, context=32768, batch=1, spec_tokens=3, stage="micro"), "output_tokens_per_s", "s")
    base = figure(sel(rows, context=32768, batch=1, spec_tokens=0, stage="micro"), "output_tokens_per_s", "b")
    r = ratio(spec, base, "s", "b")
    assert r.value == pytest.approx(spec.rows[0].metrics["output_tokens_per_s"] / base.rows[0].metrics["output_tokens_per_s"])
    assert r.details["device"] == spec.rows[0].device


def test_median_over_repeats_and_refusals(rows):
    one = sel(rows, context=32768, batch=1, spec_tokens=3, stage="micro")[0]
    reps = [replace(one, metrics={**one.metrics, "output_tokens_per_s": v}, file=f"r{v}.json") for v in (1.0, 5.0, 3.0)]
    assert figure(reps, "output_tokens_per_s", "s").value == 3.0
    mixed = reps[:2] + [replace(reps[2], device="NVIDIA A100-SXM4-80GB")]
    f = figure(mixed, "output_tokens_per_s", "s")
    assert f.value is None and "device" in f.reasons[0]
    assert "absent" in figure(reps, "mean_acceptance_rate_x", "s").reasons[0]
    failed = [replace(one, metrics={**one.metrics, "failed_requests": 2})]
    assert "failed requests" in figure(failed, "output_tokens_per_s", "s").reasons[0]
    assert "no result rows" in figure([], "output_tokens_per_s", "s").reasons[0]
    base = figure([replace(one, commit="ffffffffffff", spec_tokens=0)], "output_tokens_per_s", "b")
    r = ratio(figure([one], "output_tokens_per_s", "s"), base, "s", "b")
    assert r.value is None and "commit" in r.reasons[0]

"""The draft step's bench rows say which form of ours they time (one launch of the ``draft_step`` op or
K1, K2, K3 as three launches): the label carries it into the summary and kernel_anchors.md, and a
summary never merges runs of different forms."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle4.perf import kernel_bench
from eagle4.perf.kernel_report import anchors_md, summarize
from eagle4.perf.points import shape_from_contract

pytestmark = [pytest.mark.cpu]
REPO = Path(__file__).resolve().parents[2]
H100 = "NVIDIA H100 80GB HBM3"


def _summary_row(label: str, point: str) -> dict:
    return {"contract": "default", "contract_sha256": "ab" * 32, "device": H100, "impl": "cuda", "mode": "graph", "B": "1",
            "label": label, "point": point, "median_us": "6.5", "anchor_impl": "torch_draft_layer",
            "anchor_us": "89.5", "ours_over_anchor": "0.0726", "slower_than_anchor": "false", "softmax_only_us": "",
            "roofline_us": "0.0014", "ours_over_roofline": "4642", "cov": "0.01", "valid": "true"}


def test_anchors_md_names_the_draft_step_form():
    md = anchors_md([_summary_row("K1-K3 (one launch)", "draft_step/B1/dtypefloat32"),
                     _summary_row("K1", "draft_tree_score/B1/dtypefloat32")])
    assert "| draft_step/B1/dtypefloat32 (one launch) | 6.50 |" in md
    assert "| draft_tree_score/B1/dtypefloat32 | 6.50 |" in md


def test_summary_refuses_runs_of_two_forms():
    shape = shape_from_contract(REPO / "contracts" / "default.toml")
    raw = [{"contract": "default", "point": "draft_step/B1/dtypefloat32", "impl": "cuda", "mode": "graph",
            "median_us": "6.5", "device": H100, "label": label} for label in ("K1-K3 (one launch)", "K1-K3 (three launches)")]
    with pytest.raises(ValueError, match="mix labels"):
        summarize(raw, [shape])


class _Backend:
    def __init__(self, op):
        self._op = op

    def draft_step_op(self):
        return self._op


def test_step_form_follows_the_source_and_the_switch(monkeypatch):
    monkeypatch.delenv("EAGLE4_DRAFT_STEP_FUSED", raising=False)
    assert kernel_bench._step_form(_Backend(object()), None) == "one launch"
    assert kernel_bench._step_form(_Backend(object()), False) == "three launches"
    assert kernel_bench._step_form(_Backend(None), True) == "three launches"  # a source without the op
    monkeypatch.setenv("EAGLE4_DRAFT_STEP_FUSED", "0")
    assert kernel_bench._step_form(_Backend(object()), None) == "three launches"
    assert kernel_bench._step_form(_Backend(object()), True) == "one launch"


def test_compare_src_passes_the_step_forms_and_anchor_options(monkeypatch, tmp_path):
    seen = []

    def fake(shape, sources, points, rounds, log, kernels, step_forms, anchors):
        seen.append((sources, kernels, step_forms, anchors))
        return [{"contract": "default", "point": "draft_step/B1/dtypefloat32", "kernel_src": "", "impl": "torch_x",
                 "form": "", "median_us": "1.0"}]

    monkeypatch.setattr(kernel_bench, "compare_sources", fake)
    out = tmp_path / "cmp.csv"
    assert kernel_bench.main(["compare-src", "--src", "a.cu", "--src", "b.cu", "--kernels", "draft_step",
                              "--step-forms", "--anchors", "draft_step", "--out", str(out)]) == 0
    assert seen == [(["a.cu", "b.cu"], "draft_step", True, "draft_step")]
    assert out.read_text().splitlines()[0] == ",".join(kernel_bench.COMPARE_FIELDS)


def test_copy_floor_is_reported_beside_the_anchor_never_as_one():
    """K5's copy of its bytes (not the same computation) is faster than ours and than the anchor here, yet
    the anchor stays the fastest same-computation form; the copy only fills copy_us and ours / copy."""
    shape = shape_from_contract(REPO / "contracts" / "default.toml")
    sha = shape.contract_hash
    pid = "logits_to_probas/verify/B8/Q16/V16384"
    times = {("cuda", "true"): 10.0, ("torch_softmax_temp", "true"): 20.0, ("torch_copy_same_bytes", "false"): 4.0}
    raw = [{"contract": "default", "contract_sha256": sha, "kernel": "logits_to_probas", "point": pid, "impl": impl, "B": "8",
            "device": H100, "mode": "graph", "same_computation": same, "run_index": str(i), "median_us": str(us * (1 + 0.001 * i))}
           for (impl, same), us in times.items() for i in range(shape.runs)]
    ours = next(s for s in summarize(raw, [shape]) if s["impl"] == "cuda")
    assert ours["anchor_impl"] == "torch_softmax_temp"
    assert float(ours["ours_over_anchor"]) == pytest.approx(0.5, rel=1e-3)
    assert float(ours["copy_us"]) == pytest.approx(4.008, rel=1e-3)
    assert float(ours["ours_over_copy"]) == pytest.approx(2.5, rel=1e-3)
    assert "(copy 4.0, ours/copy 2.5)" in anchors_md([ours])


def test_an_anchor_row_outside_the_run_rule_is_named_beside_the_ratio():
    ours = _summary_row("K1-K3 (one launch)", "draft_step/B1/dtypefloat32")
    anchor = dict(ours, impl="torch_draft_layer", label="K1-K3", median_us="89.5", valid="false",
                  invalid_reasons="CoV 2.57% over the contract's limit 2%")
    md = anchors_md([ours, anchor])
    assert "torch_draft_layer (anchor row outside the run rule: CoV 2.57% over the contract's limit 2%) | 89.50 |" in md
    assert "outside the run rule" not in anchors_md([ours, dict(anchor, valid="true")])

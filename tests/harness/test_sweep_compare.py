"""kernel_bench on CPU: sweep's check between two launch choices (the outputs and their rules come from the spec),
the phase trace's summary and ncu-probe's kernel selection."""

from __future__ import annotations

import pytest
import torch

from eagle4.perf.kernel_bench import _same_by_spec, _spec_outputs

pytestmark = [pytest.mark.cpu]


def _k5(probas, argmax):
    return _spec_outputs("logits_to_probas", dict(probas=probas, argmax_ids=argmax,
                                                  is_greedy=torch.zeros(1, dtype=torch.uint8), logits=probas))


def test_outputs_are_the_specs_in_order_and_inputs_are_not_compared():
    names = [a.name for a, _ in _k5(torch.ones(2, 4), torch.zeros(2, dtype=torch.int64))]
    assert names == ["probas", "argmax_ids", "is_greedy"]


def test_tol_output_uses_the_specs_tolerance_and_exact_outputs_are_bitwise():
    p = torch.tensor([[0.25, 0.75, float("nan"), 0.0]])
    ids = torch.tensor([1])
    want = _k5(p, ids)
    assert _same_by_spec(want, _k5(p * (1 + 4e-5), ids))      # within rtol 5e-5, NaN equal to NaN
    assert not _same_by_spec(want, _k5(p * (1 + 2e-4), ids))  # outside it
    assert not _same_by_spec(want, _k5(p, torch.tensor([0])))  # an EXACT output differs


def test_exact_float_outputs_take_nan_as_equal():
    from dataclasses import replace

    from eagle4.spec import kernel_spec

    a = next(x for x in kernel_spec("logits_to_probas").outputs if x.name == "probas")
    exact = replace(a, parity="EXACT")
    t = torch.tensor([1.0, float("nan")])
    assert _same_by_spec([(exact, t)], [(exact, t.clone())])
    assert not _same_by_spec([(exact, t)], [(exact, torch.tensor([1.0 + 1e-7, float("nan")]))])


def test_every_swept_kernel_names_spec_outputs():
    from eagle4.perf.kernel_bench import SWEEPS
    from eagle4.spec import kernel_spec

    for kernel, (settings, _, label) in SWEEPS.items():
        assert kernel_spec(kernel).outputs, kernel
        assert len({label(c) for c in settings}) == len(settings), kernel  # every choice has its own label


def test_k5_sweep_sets_every_hook_and_resets_the_prefetch_and_narrow_build_for_settings_without_them():
    from eagle4.perf.kernel_bench import K5_SWEEP, SWEEPS

    calls = []

    class Hooks:  # the op's sweep hooks, recorded
        def __getattr__(self, name):
            return lambda *a: calls.append((name, a))

    _, apply, label = SWEEPS["logits_to_probas"]
    for c in K5_SWEEP:
        calls.clear()
        apply(Hooks(), c)
        got = dict(calls)
        # a setting of six fields runs the automatic prefetch (0), not the previous setting's
        assert got["_k5_prefetch"] == ((c[6] if len(c) > 6 else 0),), c
        assert got["_k5_narrow"] == ((c[7] if len(c) > 7 else 0),), c  # likewise the narrow build
        assert got["_k5_tuning"] == tuple(c[:2]) and got["_k5_one"] == (c[5],), c
    assert label((0, 0, 0, 0, 0, 0, -1)).endswith("/pf-1") and "/pf" not in label(K5_SWEEP[0])
    assert label((0, 0, 0, 0, 0, 0, 0, 1)).endswith("/pf0/n1")


def test_sweep_cli_takes_copy_after(monkeypatch):
    from eagle4.perf import kernel_bench

    seen = {}
    monkeypatch.setattr(kernel_bench, "sweep", lambda sh, kernel, log, points, copy_after: seen.update(
        kernel=kernel, copy_after=copy_after))
    assert kernel_bench.main(["sweep", "--kernel", "logits_to_probas", "--copy-after"]) == 0
    assert seen == {"kernel": "logits_to_probas", "copy_after": True}


def test_phase_summary_counts_blocks_from_their_own_start_and_skips_unreached_points():
    import numpy as np

    from eagle4.perf.kernel_bench import phase_summary

    st = np.zeros((5, 8), dtype=np.int64)  # two rows never stamped (blocks of an earlier, larger launch)
    st[:3, 0] = [100, 200, 300]
    st[:3, 1] = [150, 260, 390]            # 50, 60, 90 cycles after each block's own start
    st[:2, 2] = [400, 500]                 # the third block returned before point 2
    blocks, med, mx = phase_summary(st)
    assert blocks == 3
    assert med[:2] == [60, 300] and mx[:2] == [90, 300]
    assert med[2:] == [-1] * 5 and mx[2:] == [-1] * 5


def test_an_op_refusal_is_reported_and_a_fitting_choice_runs():
    from eagle4.perf.kernel_bench import _try_choice

    def refuse(c):
        raise RuntimeError("draft_tree_reject_sample: the register form with 1 float4 loads a thread does not fit"
                           " V = 128256\nmore")

    assert _try_choice(refuse, (1, 1)) == (
        None, "the register form with 1 float4 loads a thread does not fit V = 128256")
    assert _try_choice(lambda y: f"outs y{y}", 8) == ("outs y8", None)


def test_ncu_probe_takes_only_the_named_kernels_and_refuses_an_unknown_one(monkeypatch):
    # the sign-off's sanitizers at the B = 1 points launch only the kernels it covers (ncu-probe --kernels)
    import eagle4.perf.ncu as ncu
    from eagle4.perf import kernel_bench

    seen = []
    monkeypatch.setattr(ncu, "ncu_probe", lambda shape, points: seen.extend(p.kernel for p in points))
    assert kernel_bench.main(["ncu-probe", "--points", "B1", "--kernels", "reject_sample,logits_to_probas"]) == 0
    assert set(seen) == {"reject_sample", "logits_to_probas"} and len(seen) == 3  # K5's draft and verify point, K6's
    with pytest.raises(SystemExit, match="no point of kernel"):
        kernel_bench.main(["ncu-probe", "--kernels", "reject_sampel"])


def test_phase_trace_builds_a_traced_copy_of_the_named_source(tmp_path):
    from eagle4.perf.kernel_bench import traced_copy

    src = tmp_path / "variant.cu"
    src.write_text("__global__ void k() { E4_T(1); }\n")
    out = traced_copy(src, tmp_path / "build")
    assert out.name == "variant.cu" and out.parent == tmp_path / "build"
    lines = out.read_text().splitlines()
    assert lines[:2] == ["#define E4_TRACE 1", '#line 1 "variant.cu"']  # the compiler's line numbers stay the source's
    assert lines[2:] == src.read_text().splitlines()
    assert src.read_text() == "__global__ void k() { E4_T(1); }\n"  # the source itself untouched


def test_phase_trace_visits_every_choice_or_only_the_automatic_one():
    from eagle4.perf.kernel_bench import SWEEPS, trace_choices

    settings, _, label = SWEEPS["reject_sample"]
    assert trace_choices("reject_sample") == list(settings)
    assert [label(c) for c in trace_choices("reject_sample", auto_only=True)] == ["auto0"]


def test_phase_trace_cli_passes_source_choice_and_launches(monkeypatch, tmp_path):
    from eagle4.perf import kernel_bench

    seen = []
    monkeypatch.setattr(kernel_bench, "phase_trace", lambda sh, kernel, **kw: seen.append((kernel, kw)))
    src = str(tmp_path / "variant.cu")
    assert kernel_bench.main(["phase-trace", "--kernel", "reject_sample", "--points", "B1", "--src", src,
                              "--auto-only", "--launches", "20"]) == 0
    (kernel, kw), = seen
    assert kernel == "reject_sample"
    assert (kw["src"], kw["auto_only"], kw["launches"], kw["points"]) == (src, True, 20, "B1")

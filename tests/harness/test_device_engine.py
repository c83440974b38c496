"""The GPU-resident engine's code path on the CPU (tiny dummy shape, ref backend, no graphs), the
serving-metric definitions and the validity rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from eagle4.contract import load_contract
from eagle4.workload.serving_metrics import RequestTimes, goodput, validity
from eagle4.workload.tiny_contract import write_tiny_contract

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return load_contract(write_tiny_contract(tmp_path_factory.mktemp("tiny"), ROOT / "contracts" / "deployment-8b.toml"))


def test_engine_reproduces_the_trace_and_keeps_state_on_the_device(tiny):
    from eagle4.workload.engine import DeviceEngine

    eng = DeviceEngine(tiny, "ref", device="cpu")
    assert not eng.graphs  # CPU: same functions, run eagerly
    B = 2
    eng.setup(B)
    P = tiny.prompts.prompt_tokens
    eng.prefill(torch.randint(0, 512, (B, P), generator=torch.Generator().manual_seed(0)), torch.tensor([0, 257]))
    lens = np.full(B, P)
    hit = tot = 0
    for _ in range(3):
        out = eng.step().numpy().copy()
        n, a = out[:, 0], out[:, 1]
        assert ((n >= 1) & (n <= a + 1)).all()  # never more than the trace asks; the tree may be shallower
        hit += int((n == a + 1).sum())
        tot += B
        lens += n
        assert (eng.seq_lens.numpy() == lens).all()
        assert (out[:, 2:][np.arange(eng.shape.S)[None, :] >= n[:, None]] == -1).all()
        assert torch.equal(eng.req_to_token, eng.identity)  # KV compaction restored the layout
    assert hit >= tot // 2  # the drafter's tree is deep enough for most trace lengths
    trace = eng.trace.lengths
    assert eng.trace.row_note.startswith("time: measured at deployment shape; acceptance: data/traces/")
    assert int(eng.cursor[0]) == 3 and trace.max() <= tiny.decode.tree_depth


def test_compiled_step_code_commits_what_the_eager_code_commits(tiny):
    """``fused``: the layer parts (the K/V cache write inside the QKV + RoPE part) and the glue between
    the kernels through torch.compile, as on CUDA, in float32 on the CPU: the same committed tokens,
    lengths and trace cursor as the eager code, caches within float32 rounding. B = 5 makes the
    prefill write a row block that is not contiguous (rows 4:5 of the chunks of 4)."""
    from eagle4.workload.engine import DeviceEngine

    B, P = 5, tiny.prompts.prompt_tokens
    prompts = torch.randint(0, 512, (B, P), generator=torch.Generator().manual_seed(1))
    runs = []
    for fused in (False, True):
        eng = DeviceEngine(tiny, "ref", device="cpu", fused=fused)
        eng.setup(B)
        eng.prefill(prompts, torch.arange(B) * 7)
        outs = [eng.step().clone() for _ in range(3)]
        runs.append((outs, eng.seq_lens.clone(), eng.cursor.clone(), eng.tcache.clone(), eng.dcache.clone()))
    (eager, *e), (comp, *c) = runs
    assert all(torch.equal(a, b) for a, b in zip(eager, comp, strict=True))
    assert torch.equal(e[0], c[0]) and torch.equal(e[1], c[1])
    for a, b in zip(e[2:], c[2:], strict=True):
        assert torch.allclose(a, b, rtol=0, atol=1e-5)


def test_a_row_block_of_the_cache_is_written_back():
    from eagle4.models.kv_cache import new_stacked_cache, row_block

    cache = new_stacked_cache(2, 6, 2, 8, 4, "cpu", torch.float32)
    with row_block(cache, 0, 6) as whole:
        assert whole.data_ptr() == cache.data_ptr()  # contiguous: the slice itself
    with row_block(cache, 4, 6) as block:
        assert block.is_contiguous()
        block.view(-1, 4)[3] = 1.0  # through the flat view a forward writes by
    assert float(cache.sum()) == 4.0 and float(cache[0, 0, 4, 0, 3].sum()) == 4.0


def test_parked_rows_stop_growing(tiny):
    from eagle4.workload.engine import DeviceEngine

    eng = DeviceEngine(tiny, "ref", device="cpu")
    eng.setup(2)
    eng.prefill(torch.zeros(2, tiny.prompts.prompt_tokens, dtype=torch.int64), torch.tensor([0, 1]))
    eng.park([True, False])
    eng.step()
    assert int(eng.seq_lens[0]) == tiny.prompts.prompt_tokens and int(eng.seq_lens[1]) > tiny.prompts.prompt_tokens


def test_metric_definitions():
    r = RequestTimes(arrival=1.0, target_tokens=7)
    r.chunks += [(1.5, 1), (1.7, 3), (2.0, 3)]  # first token, then two verify steps
    assert r.ttft == pytest.approx(0.5)
    assert r.itl() == pytest.approx([0.2, 0.3])  # one ITL per chunk, not divided among its tokens
    assert r.finished and r.tpot == pytest.approx(0.5 / 6)
    slo = type("Slo", (), {"ttft_ms": 600.0, "tpot_ms": 100.0})
    assert goodput([r], 2.0, slo) == (0.5, 3.5)
    slo.ttft_ms = 400.0
    assert goodput([r], 2.0, slo) == (0.0, 0.0)


def _run_rows(tiny, tps, durs, steady=True):
    return [{"tokens_per_s": t, "window_s": d, "steady_state": steady, "contract_sha256": tiny.sha256,
             "provenance": "measured"} for t, d in zip(tps, durs, strict=True)]


def test_validity_names_every_rule_missed(tiny):
    st, why, _ = validity(_run_rows(tiny, [100, 110, 90], [0.5, 2.0, 2.0], steady=False),
                          n_samples={"TTFT": 10, "ITL": 500}, contract=tiny)
    assert st == "INVALID"
    text = "; ".join(why)
    for part in ("3 run(s)", "under the contract's minimum 1 s", "TTFT samples 10 < 200", "CoV", "steady state"):
        assert part in text
    st, why, c = validity(_run_rows(tiny, [100, 100.5, 99.5, 100, 100.2], [2.0] * 5), n_samples={"ITL": 500},
                          contract=tiny)
    assert (st, why) == ("VALID", []) and c < 0.01


def test_backend_device_interface_runs_in_place():
    from eagle4.backends import get_backend

    be = get_backend("ref")
    logits = torch.randn(3, 10)
    probas = torch.empty(3, 10)
    out = be.call("logits_to_probas", {"logits": logits, "temperatures": torch.ones(3), "probas": probas},
                  {"rows_per_req": 1, "write_probas": True})
    assert out["probas"] is probas and torch.allclose(probas.sum(1), torch.ones(3))
    assert not be.graph_safe


def test_trained_pair_runs_on_the_same_engine_code_as_the_deployment_shape():
    """The embedded default (load = "local", acceptance from the model) runs the same step functions
    as the dummy deployment shape: ragged greedy prompts commit the target's own greedy tokens, one
    profiled step per verify step, every kernel and the KV compaction in the profile."""
    from eagle4.workload.engine import DeviceEngine

    c = load_contract(ROOT / "contracts" / "default.toml")
    dev = DeviceEngine(c, "ref", device="cpu")
    full = dev.encode_prompts([p["text"] for p in c.load_prompts()[:3]], c.prompts.prompt_tokens)
    ids = [x[: len(x) - 9 * i] for i, x in enumerate(full)]  # ragged prompts
    got = dev.generate(ids, 12, [0.0])
    assert [g.output_ids for g in got] == dev.generate_target_only(ids, 12)
    assert dev.profile.steps == max(len(g.accept_lengths) for g in got)
    assert {"K6_reject_sample", "target_verify", "kv_compaction"} <= set(dev.profile.total)


def test_poisson_arrivals_have_the_declared_rate():
    from eagle4.workload.runner import _arrivals

    t = _arrivals("poisson", 8, 50.0, np.random.default_rng(0), 200.0)
    assert all(b > a for a, b in zip(t, t[1:], strict=False))
    assert len(t) / t[-1] == pytest.approx(50.0, rel=0.05)
    assert _arrivals("concurrency", 8, None, np.random.default_rng(0), 10.0) is None


def test_chunk_itl_counts_one_gap_per_streamed_chunk():
    from eagle4.workload.serving_metrics import chunk_itl

    assert chunk_itl([1.0, 1.5, 1.5, 1.5, 2.5, 2.5]) == pytest.approx([0.5, 1.0])


def test_runner_waits_for_its_share_of_finished_requests_and_resumes(tmp_path):
    """LoadGen's min_query_count: a run's window stays open until it has finished
    ceil(min_samples / runs) requests, not only min_duration_s; ``resume`` keeps the rows of an
    earlier part (same contract and commit) and refuses another contract's."""
    import csv

    from eagle4.workload.runner import run_contract

    path = write_tiny_contract(tmp_path / "c", ROOT / "contracts" / "deployment-8b.toml", min_duration_s=0.01,
                               min_samples=6, cov_max=1.0)
    out = tmp_path / "out"
    stats = run_contract(path, "ref", out, points=["b1"], runs=2, device="cpu", prefix="h100_e2e",
                         log=lambda *_: None)["stats"]
    rows = list(csv.DictReader(open(out / "h100_e2e_runs.csv")))
    assert len(rows) == 2
    for r in rows:
        assert int(r["min_finished_rule"]) == 3 and int(r["finished_requests"]) >= 3, r
    assert stats[0]["ttft_n"] >= 6 and stats[0]["tpot_n"] >= 6
    again = run_contract(path, "ref", out, points=["b1"], runs=2, device="cpu", prefix="h100_e2e", resume=True,
                         log=lambda *_: None)["stats"]
    # nothing re-run: the resumed rows give the same summary (CSV keeps 9 significant digits)
    assert [(a["point"], a["status"], a["ttft_n"], a["itl_n"]) for a in again] == \
        [(a["point"], a["status"], a["ttft_n"], a["itl_n"]) for a in stats]
    assert again[0]["tokens_per_s_mean"] == pytest.approx(stats[0]["tokens_per_s_mean"], rel=1e-8)
    text = (out / "h100_e2e_runs.csv").read_text().replace(rows[0]["contract_sha256"], "0" * 64)
    (out / "h100_e2e_runs.csv").write_text(text)
    with pytest.raises(ValueError, match="h100_e2e_runs.csv: row 2: contract_sha256"):
        run_contract(path, "ref", out, points=["b1"], runs=2, device="cpu", prefix="h100_e2e", resume=True,
                     log=lambda *_: None)


def test_runner_starts_no_process_past_its_deadline_and_resume_finishes(tmp_path):
    """A call with a hard time limit ends between processes: the first process runs (nothing to go by),
    the next is expected to take as long and would end after the deadline, so the runner stops with
    the first row written; ``resume`` then runs the one left."""
    import csv
    import time

    from eagle4.workload.runner import COLD_FACTOR, expected_process_s, run_contract

    assert expected_process_s({}, "b1") == 0.0
    assert expected_process_s({"b1": [3.0, 5.0]}, "b1") == 5.0
    assert expected_process_s({"b1": [3.0, 5.0]}, "b8") == COLD_FACTOR * 5.0
    path = write_tiny_contract(tmp_path / "c", ROOT / "contracts" / "deployment-8b.toml", min_duration_s=0.01,
                               min_samples=2, cov_max=1.0)
    out, said = tmp_path / "out", []
    run_contract(path, "ref", out, points=["b1"], runs=2, device="cpu", prefix="h100_e2e",
                 deadline=time.time() + 0.5, log=said.append)
    assert [r["run_index"] for r in csv.DictReader(open(out / "h100_e2e_runs.csv"))] == ["0"]
    assert any(s.startswith("stopped before b1 run 1: 1 runs left") for s in said), said
    run_contract(path, "ref", out, points=["b1"], runs=2, device="cpu", prefix="h100_e2e", resume=True,
                 log=lambda *_: None)
    assert [r["run_index"] for r in csv.DictReader(open(out / "h100_e2e_runs.csv"))] == ["0", "1"]

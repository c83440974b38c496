"""The fused draft's approximations (hot vocabulary through K1's hot path, int8 transport) on the
engine, and the acceptance-impact artifact the gate ``approximation_acceptance_impact`` reads.

Kept fast: four prompts, short outputs, one torch thread."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from eagle4.contract import load_contract
from eagle4.gates import evaluate_all
from eagle4.gates import metrics as M
from eagle4.workload import approximations as A
from eagle4.workload.engine import DeviceEngine

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "contracts" / "default.toml"
GATE = "approximation_acceptance_impact"
N_PROMPTS, N_OUT = 4, 16  # the contract cycles greedy and T=1 requests: its sampled half leaves the hot set

pytestmark = pytest.mark.cpu


@pytest.fixture(scope="module")
def contract():
    torch.set_num_threads(1)
    return load_contract(CONTRACT)


def _engine(contract):
    return DeviceEngine(contract, "ref")


@pytest.fixture(scope="module")
def hot(contract):
    eng = _engine(contract)
    return A.default_hot_vocab(contract, eng.tokenizer, eng.draft_model.config.vocab_size)


@pytest.fixture(scope="module")
def ids_and_target(contract):
    eng = _engine(contract)
    ids = eng.encode_prompts([p["text"] for p in contract.load_prompts()[:N_PROMPTS]], contract.prompts.prompt_tokens)
    return ids, eng.generate_target_only(ids, N_OUT)


def _mean_acc(res):
    return float(np.mean([a for r in res for a in r.accept_lengths]))


# ---- hot vocabulary ----------------------------------------------------------------------------------
def test_hot_size_scaled_from_contract(contract):
    assert A.scaled_hot_vocab_size(260, 32768, 128256) == 66
    assert A.scaled_hot_vocab_size(16384, 32768, 128256) == 4186
    size, ratio = A.contract_hot_vocab_size(contract, 16384)
    assert size == 4186 and ratio == pytest.approx(32768 / 128256)


def test_select_hot_vocab_is_deterministic_with_id_tiebreak():
    counts = np.array([5, 9, 5, 0, 9, 1])
    h = A.select_hot_vocab(counts, 3)
    assert h.token_ids.tolist() == [0, 1, 4]  # 9, 9 then the lower id of the 5-tie
    assert h.coverage == pytest.approx(23 / 29)
    with pytest.raises(ValueError):
        A.select_hot_vocab(counts, 7)


def test_hot_table_from_training_corpus(contract, hot):
    t = hot.token_ids
    assert hot.size == 4186 and t.dtype == np.int64
    assert np.all(np.diff(t) > 0), "hot table must be sorted by token id and unique"
    tok = _engine(contract).tokenizer
    common = {i for w in (" the", " of", ".", " is", " a") for i in tok.encode(w, bos=False)}
    assert common <= set(t.tolist())
    # a real vocabulary: the hot quarter covers most training tokens, never all of them
    assert hot.source.startswith("training_corpus") and 0.8 < hot.coverage < 1.0
    counts = A.training_token_counts()
    assert counts.shape == (16384,) and counts[t].sum() / counts.sum() == pytest.approx(hot.coverage)


def test_hot_table_refuses_tampered_token_counts(tmp_path):
    import json
    import shutil

    src = ROOT / "models" / "default"
    summary = json.loads((src / "training_summary.json").read_text())
    shutil.copy(src / "training_summary.json", tmp_path / "training_summary.json")
    counts = np.load(src / summary["token_counts"]["path"])
    counts[5] += 1
    np.save(tmp_path / summary["token_counts"]["path"], counts)
    with pytest.raises(ValueError, match="sha256"):
        A.training_token_counts(tmp_path / "training_summary.json")


def test_hot_table_goes_through_k1_hot_path(contract, hot, ids_and_target):
    ids, target = ids_and_target
    eng = _engine(contract)
    app = A.apply_approximations(eng, A.ApproxConfig("hot", hot_vocab=True), hot)
    assert eng.draft_model.lm_head.out_features == hot.size
    torch.testing.assert_close(eng.draft_model.lm_head.weight,
                               _engine(contract).draft_model.lm_head.weight[torch.from_numpy(hot.token_ids)])
    res = eng.generate(ids, N_OUT, [0.0], seed=1)
    be = app.backend
    assert be is eng.backend and be.k1_calls > 0
    tin, tout = be.last_k1["tokens_in"], be.last_k1["tokens_out"]
    assert tin.min() >= 0 and tin.max() < hot.size, "draft candidates must be hot indices before K1"
    np.testing.assert_array_equal(tout, hot.token_ids[tin])  # K1 remapped them in place (§1.5 step 2)
    assert [r.output_ids for r in res] == target  # lossless


def test_hot_indices_without_k1_remap_collapse_acceptance(contract, hot, ids_and_target):
    """Negative control: hot-restricted logits but K1 called with use_hot_token_id = false (the engine's
    default) proposes hot *indices* as tokens; verification still keeps the output exact, but acceptance
    drops, so the remap through K1 is what makes the hot path work."""
    ids, target = ids_and_target
    good = _engine(contract)
    A.apply_approximations(good, A.ApproxConfig("hot", hot_vocab=True), hot)
    bad = _engine(contract)
    A.restrict_lm_head(bad.draft_model, hot.token_ids)
    rg, rb = good.generate(ids, N_OUT, [0.0], seed=1), bad.generate(ids, N_OUT, [0.0], seed=1)
    assert [r.output_ids for r in rb] == target
    assert _mean_acc(rb) < _mean_acc(rg) - 1.0


# ---- int8 transport ----------------------------------------------------------------------------------
def test_int8_quant_dequant_error_bounded():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(6, 40, generator=g) * torch.tensor([1e-3, 1.0, 30.0, 0.0, 1.0, 5.0])[:, None]
    w[4, 7] = -9.0  # an outlier row
    q, s = A.quantize_int8_rows(w)
    assert q.dtype == torch.int8 and s.dtype == torch.float32 and s.shape == (6,)
    assert int(q.abs().max()) == 127 and int(q.min()) >= -127
    deq = A.dequantize_int8_rows(q, s)
    assert deq.dtype == torch.float32
    err = (deq - w).abs()
    assert torch.all(err <= s[:, None] * (0.5 + 1e-5)), "error must be <= half a quantization step per row"
    assert torch.all(err[3] == 0) and s[3] == 1.0  # all-zero row
    for r in (0, 1, 2, 4, 5):  # the row maximum is represented exactly (up to f32 rounding)
        i = int(w[r].abs().argmax())
        assert deq[r, i].item() == pytest.approx(w[r, i].item(), rel=1e-6)


def test_int8_transport_touches_exactly_the_drafter_and_lm_head(contract):
    exact, eng = _engine(contract), _engine(contract)
    app = A.apply_approximations(eng, A.ApproxConfig("int8", int8_lm_head=True, int8_drafter=True))
    quant = {"lm_head.weight"} | {f"{n}.weight" for n, _ in A.drafter_linears(eng.draft_model)}
    assert len(app.quant_errs) == len(quant) == 9 and max(app.quant_errs) <= 0.5 + 1e-5
    ref = dict(exact.draft_model.named_parameters())
    for name, p in eng.draft_model.named_parameters():
        if name in quant:
            s = p.detach().abs().amax(1, keepdim=True) / 127
            steps = p.detach() / s
            assert torch.allclose(steps, steps.round(), atol=1e-3), f"{name} is not on its int8 grid"
            assert not torch.equal(p, ref[name])
        else:  # fc.bias, norms, embedding: untouched
            assert torch.equal(p, ref[name]), name
    for a, b in zip(eng.target_model.parameters(), exact.target_model.parameters(), strict=True):
        assert torch.equal(a, b)  # the target is never approximated


# ---- artifact + gate ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def artifact(contract, tmp_path_factory):
    from eagle4.cli import main

    out = tmp_path_factory.mktemp("reports") / "acceptance_impact.csv"
    rc = main(["acceptance-impact", "--contract", str(CONTRACT), "--prompts", str(N_PROMPTS), "--output-tokens",
               str(N_OUT), "--out", str(out), "--no-gate"])
    assert rc == 0
    return out


def test_csv_schema_matches_the_gate_metric(contract, artifact):
    rows = M.read_rows(artifact)
    assert [r["config"] for r in rows] == [c.name for c in A.CONFIGS]
    need = {"config", "mean_acceptance_length", "baseline_mean_acceptance_length", "impact", "n_verify_steps",
            "prompts", "hot_vocab_size_used", "device", "commit", "contract_sha256", "provenance"}
    assert need <= set(rows[0])
    ctx = M.Ctx(artifact.parent, contract.sha256, "cpu", ROOT)
    M._check_contract(rows, "reports/acceptance_impact.csv", ctx)  # the hash column metrics.py reads
    for r in rows:
        assert r["provenance"] == "measured" and r["contract_sha256"] == contract.sha256
        assert r["greedy_equals_target"] == f"true ({N_PROMPTS // 2} greedy requests)"  # the greedy half
        assert int(r["prompts"]) == N_PROMPTS and int(r["n_verify_steps"]) > 0
        base, acc = float(r["baseline_mean_acceptance_length"]), float(r["mean_acceptance_length"])
        assert float(r["impact"]) == pytest.approx((base - acc) / base, abs=1e-7)
        assert int(r["hot_vocab_size_used"]) == (4186 if r["lm_head_vocab"] == "hot" else 16384)
        assert (int(r["k1_hot_calls"]) > 0) == (r["lm_head_vocab"] == "hot")
        if r["lm_head_vocab"] == "hot":  # the approximation can bite on this pair
            assert 0.0 < float(r["target_output_hot_coverage"]) < 1.0
    assert float(rows[0]["impact"]) == 0.0


def test_gate_evaluates_from_the_artifact(contract, artifact):
    rows = M.read_rows(artifact)
    worst = max(float(r["impact"]) for r in rows)
    m = M.acceptance_length_impact(None, M.Ctx(artifact.parent, contract.sha256, "cpu", ROOT))
    assert m.value == pytest.approx(worst) and m.provenance == ["measured"]
    (g,) = evaluate_all(contract, artifact.parent, hw="cpu", only=[GATE])
    assert g.status in ("PASS", "FAIL"), g.line()  # no longer INVALID for lack of data
    assert g.value == pytest.approx(worst) and g.provenance == ["measured"]
    assert g.status == ("PASS" if worst <= g.threshold else "FAIL")


def test_gate_refused_where_the_hot_set_covers_every_target_output(contract, artifact, tmp_path):
    """Issue 13 point 5: on a model whose target outputs all lie in the hot set (the old byte-level
    pair), the hot vocabulary cannot change anything: the gate refuses instead of passing."""
    import csv

    rows = M.read_rows(artifact)
    for cov, marker in (("1", "refused"), ("", "lack target_output_hot_coverage")):
        for r in rows:
            if r["lm_head_vocab"] == "hot":
                r["target_output_hot_coverage"] = cov
        with open(tmp_path / "acceptance_impact.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        (g,) = evaluate_all(contract, tmp_path, hw="cpu", only=[GATE])
        assert g.status == "INVALID" and any(marker in r for r in g.reasons), g.line()


def test_gate_invalid_without_the_artifact(contract, tmp_path):
    (g,) = evaluate_all(contract, tmp_path, hw="cpu", only=[GATE])
    assert g.status == "INVALID" and any("acceptance_impact.csv" in r for r in g.reasons)


# ---- int4 LM head ------------------------------------------------------------------------------------
def test_int4_quant_pack_roundtrip_and_error_bound():
    g = torch.Generator().manual_seed(1)
    w = torch.randn(5, 33, generator=g) * torch.tensor([1e-3, 1.0, 30.0, 0.0, 2.0])[:, None]
    q, s = A.quantize_int4_rows(w)
    assert int(q.abs().max()) == 7 and int(q.min()) >= -7 and s[3] == 1.0
    deq = A.dequantize_int4_rows(q, s)
    assert torch.all((deq - w).abs() <= s[:, None] * (0.5 + 1e-5)), "error must be <= half a quantization step"
    packed = A.pack_int4_rows(q.numpy())
    assert packed.dtype == np.uint8 and packed.shape == (5, 17)  # ceil(33 / 2) bytes per row
    assert np.array_equal(A.unpack_int4_rows(packed, 33), q.numpy())
    assert packed[0, 0] == ((int(q[0, 0]) & 0xF) | ((int(q[0, 1]) & 0xF) << 4))  # even h: low nibble
    with pytest.raises(ValueError, match="int4"):
        A.pack_int4_rows(np.array([[9]], np.int8))


def test_int4_lm_head_touches_only_the_lm_head(contract):
    exact, eng = _engine(contract), _engine(contract)
    app = A.apply_approximations(eng, A.ApproxConfig("int4", int4_lm_head=True))
    assert len(app.quant_errs) == 1 and app.quant_errs[0] <= 0.5 + 1e-5
    ref = dict(exact.draft_model.named_parameters())
    for name, p in eng.draft_model.named_parameters():
        if name == "lm_head.weight":
            steps = p.detach() / (p.detach().abs().amax(1, keepdim=True) / 7)
            assert torch.allclose(steps, steps.round(), atol=1e-3) and steps.abs().max() <= 7 + 1e-3
        else:
            assert torch.equal(p, ref[name]), name
    with pytest.raises(ValueError, match="int8 or int4"):
        A.ApproxConfig("both", int8_lm_head=True, int4_lm_head=True)

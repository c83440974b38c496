"""The engine on the embedded default pair: the §8 draft/verify loop with the seven kernels through a
backend (device-tensor interface, or host copies for a numpy-only backend).

The central check: greedy speculative decoding equals greedy decoding of the target alone,
token for token, on the default prompts (temperature 0)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from eagle4.backends import Backend, get_backend
from eagle4.contract import Decode, load_contract
from eagle4.kernels import tree_glue
from eagle4.models.tokenizer import load_tokenizer
from eagle4.workload.engine import DeviceEngine

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "contracts" / "default.toml"

pytestmark = pytest.mark.cpu


@pytest.fixture(scope="module")
def contract():
    return load_contract(CONTRACT)


@pytest.fixture(scope="module")
def engine(contract):
    torch.set_num_threads(1)
    return DeviceEngine(contract, "ref")


@pytest.fixture(scope="module")
def greedy_run(contract, engine):
    prompts = [p["text"] for p in contract.load_prompts()]
    ids = engine.encode_prompts(prompts, contract.prompts.prompt_tokens)
    n = contract.prompts.output_tokens
    spec = engine.generate(ids, n, [0.0], seed=1)
    base = engine.generate_target_only(ids, n)
    return ids, spec, base


def test_greedy_speculative_equals_target_greedy(greedy_run):
    ids, spec, base = greedy_run
    for i, (s, b) in enumerate(zip(spec, base, strict=False)):
        assert len(s.output_ids) == len(b)
        if s.output_ids != b:
            j = next(k for k, (x, y) in enumerate(zip(s.output_ids, b, strict=False)) if x != y)
            pytest.fail(f"prompt {i}: speculative output diverges from target greedy at token {j}: "
                        f"{s.output_ids[j]} != {b[j]}")


def test_default_pair_mean_acceptance_at_least_2(greedy_run):
    _, spec, _ = greedy_run
    acc = float(np.mean([a for r in spec for a in r.accept_lengths]))
    assert acc >= 2.0, f"mean acceptance length {acc:.3f} < 2.0 on the default prompts"


def test_timing_fields_are_per_token(greedy_run):
    _, spec, _ = greedy_run
    r = spec[0]
    assert len(r.token_times) == len(r.output_ids)
    assert len(r.itl()) == len(r.output_ids) - 1
    assert r.ttft > 0 and r.e2e >= r.ttft
    assert abs(sum(r.itl()) - (r.e2e - r.ttft)) < 1e-9


def test_profile_covers_every_kernel(engine, greedy_run):
    regions = {row["region"] for row in engine.profile.table()}
    for k in ("K1_", "K2_", "K3_", "K4_tree_mask_draft", "K4_tree_mask_verify", "K5_", "K6_", "K7_"):
        assert any(r.startswith(k) for r in regions), (k, regions)
    assert {"target_verify", "draft_layer", "draft_extend"} <= regions


class _DropTreeAncestors(Backend):
    """ref, except K4's packed mask loses every tree column except the diagonal: if the model
    attention really comes from K4, the target's verify logits change and outputs diverge."""

    name = "ref-broken-k4"
    provenance = "reference"

    def __init__(self):
        self.ref = get_backend("ref")

    def run(self, kernel, inputs, params, want=()):
        out = self.ref.run(kernel, inputs, params)
        if kernel == "tree_mask" and params["T"] > 1:
            B, T, Q = params["B"], params["T"], params["Q"]
            pm = out["packed_mask"].copy()
            for b in range(B):
                L = int(inputs["seq_lens"][b])
                seg0, seg1 = out["mask_indptr_bytes"][b], out["mask_indptr_bytes"][b + 1]
                bits = np.unpackbits(pm[seg0:seg1], bitorder="little")[: Q * (L + T)].reshape(Q, L + T)
                bits[:, L:] = 0
                for q in range(Q):
                    bits[q, L + T - Q + q] = 1
                pm[seg0:seg1] = np.packbits(bits.ravel(), bitorder="little")
            out["packed_mask"] = pm
        return out


def test_k4_mask_drives_the_attention(contract):
    torch.set_num_threads(1)
    eng = DeviceEngine(contract, _DropTreeAncestors())
    prompts = [p["text"] for p in contract.load_prompts()][:4]
    ids = eng.encode_prompts(prompts, contract.prompts.prompt_tokens)
    spec = eng.generate(ids, 24, [0.0], seed=1)
    base = eng.generate_target_only(ids, 24)
    assert any(s.output_ids != b for s, b in zip(spec, base, strict=False)), \
        "breaking K4's mask did not change the output: the attention is not driven by K4"


def test_dense_mask_decodes_k4_segments():
    """K4's packed mask, decoded by the engine, is exactly the visibility K4 describes: the prefix,
    then the query's ancestors and itself in the tree, nothing past the request's KV length.
    Layout as in the engine: row b owns cache positions b*S_max.., the tree sits right after the
    prefix. Two requests (prefix 0 and 1 tokens), T=3 tree tokens, the last Q=2 are queries."""
    S_max, B, T, Q = 6, 2, 3, 2
    seq_lens = np.array([0, 1], np.int64)
    k4 = get_backend("ref").run("tree_mask", {
        "seq_lens": seq_lens, "req_pool_indices": np.arange(B, dtype=np.int64),
        "req_to_token": np.arange(B * S_max, dtype=np.int32).reshape(B, S_max),
        "tree_cache_locs": np.arange(B)[:, None] * S_max + seq_lens[:, None] + np.arange(T),
        "tree_parent": np.array([[-1, 0, 0], [-1, 0, 1]], np.int64)},
        {"S_max": S_max, "B": B, "T": T, "Q": Q, "write_bool_mask": False})
    k4 = {k: torch.from_numpy(np.asarray(v)) for k, v in k4.items()}
    dense = tree_glue.dense_tree_mask(k4["kv_indptr"], k4["mask_indptr_bytes"], k4["packed_mask"], Q, S_max)
    assert dense.shape == (B, Q, S_max)
    assert dense.int().tolist() == [
        [[1, 1, 0, 0, 0, 0],   # node 1 (parent 0): root, itself
         [1, 0, 1, 0, 0, 0]],  # node 2 (parent 0): root, itself
        [[1, 1, 1, 0, 0, 0],   # prefix, root, node 1
         [1, 1, 1, 1, 0, 0]],  # prefix, root, node 1, node 2 (a chain)
    ]


def test_sampling_is_seeded_and_runs(contract, engine):
    prompts = [p["text"] for p in contract.load_prompts()][:3]
    ids = engine.encode_prompts(prompts, contract.prompts.prompt_tokens)
    a = engine.generate(ids, 20, [0.8, 0.0, 1.0], seed=7)
    b = engine.generate(ids, 20, [0.8, 0.0, 1.0], seed=7)
    assert [r.output_ids for r in a] == [r.output_ids for r in b]
    assert all(len(r.output_ids) == 20 for r in a)
    assert all(1 <= x <= contract.decode.S for r in a for x in r.accept_lengths)


def test_batch_of_mixed_prompt_lengths(engine):
    tok = engine.tokenizer
    ids = [tok.encode("x"), tok.encode("The quick brown fox"), tok.encode("The quick brown fox jumps over the lazy dog")]
    assert len({len(x) for x in ids}) == 3
    spec = engine.generate(ids, 16, [0.0], seed=0)
    base = engine.generate_target_only(ids, 16)
    assert [r.output_ids for r in spec] == base


@pytest.mark.csim
@pytest.mark.slow
def test_csim_backend_small_case(contract):
    be = get_backend("csim")
    ok, why = be.available()
    if not ok:
        pytest.fail(f"csim backend unavailable: {why}")
    torch.set_num_threads(1)
    eng = DeviceEngine(contract, "csim+ref")
    ids = eng.encode_prompts([p["text"] for p in contract.load_prompts()][:2], contract.prompts.prompt_tokens)
    spec = eng.generate(ids, 12, [0.0], seed=1)
    base = eng.generate_target_only(ids, 12)
    assert [r.output_ids for r in spec] == base
    assert any(v == "csim" for v in eng.backend.used.values()), eng.backend.used


def test_loads_hf_style_checkpoints(tmp_path):
    """Sharded target (model.safetensors.index.json) and an EAGLE-1 style draft (no layer-0
    input_layernorm, embed/lm_head taken from the target) load from plain local directories."""
    import json
    import shutil

    from safetensors.torch import load_file, save_file

    from eagle4.models import load_draft, load_target

    src = ROOT / "models" / "default"
    t = tmp_path / "target"
    t.mkdir()
    shutil.copy(src / "target" / "config.json", t / "config.json")
    sd = load_file(str(src / "target" / "model.safetensors"))
    keys = sorted(sd)
    half = len(keys) // 2
    save_file({k: sd[k] for k in keys[:half]}, str(t / "model-00001-of-00002.safetensors"))
    save_file({k: sd[k] for k in keys[half:]}, str(t / "model-00002-of-00002.safetensors"))
    (t / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        k: ("model-00001-of-00002.safetensors" if i < half else "model-00002-of-00002.safetensors")
        for i, k in enumerate(keys)}}))
    target = load_target(t)
    ref = load_target(src / "target")
    ids = torch.tensor([load_tokenizer(src / "target").encode("Hi there")])
    assert torch.equal(target.forward_train(ids)[1], ref.forward_train(ids)[1])
    d = tmp_path / "draft"
    d.mkdir()
    shutil.copy(src / "draft" / "config.json", d / "config.json")
    dsd = load_file(str(src / "draft" / "model.safetensors"))
    dsd.pop("layers.0.input_layernorm.weight")
    save_file(dsd, str(d / "model.safetensors"))
    draft = load_draft(d, target)
    assert isinstance(draft.layers[0].input_layernorm, torch.nn.Identity)
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_target(tmp_path)


def test_plain_safetensors_reader_matches_library():
    from safetensors.torch import load_file

    from eagle4.models.llama import _load_safetensors_plain

    f = ROOT / "models" / "default" / "target" / "model.safetensors"
    a, b = _load_safetensors_plain(str(f)), load_file(str(f))
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and torch.equal(a[k].view(torch.int16), b[k].view(torch.int16))


@pytest.mark.cuda
def test_greedy_speculative_equals_target_greedy_on_cuda(contract):
    """The same check with the models on the GPU and the kernels on EAGLE4_E2E_BACKEND (default
    ``cuda``; ``ref`` runs the reference kernels on the GPU)."""
    import os

    backend = os.environ.get("EAGLE4_E2E_BACKEND", "cuda")
    eng = DeviceEngine(contract, backend, device="cuda")
    ids = eng.encode_prompts([p["text"] for p in contract.load_prompts()][:8], contract.prompts.prompt_tokens)
    spec = eng.generate(ids, 32, [0.0], seed=1)
    base = eng.generate_target_only(ids, 32)
    assert [r.output_ids for r in spec] == base
    assert np.mean([a for r in spec for a in r.accept_lengths]) >= 2.0


class _RunOnly(Backend):
    """ref through ``run`` only (numpy): the engine calls it through host copies, as it calls csim,
    xrt and dump."""

    name = "ref-run-only"
    provenance = "reference"

    def __init__(self):
        self.ref = get_backend("ref")

    def run(self, kernel, inputs, params, want=()):
        return self.ref.run(kernel, inputs, params)


def test_numpy_only_backend_commits_the_same_tokens(contract, engine):
    ids = engine.encode_prompts([p["text"] for p in contract.load_prompts()][:3], contract.prompts.prompt_tokens)
    eng = DeviceEngine(contract, _RunOnly())
    a, b = engine.generate(ids, 16, [0.0], seed=2), eng.generate(ids, 16, [0.0], seed=2)
    assert [(r.output_ids, r.accept_lengths) for r in a] == [(r.output_ids, r.accept_lengths) for r in b]


def test_width_policy_work_deltas_is_refused(contract):
    c = contract.model_copy(update={"decode": contract.decode.model_copy(update={"width_policy": "work_deltas"})})
    with pytest.raises(ValueError, match="width_policy = 'work_deltas'.*static shapes"):
        DeviceEngine(c, "ref")


def _with_decode(contract, **kw):
    d = Decode.model_validate({**contract.decode.model_dump(), **kw})
    return contract.model_copy(update={"decode": d})


@pytest.mark.parametrize("params", [
    dict(node_top_k=4, tree_depth=5, verify_num=16, max_tree_width=4, max_node_count=128, max_verify_num=32,
         max_input_size=32),
    dict(node_top_k=3, tree_depth=3, verify_num=5, max_tree_width=2, max_node_count=32, max_verify_num=8,
         max_input_size=8),
    dict(node_top_k=1, tree_depth=4, verify_num=4, max_tree_width=1, max_node_count=16, max_verify_num=4,
         max_input_size=8),
], ids=["K4-D5", "K3-D3-W2-Vn5", "chain-K1"])
def test_other_tree_shapes_stay_exact(contract, params):
    """Other trees (a frontier narrower than K: W < K hand-offs) stay token-exact."""
    torch.set_num_threads(1)
    c = _with_decode(contract, **params)
    eng = DeviceEngine(c, "ref")
    ids = eng.encode_prompts([p["text"] for p in contract.load_prompts()][:3], contract.prompts.prompt_tokens)
    spec = eng.generate(ids, 20, [0.0], seed=3)
    base = eng.generate_target_only(ids, 20)
    assert [r.output_ids for r in spec] == base
    assert all(1 <= a <= c.decode.S for r in spec for a in r.accept_lengths)


def test_stop_on_eos_ends_a_request_at_its_eos(contract, engine):
    ids = engine.encode_prompts([p["text"] for p in contract.load_prompts()][:2], contract.prompts.prompt_tokens)
    base = engine.generate_target_only(ids, 24)
    eos = base[0][5]  # a token the first request emits: treated as EOS, it ends that request there
    c = _with_decode(contract, stop_on_eos=True)
    eng = DeviceEngine(c, "ref")
    eng.tokenizer = type("Tok", (), {"eos_id": eos})()
    res = eng.generate(ids, 24, [0.0], seed=1)
    for r, b in zip(res, base, strict=True):
        n = b.index(eos) + 1 if eos in b else len(b)
        assert r.output_ids == b[:n]

"""The deployment contract (load = "dummy" + accept-length trace) and the schema fields it uses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eagle4.contract import ContractError, load_contract

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "contracts" / "deployment-8b.toml"


def test_deployment_contract_declares_the_llama_8b_shape():
    c = load_contract(DEPLOY)
    t, d = c.model.target_arch, c.model.draft_arch
    assert (c.model.load, c.model.dtype) == ("dummy", "bfloat16")
    assert (t.hidden_size, t.num_layers, t.num_heads, t.num_kv_heads, t.intermediate_size, t.vocab_size) == \
        (4096, 32, 32, 8, 14336, 128256)
    assert (len(d.fc_layers), d.hot_vocab_size) == (3, 32768)
    k = c.decode
    assert (k.node_top_k, k.max_tree_width, k.tree_depth, k.verify_num) == (8, 8, 6, 64)
    assert [p.batch for p in c.operating_points] == [1, 8, 32, 128]
    assert (c.prompts.prompt_tokens, c.prompts.output_tokens) == (1024, 256)
    assert c.acceptance.source == "trace" and c.slo is not None
    assert c.runs.runs >= 5 and c.runs.min_duration_s >= 30 and c.runs.cov_max <= 0.02


def test_default_contract_hash_is_unchanged_by_the_added_fields():
    # the committed rows of the embedded default carry this hash (the real-vocabulary pair's contract with
    # the int4 draft LM head of issue 13; 7ba55032507b before it): a schema field added later must leave it
    assert load_contract(ROOT / "contracts" / "default.toml").sha256.startswith("4f5c679f5a7d")


def _edit(tmp_path, old, new):
    text = DEPLOY.read_text()
    assert old in text
    p = tmp_path / "contracts" / "c.toml"
    p.parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("")
    p.write_text(text.replace(old, new))
    trace = tmp_path / "data" / "traces"
    trace.mkdir(parents=True, exist_ok=True)
    src = ROOT / "data" / "traces" / "embedded-pair-accept-lengths.csv"
    (trace / src.name).write_bytes(src.read_bytes())
    return p


def test_dummy_load_needs_a_trace(tmp_path):
    p = _edit(tmp_path, 'source = "trace"', 'source = "model"')
    with pytest.raises(ContractError, match="acceptance.source = 'trace'"):
        load_contract(p)


def test_trace_hash_is_checked(tmp_path):
    p = _edit(tmp_path, 'sha256 = "4cef', 'sha256 = "0cef')
    with pytest.raises(ContractError, match=r"acceptance\.sha256"):
        load_contract(p)


def test_dummy_arch_is_validated(tmp_path):
    p = _edit(tmp_path, "fc_layers = [2, 16, 29]", "fc_layers = [2, 16, 32]")
    with pytest.raises(ContractError, match="fc_layers"):
        load_contract(p)


def test_poisson_needs_rates(tmp_path):
    p = _edit(tmp_path, 'mode = "concurrency"', 'mode = "poisson"')
    with pytest.raises(ContractError, match="request_rate"):
        load_contract(p)


def test_trace_file_is_the_measured_embedded_pair_trace():
    c = load_contract(DEPLOY)
    head = c.resolve(c.acceptance.trace).read_text().splitlines()[:2]
    assert "accept_length" in head[0].split(",")
    assert re.match(r"^b6befd65731f", head[1]) and head[1].endswith("measured")

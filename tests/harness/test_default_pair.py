"""The committed embedded default pair (models/default): a real BPE vocabulary, consistent files,
held-out prompts, small enough for the repository and CPU CI."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from eagle4.contract import load_contract
from eagle4.models import load_draft, load_target, load_tokenizer
from eagle4.models.tokenizer import HFTokenizer

ROOT = Path(__file__).resolve().parents[2]
PAIR = ROOT / "models" / "default"
CONTRACT = ROOT / "contracts" / "default.toml"

pytestmark = pytest.mark.cpu


@pytest.fixture(scope="module")
def summary():
    return json.loads((PAIR / "training_summary.json").read_text())


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(PAIR / "target")


def test_bpe_vocabulary_of_at_least_16k(tok, summary):
    assert isinstance(tok, HFTokenizer) and tok.vocab_size >= 16384
    assert (tok.bos_id, tok.eos_id, tok.pad_id) == (0, 1, 2)
    text = "Return a new list containing all items from the iterable in ascending order."
    ids = tok.encode(text)
    assert ids[0] == tok.bos_id and len(ids) < len(text) / 2.5, "BPE merges words, not bytes"
    assert tok.decode(ids) == text
    assert not (PAIR / "draft" / "tokenizer.json").exists(), "the draft head uses the target's tokenizer"
    assert summary["tokenizer"]["vocab_size"] == tok.vocab_size
    assert summary["tokenizer"]["sha256"] == hashlib.sha256((PAIR / "target" / "tokenizer.json").read_bytes()).hexdigest()


def test_models_match_the_tokenizer_and_stay_small(tok):
    target = load_target(PAIR / "target")
    draft = load_draft(PAIR / "draft", target)
    assert target.config.vocab_size == draft.config.vocab_size == tok.vocab_size
    assert target.config.bos_token_id == tok.bos_id and target.config.eos_token_id == tok.eos_id
    total = sum(f.stat().st_size for d in ("target", "draft") for f in (PAIR / d).iterdir())
    assert total < 4_000_000, f"committed weights + tokenizers are {total / 1e6:.1f} MB (keep the repo small)"


def test_prompts_are_held_out_and_pinned(summary):
    c = load_contract(CONTRACT)
    (pf,) = c.prompts.files
    assert summary["prompts"]["sha256"] == pf.sha256, "the contract measures the prompts the pair was trained beside"
    split = {f["path"]: f["split"] for f in summary["corpus"]["files"]}
    prompts = c.load_prompts()
    assert len(prompts) == summary["prompts"]["count"] >= 16
    for p in prompts:
        src = p["source"].removeprefix("stdlib:")
        assert split.get(src) == "held_out", f"prompt {p['id']} comes from {src}, not a held-out file"
        rule = hashlib.sha256(src.encode()).digest()[0] % 8 == 0
        assert rule, f"{src} does not satisfy the recorded held-out rule {summary['corpus']['held_out_rule']}"


def test_prompts_fill_the_contract_prompt_length(tok):
    c = load_contract(CONTRACT)
    lens = [len(tok.encode(p["text"])) for p in c.load_prompts()]
    assert min(lens) >= c.prompts.prompt_tokens, "every prompt is cut by the contract, none is shorter"


def test_corpus_licence_and_counts_recorded(summary):
    corpus = summary["corpus"]
    assert "PSF" in corpus["licence"] and len(corpus["licence_sha256"]) == 64
    counts = np.load(PAIR / summary["token_counts"]["path"])
    assert counts.shape == (summary["tokenizer"]["vocab_size"],)
    assert int(counts.sum()) == summary["token_counts"]["tokens"] == summary["training_tokens"]

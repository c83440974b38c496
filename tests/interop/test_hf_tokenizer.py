"""A Hugging Face client loading the embedded model folder counts prompts as the server does: the
same ids, ``<|bos|>`` prepended, and the three special tokens known as special (issue 42)."""

from __future__ import annotations

import pytest

from eagle4.models.tokenizer import BOS, EOS, PAD, load_tokenizer

from .clients import REPO

pytestmark = [pytest.mark.interop, pytest.mark.cpu]
TARGET = REPO / "models" / "default" / "target"


def test_hf_tokenizer_counts_as_the_server():
    from transformers import AutoTokenizer  # an interop dependency: missing, the test fails naming it

    hf, ours = AutoTokenizer.from_pretrained(str(TARGET)), load_tokenizer(TARGET)
    assert (hf.bos_token, hf.eos_token, hf.pad_token) == (BOS, EOS, PAD)
    assert {ours.bos_id, ours.eos_id, ours.pad_id} <= set(hf.all_special_ids)
    for text in ("Hello world", "def f(a, b):\n    return a + b", " leading space", "x <|eos|> y"):
        assert hf(text)["input_ids"] == ours.encode(text)
        assert hf(text, add_special_tokens=False)["input_ids"] == ours.encode(text, bos=False)
    ids = ours.encode("return a + b")
    assert hf.decode(ids, skip_special_tokens=True) == ours.decode(ids)

from typing import Any

from transformers import AutoTokenizer

TokenizerLike = Any


def get_tokenizer(name, *args, tokenizer_mode="auto", trust_remote_code=False, revision=None, **kw):
    return AutoTokenizer.from_pretrained(name, trust_remote_code=trust_remote_code, revision=revision)

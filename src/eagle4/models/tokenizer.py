"""Tokenizers of the local model directories (``tokenizer.json`` beside ``config.json``).

Two kinds are read:

* a Hugging Face ``tokenizers`` file (``{"model": {"type": "BPE", ...}, ...}``), e.g. the byte-level BPE
  of the embedded default pair (``scripts/train_default_pair.py``): :class:`HFTokenizer`;
* the legacy byte scheme ``{"type": "bytes", ...}`` (ids 0..255 are bytes, specials follow):
  :class:`ByteTokenizer`.

Both expose ``encode(text, bos=True)``, ``decode(ids)``, ``bos_id``, ``eos_id``, ``pad_id`` and
``vocab_size``; the engine needs nothing else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

# Special tokens of the trained default pair (ids 0, 1, 2 of its vocabulary).
BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"


@dataclass(frozen=True)
class ByteTokenizer:
    bos_id: int = 256
    eos_id: int = 257
    pad_id: int = 258
    vocab_size: int = 260

    def encode(self, text: str, *, bos: bool = True) -> list[int]:
        ids = list(text.encode("utf-8"))
        return ([self.bos_id] if bos else []) + ids

    def decode(self, ids) -> str:
        return bytes(int(i) for i in ids if 0 <= int(i) < 256).decode("utf-8", errors="replace")

    def to_json(self) -> dict:
        return {"type": "bytes", "bos_id": self.bos_id, "eos_id": self.eos_id, "pad_id": self.pad_id,
                "vocab_size": self.vocab_size}


def add_bos_template(tok) -> None:
    """Give a ``tokenizers.Tokenizer`` the post-processor that prepends ``<|bos|>`` when special tokens
    are added: a Hugging Face client (``AutoTokenizer``, default ``add_special_tokens=True``) then
    counts a prompt as the server does. The model folder's ``tokenizer_config.json`` names the three
    special tokens for it."""
    from tokenizers.processors import TemplateProcessing

    bos = tok.token_to_id(BOS)
    tok.post_processor = TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos)])


class HFTokenizer:
    """A ``tokenizers.Tokenizer`` file with ``<|bos|>``/``<|eos|>``/``<|pad|>`` specials; BOS is
    prepended by :meth:`encode` (which encodes without the file's post-processor, so training and
    serving agree whether or not the file has one)."""

    def __init__(self, tok, path: str = ""):
        self._tok = tok
        self.path = path
        ids = {name: tok.token_to_id(name) for name in (BOS, EOS, PAD)}
        missing = [n for n, i in ids.items() if i is None]
        if missing:
            raise ValueError(f"{path or 'tokenizer'}: special token(s) {missing} not in the vocabulary")
        self.bos_id, self.eos_id, self.pad_id = ids[BOS], ids[EOS], ids[PAD]
        self.vocab_size = tok.get_vocab_size(with_added_tokens=True)

    @classmethod
    def from_file(cls, path: str | Path) -> HFTokenizer:
        try:
            from tokenizers import Tokenizer
        except ImportError as e:  # pragma: no cover - pyproject requires it
            raise ImportError(f"{path}: reading a BPE tokenizer needs the 'tokenizers' package "
                              "(pip install tokenizers)") from e
        return cls(Tokenizer.from_file(str(path)), str(path))

    def encode(self, text: str, *, bos: bool = True) -> list[int]:
        ids = self._tok.encode(text, add_special_tokens=False).ids
        return ([self.bos_id] if bos else []) + list(ids)

    def encode_batch(self, texts: list[str], *, bos: bool = True) -> list[list[int]]:
        pre = [self.bos_id] if bos else []
        return [pre + list(e.ids) for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids) -> str:
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=True)


def load_tokenizer(model_dir: str | Path) -> ByteTokenizer | HFTokenizer:
    p = Path(model_dir) / "tokenizer.json"
    if not p.exists():
        raise FileNotFoundError(f"{p} not found (every model directory carries its tokenizer)")
    d = json.loads(p.read_text())
    if d.get("type") == "bytes":
        return ByteTokenizer(int(d["bos_id"]), int(d["eos_id"]), int(d["pad_id"]), int(d["vocab_size"]))
    if isinstance(d.get("model"), dict):
        return HFTokenizer.from_file(p)
    raise ValueError(f"{p}: neither a 'tokenizers' file (no 'model' section) nor a 'bytes' tokenizer")

"""Byte-level tokenizer: ids 0..255 are bytes; BOS/EOS/PAD follow. ``tokenizer.json`` in a model
directory may name a different scheme in the future; today only ``{"type": "bytes"}`` exists."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


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


def load_tokenizer(model_dir: str | Path) -> ByteTokenizer:
    p = Path(model_dir) / "tokenizer.json"
    if not p.exists():
        return ByteTokenizer()
    d = json.loads(p.read_text())
    if d.get("type") != "bytes":
        raise ValueError(f"{p}: unsupported tokenizer type {d.get('type')!r}; this harness reads only "
                         "'bytes' tokenizers (feed pre-tokenized prompts for other models)")
    return ByteTokenizer(int(d["bos_id"]), int(d["eos_id"]), int(d["pad_id"]), int(d["vocab_size"]))

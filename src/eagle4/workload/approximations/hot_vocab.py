"""The hot vocabulary of the fused draft LM head: which ``Vh`` tokens, chosen from the training tokens'
frequencies, and the draft LM head restricted to them (see the package docstring)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[4]
TRAINING_SUMMARY = ROOT / "models" / "default" / "training_summary.json"


@dataclass(frozen=True)
class HotVocab:
    token_ids: np.ndarray  # [Vh] int64, ascending: hot index -> real token id (K1's hot_token_id)
    source: str            # where the frequencies came from
    coverage: float        # fraction of the counted tokens that fall in the hot set

    @property
    def size(self) -> int:
        return int(self.token_ids.shape[0])

    @property
    def sha256(self) -> str:
        return hashlib.sha256(np.ascontiguousarray(self.token_ids, np.int64).tobytes()).hexdigest()


def scaled_hot_vocab_size(vocab_size: int, hot_vocab_size_full: int, vocab_size_full: int) -> int:
    """The deployment ratio ``hot / full`` applied to ``vocab_size``, rounded to nearest (>= 1)."""
    if not 0 < hot_vocab_size_full <= vocab_size_full:
        raise ValueError(f"hot_vocab_size {hot_vocab_size_full} must be in (0, vocab_size {vocab_size_full}]")
    return int(min(vocab_size, max(1, round(vocab_size * hot_vocab_size_full / vocab_size_full))))


def contract_hot_vocab_size(contract, vocab_size: int) -> tuple[int, float]:
    """(scaled hot size, contract ratio) from ``[fpga.model]`` of ``contract``."""
    from eagle4.contract import fpga_section

    m = fpga_section(contract).model
    return scaled_hot_vocab_size(vocab_size, m.hot_vocab_size, m.vocab_size), m.hot_vocab_size / m.vocab_size


def training_token_counts(summary_path: str | Path = TRAINING_SUMMARY) -> np.ndarray:
    """Count of every token id in the embedded pair's training tokens (``token_counts`` of
    ``training_summary.json``; the file's sha256 is checked)."""
    s = json.loads(Path(summary_path).read_text())
    tc = s.get("token_counts")
    if not tc:
        raise ValueError(f"{summary_path}: no 'token_counts' entry (retrain with scripts/train_default_pair.py)")
    p = Path(summary_path).parent / tc["path"]
    raw = p.read_bytes()
    got = hashlib.sha256(raw).hexdigest()
    if got != tc["sha256"]:
        raise ValueError(f"{p} has sha256 {got}, {summary_path} records {tc['sha256']}")
    return np.load(p, allow_pickle=False).astype(np.int64)


def token_frequencies(token_ids, vocab_size: int) -> np.ndarray:
    ids = np.asarray(token_ids, np.int64).ravel()
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"token ids outside [0, {vocab_size})")
    return np.bincount(ids, minlength=vocab_size).astype(np.int64)


def select_hot_vocab(counts: np.ndarray, size: int, source: str = "") -> HotVocab:
    """The ``size`` most frequent tokens (count descending, token id ascending on ties), returned
    sorted by token id."""
    counts = np.asarray(counts, np.int64)
    if not 1 <= size <= counts.shape[0]:
        raise ValueError(f"hot vocabulary size {size} must be in [1, {counts.shape[0]}]")
    order = np.lexsort((np.arange(counts.shape[0]), -counts))  # primary: -count, secondary: id
    hot = np.sort(order[:size]).astype(np.int64)
    tot = counts.sum()
    return HotVocab(hot, source, float(counts[hot].sum() / tot) if tot else float("nan"))


def default_hot_vocab(contract, tokenizer, vocab_size: int, *, source: str = "training_corpus") -> HotVocab:
    """The hot set of the measurement: contract-scaled size, frequencies of the training corpus
    (``source="training_corpus"``) or of the contract's prompts (``source="prompts"``)."""
    size, _ = contract_hot_vocab_size(contract, vocab_size)
    if source == "training_corpus":
        counts = training_token_counts()
        if counts.shape[0] != vocab_size:
            raise ValueError(f"training token counts cover {counts.shape[0]} ids, the model has {vocab_size}")
        label = "training_corpus:" + str(TRAINING_SUMMARY.relative_to(ROOT))
    elif source == "prompts":
        ids = [t for p in contract.load_prompts() for t in tokenizer.encode(p["text"])]
        counts, label = token_frequencies(ids, vocab_size), "prompts"
    else:
        raise ValueError(f"unknown hot-vocabulary source {source!r} (training_corpus | prompts)")
    return select_hot_vocab(counts, size, label)


def restrict_lm_head(draft: nn.Module, hot_token_id) -> None:
    """Replace ``draft.lm_head`` by a linear map onto the hot rows only (logits ``[n, Vh]``, column
    ``i`` = token ``hot_token_id[i]``)."""
    hot = torch.as_tensor(np.asarray(hot_token_id, np.int64))
    W = draft.lm_head.weight.detach()
    head = nn.Linear(W.shape[1], hot.numel(), bias=False).to(device=W.device, dtype=W.dtype)
    with torch.no_grad():
        head.weight.copy_(W[hot.to(W.device)])
    draft.lm_head = head

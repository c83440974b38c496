"""EAGLE-style draft head: ``g = Layer(fc([embed(token); feature]))``; logits = lm_head(norm(g)).

Checkpoint names follow the public EAGLE layout (``fc.weight``, ``fc.bias``, ``layers.0.*``,
optional ``embed_tokens.weight``); ``norm.weight`` and ``lm_head.weight`` are taken from the
draft directory when present, else from the target (as EAGLE does). ``config.json`` is a Llama
config (``num_hidden_layers`` = draft layers, usually 1).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from eagle4.models.llama import (
    DecoderLayer,
    LlamaConfig,
    LlamaModel,
    RMSNorm,
    load_weights,
    read_model_dir,
)


class EagleDraft(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.config = cfg
        H = cfg.hidden_size
        self.embed_tokens = nn.Embedding(cfg.vocab_size, H)
        self.fc = nn.Linear(2 * H, H, bias=True)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(H, cfg.rms_norm_eps)
        self.lm_head = nn.Linear(H, cfg.vocab_size, bias=False)

    def logits(self, g):
        return self.lm_head(self.norm(g))

    def forward_train(self, ids, feats):
        """ids [Bt, T] (token at p+1), feats [Bt, T, H] (target feature at p) -> (g, logits)."""
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.fc(torch.cat([self.embed_tokens(ids), feats], dim=-1))
        for layer in self.layers:
            x = layer.forward_train(x, pos)
        return x, self.logits(x)


def load_draft(model_dir: str | Path, target: LlamaModel | None = None, *, dtype=torch.float32,
               device="cpu") -> EagleDraft:
    d, cfg, state = read_model_dir(model_dir, "draft model directory")
    model = EagleDraft(cfg)
    state = {k.removeprefix("model."): v for k, v in state.items()}
    if target is not None:
        shared = {"embed_tokens.weight": target.model.embed_tokens.weight,
                  "norm.weight": target.model.norm.weight, "lm_head.weight": target.lm_head.weight}
        for k, v in shared.items():
            state.setdefault(k, v.detach().to(torch.float32))
    for i, layer in enumerate(model.layers):
        # EAGLE-1 checkpoints drop the first layer's input_layernorm (the fc output feeds attention directly)
        if f"layers.{i}.input_layernorm.weight" not in state and i == 0:
            layer.input_layernorm = nn.Identity()
    return load_weights(model, state, d, "draft weights do not match the EAGLE layout", dtype=dtype, device=device)

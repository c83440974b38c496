"""A ``load = "local"`` pair (``eagle4.models.llama`` target + ``eagle4.models.eagle`` draft, as loaded
by ``load_target``/``load_draft``) behind the static-shape interface of ``eagle4.models.dummy``, so the
device engine runs a trained pair with the same code as the deployment shape: the stacked cache of
``eagle4.models.kv_cache``, K/V written at ``write_pos [B, T]``, a dense ``[B, T, S_max]`` mask.

The layers' own projections, RoPE, norms and MLPs are used; only the attention is done here, over
the dense cache: scores in the model dtype, -inf outside the mask, softmax (a padding row that sees
nothing gets zeros)."""

from __future__ import annotations

import math

import torch

from eagle4.models.eagle import load_draft
from eagle4.models.kv_cache import kv_index, new_stacked_cache
from eagle4.models.llama import load_target


def _attend(attn, x, pos, kv, write_pos, mask):
    """``kv``: the layer's contiguous ``[2, B, nkv, S, hd]``, which receives this K/V."""
    B, T, _ = x.shape
    q, k, v = attn._qkv(x, pos)  # [B, T, heads, hd]
    kv.view(-1, attn.hd).index_put_((kv_index(write_pos, attn.nkv, kv.shape[-2]),), torch.stack([k, v], 2))
    cache_k, cache_v = kv[0], kv[1]
    rep = attn.nh // attn.nkv
    qg = q.view(B, T, attn.nkv, rep, attn.hd)
    s = torch.einsum("bqgrd,bgld->bgrql", qg, cache_k) / math.sqrt(attn.hd)
    s = s.masked_fill(~mask[:, None, None, :, :], float("-inf"))
    p = torch.nan_to_num(torch.softmax(s, dim=-1), nan=0.0)
    o = torch.einsum("bgrql,bgld->bqgrd", p, cache_v).reshape(B, T, attn.nh * attn.hd)
    return attn.o_proj(o)


def _layer(layer, x, pos, kv, write_pos, mask):
    x = x + _attend(layer.self_attn, layer.input_layernorm(x), pos, kv, write_pos, mask)
    return x + layer.mlp(layer.post_attention_layernorm(x))


class _DenseCache:
    """``new_cache`` of both models: one stacked dense cache per layer (``self.a``: layers, kv_heads,
    head_dim; ``self.device``, ``self.dtype``)."""

    def new_cache(self, B: int, S_max: int):
        return new_stacked_cache(self.a.layers, B, self.a.kv_heads, S_max, self.a.head_dim, self.device, self.dtype)


class StaticTarget(_DenseCache):
    def __init__(self, model):
        c = model.config
        self.m, self.dtype = model, next(model.parameters()).dtype
        self.device = next(model.parameters()).device
        self.a = type("A", (), {"hidden": c.hidden_size, "vocab": c.vocab_size, "kv_heads": c.num_key_value_heads,
                                "head_dim": c.head_dim, "layers": c.num_hidden_layers})()

    @torch.no_grad()
    def forward(self, tokens, pos, cache, write_pos, mask, *, logits_rows=None, fused=False):
        x = self.m.model.embed_tokens(tokens)
        for i, layer in enumerate(self.m.model.layers):
            x = _layer(layer, x, pos, cache[i], write_pos, mask)
        feat = x  # the EAGLE-1 feature: the last hidden state before the final norm
        if logits_rows is not None:
            x = x.gather(1, logits_rows.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
        return feat, self.m.logits(x).reshape(-1, self.a.vocab)


class StaticDraft(_DenseCache):
    def __init__(self, model, target: StaticTarget):
        c = model.config
        self.m, self.target, self.dtype, self.device = model, target, target.dtype, target.device
        self.a = type("A", (), {"kv_heads": c.num_key_value_heads, "head_dim": c.head_dim,
                                "layers": c.num_hidden_layers})()
        self.hot_token_id = torch.arange(c.vocab_size, device=self.device, dtype=torch.int64)
        self.uses_hot_vocab = False

    @property
    def lm_head(self) -> torch.Tensor:
        """[H, V] (V: the hot vocabulary where the head was restricted): the engine reads its width."""
        return self.m.lm_head.weight.T

    @torch.no_grad()
    def forward(self, tokens, hidden, pos, cache, write_pos, mask, *, fused=False):
        x = self.m.fc(torch.cat([self.m.embed_tokens(tokens), hidden.to(self.m.fc.weight.dtype)], dim=-1))
        for i, layer in enumerate(self.m.layers):
            x = _layer(layer, x, pos, cache[i], write_pos, mask)
        logits = self.m.logits(x)
        return x, logits.reshape(-1, logits.shape[-1])


def load_static_pair(contract, device) -> tuple[StaticTarget, StaticDraft]:
    dtype = getattr(torch, contract.model.dtype)
    t = load_target(contract.resolve(contract.model.target), dtype=dtype, device=device)
    d = load_draft(contract.resolve(contract.model.draft), t, dtype=dtype, device=device)
    st = StaticTarget(t)
    return st, StaticDraft(d, st)


__all__ = ["StaticTarget", "StaticDraft", "load_static_pair"]

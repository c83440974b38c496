"""A target/draft pair of a declared architecture with weights generated on the device from a seed
(``[model] load = "dummy"``; the dummy load format of serving engines), for timing at deployment
shape without a download. Its drafts are meaningless: acceptance comes from a trace
(``eagle4.workload.accept_trace``).

* ``DummyTarget``: Llama (RMSNorm, RoPE, GQA attention, SwiGLU MLP, untied LM head); it captures the
  outputs of the draft's ``fc_layers`` and returns ``fc(concat)`` as the EAGLE3 hidden state.
* ``DummyDraft``: EAGLE3-style head: one decoder layer on ``[norm(embed(token)) ; norm(hidden)]``
  (q/k/v from 2H), residual on the hidden, LM head over the hot vocabulary, ``hot_token_id`` maps its
  rows to target ids.

Weights: :class:`eagle4.models.tensor_parallel.BlockGen` draws every weight block from its own seeded
generator, so a tensor-parallel rank generates only its shard and any TP degree holds the same model.

Static shapes only (what a CUDA graph replays): every request ``b`` owns cache rows ``[b, :, 0:S_max]``
(``req_to_token[b, p] = b*S_max + p``), a forward writes K/V at ``write_pos [B, T]`` and attends
through a dense boolean mask ``[B, T, S_max]`` (the caller builds it from K4's packed mask).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from eagle4.compiled import compiled
from eagle4.models.kv_cache import kv_index, new_stacked_cache
from eagle4.models.tensor_parallel import SINGLE, BlockGen, TensorParallel

DRAFT_LOGIT_STD = 8.0
MAX_POSITIONS = 16384  # RoPE table rows (f32 cos + sin: 16 MB at head_dim 128)


@dataclass(frozen=True)
class Arch:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    rope_theta: float = 500000.0
    eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @classmethod
    def from_contract(cls, t) -> Arch:
        return cls(t.hidden_size, t.num_layers, t.num_heads, t.num_kv_heads, t.intermediate_size, t.vocab_size,
                   t.rope_theta, t.rms_norm_eps)


def _rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def _rope(x, pos, theta):
    """x [B, T, h, d], pos [B, T] (int64): rotate-half RoPE in f32 (the reference formula; the
    forward uses :class:`RopeTable`, which computes the same f32 angles once)."""
    d = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    ang = pos.to(torch.float32).unsqueeze(-1) * inv  # [B, T, d/2]
    cos, sin = torch.cat([ang.cos(), ang.cos()], -1).unsqueeze(2), torch.cat([ang.sin(), ang.sin()], -1).unsqueeze(2)
    xf = x.float()
    x1, x2 = xf[..., : d // 2], xf[..., d // 2:]
    return (xf * cos + torch.cat([-x2, x1], -1) * sin).to(x.dtype)


class RopeTable:
    """cos and sign-folded sin of every position, precomputed once (f32, the same angles as
    :func:`_rope`): a forward gathers its rows once and every layer applies them to q and k together
    (``x*cos + roll(x, d/2)*sin_signed`` = rotate-half RoPE) instead of recomputing them per layer."""

    def __init__(self, head_dim: int, theta: float, device, n: int = MAX_POSITIONS):
        d = head_dim
        inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d))
        ang = torch.arange(n, device=device, dtype=torch.float32).unsqueeze(-1) * inv
        self.cos = torch.cat([ang.cos(), ang.cos()], -1)
        self.sin = torch.cat([-ang.sin(), ang.sin()], -1)


def _rope_rows(x, cos, sin_signed):
    xf = x.float()
    return (xf * cos + xf.roll(x.shape[-1] // 2, -1) * sin_signed).to(x.dtype)


def _group_mask(mask, grp: int):
    """[B, T, S] bool -> [B, 1, grp*T, S]: grouped like the queries (the query heads of one KV head
    along T)."""
    B, T, S = mask.shape
    return mask.unsqueeze(1).expand(B, grp, T, S).reshape(B, 1, grp * T, S)


def attn_bias(mask, grp: int, dtype):
    """The additive attention bias of a bool mask, grouped like the queries: built once per forward
    and shared by every layer (SDPA would otherwise convert the bool mask in each layer)."""
    m = _group_mask(mask, grp)
    return torch.zeros(m.shape, device=m.device, dtype=dtype).masked_fill_(~m, float("-inf"))


def _prep(pos, mask, write_pos, cos_table, sin_table, grp: int, nkv: int, dtype):
    """Per-forward attention inputs shared by every layer: the RoPE rows (cos, sign-folded sin
    ``[B, T, 1, d]``), the additive mask bias and the cache rows of the K/V write (:func:`~eagle4.models.kv_cache.kv_index`)."""
    return (cos_table[pos].unsqueeze(2), sin_table[pos].unsqueeze(2), attn_bias(mask, grp, dtype),
            kv_index(write_pos, nkv, mask.shape[-1]))


def _add_rms(x, delta, w, eps: float):
    """``x + delta`` (the residual add; ``delta`` None: none) and its RMSNorm, in one pass."""
    if delta is not None:
        x = x + delta
    return x, _rms(x, w, eps)


def _qkv_rope(h, wqkv, cos, sin, kv_flat, kv_rows, nh: int, nkv: int):
    """Fused q/k/v projection, RoPE on q and k together, K and V written into the layer cache
    ``kv_flat`` (``[2*B*nkv*S, hd]``, a view of it) at ``kv_rows`` (:func:`~eagle4.models.kv_cache.kv_index`) by one scatter;
    returns q grouped by KV head along the query axis (``[B, nkv, grp*T, hd]``: GQA without copying
    K/V). Compiled, the RoPE, the layout and the scatter are one kernel writing the cache in place."""
    B, T, _ = h.shape
    hd = wqkv.shape[1] // (nh + 2 * nkv)
    qkv = (h @ wqkv).view(B, T, nh + 2 * nkv, hd)
    qk = _rope_rows(qkv[:, :, : nh + nkv], cos, sin)
    kv_flat.index_put_((kv_rows,), torch.cat([qk[:, :, nh:], qkv[:, :, nh + nkv:]], 2).view(B, T, 2, nkv, hd))
    return qk[:, :, :nh].reshape(B, T, nkv, nh // nkv, hd).permute(0, 2, 3, 1, 4).reshape(B, nkv, nh // nkv * T, hd)


def _o_proj(o, wo, T: int):
    """Attention output [B, nkv, grp*T, hd] back to tokens, then the output projection."""
    B, nkv, GT, hd = o.shape
    grp = GT // T
    return o.view(B, nkv, grp, T, hd).permute(0, 3, 1, 2, 4).reshape(B, T, nkv * grp * hd) @ wo


def _draft_in(e, hidden, n_emb, n_hid, eps: float):
    """The EAGLE3 head's input ``[norm(embed(token)) ; norm(hidden)]``."""
    return torch.cat([_rms(e, n_emb, eps), _rms(hidden, n_hid, eps)], -1)


def _swiglu(h, wgu, wd):
    gt, up = (h @ wgu).chunk(2, -1)
    return (F.silu(gt) * up) @ wd


_PARTS = {f.__name__: f for f in (_add_rms, _qkv_rope, _o_proj, _draft_in, _swiglu, _prep)}


def part(name: str, fused: bool):
    """The layer part ``name``, eager or (``fused``) through ``torch.compile``
    (:func:`eagle4.compiled.compiled`): Inductor fuses each part's norms, RoPE, layout copies, cache
    write and activations into a few kernels around the library GEMMs; the eager form is the same
    function (the numerics reference)."""
    return compiled(_PARTS[name], fused)


class _Attention:
    """q/k/v projection from ``in_dim``, RoPE, cache write, masked attention grouped by KV head."""

    def __init__(self, g: BlockGen, a: Arch, in_dim: int, name: str, layer: int):
        self.a = a
        hd = a.head_dim
        self.nh, self.nkv = g.tp.local(a.heads, "num_heads"), g.tp.local(a.kv_heads, "num_kv_heads")  # this rank's
        self.wqkv = g.qkv(f"{name}.wqkv", layer, in_dim, a.heads, a.kv_heads, hd)
        self.wo = g.o(f"{name}.wo", layer, a.heads, a.kv_heads, hd, a.hidden)

    def __call__(self, h, attn_in, cache_kv, fused=False):
        """h: the normalized input; attn_in: :func:`_prep`'s (cos, sin_signed, bias, kv_rows) of the
        forward; cache_kv: the layer's contiguous ``[2, B, nkv, S, hd]``, which receives this K/V.
        Returns the output projection (before the residual add)."""
        cos, sin, bias, kv_rows = attn_in
        qg = part("_qkv_rope", fused)(h, self.wqkv, cos, sin, cache_kv.view(-1, cache_kv.shape[-1]), kv_rows,
                                      self.nh, self.nkv)
        o = F.scaled_dot_product_attention(qg, cache_kv[0], cache_kv[1], attn_mask=bias)
        return part("_o_proj", fused)(o, self.wo, h.shape[1])


class _Mlp:
    def __init__(self, g: BlockGen, a: Arch, name: str, layer: int):
        self.wgu = g.gate_up(f"{name}.wgu", layer, a.hidden, a.intermediate)
        self.wd = g.down(f"{name}.wd", layer, a.intermediate, a.hidden)

    def __call__(self, h, fused=False):
        return part("_swiglu", fused)(h, self.wgu, self.wd)


class DummyTarget:
    fusable = True  # forward(fused=True) runs the compiled layer parts

    def __init__(self, arch: Arch, *, fc_layers: list[int], seed: int, device, dtype, tp: TensorParallel = SINGLE):
        g = BlockGen(seed, device, dtype, tp)  # this rank's shard (eagle4.models.tensor_parallel)
        self.a, self.device, self.dtype, self.fc_layers = arch, torch.device(device), dtype, list(fc_layers)
        self.tp = tp
        self.embed = g.full("embed", arch.vocab, arch.hidden, std=1.0)
        self.layers = [(g.ones(arch.hidden), _Attention(g, arch, arch.hidden, "attn", i), g.ones(arch.hidden),
                        _Mlp(g, arch, "mlp", i)) for i in range(arch.layers)]
        self.norm = g.ones(arch.hidden)
        self.lm_head = g.full("lm_head", arch.hidden, arch.vocab)
        # EAGLE3's fc lives in the draft checkpoint
        self.fc = g.full("fc", len(self.fc_layers) * arch.hidden, arch.hidden)
        self.rope = RopeTable(arch.head_dim, arch.rope_theta, self.device)

    def prep(self, pos, mask, write_pos, nkv: int, fused=False):
        """:func:`_prep` of a forward (``nkv``: the KV heads of the cache it writes)."""
        return part("_prep", fused)(pos, mask, write_pos, self.rope.cos, self.rope.sin, self.a.heads // self.a.kv_heads,
                                    nkv, self.dtype)

    def new_cache(self, B: int, S_max: int):
        a = self.a
        return new_stacked_cache(a.layers, B, self.tp.local(a.kv_heads, "num_kv_heads"), S_max, a.head_dim,
                                 self.device, self.dtype)

    def forward(self, tokens, pos, cache, write_pos, mask, *, logits_rows=None, fused=False):
        """tokens/pos/write_pos [B, T]; mask [B, T, S_max] bool. Returns (fc hidden [B, T, H],
        logits [R, V] of ``logits_rows`` (a [B, r] index into T, default all rows) flattened).
        ``fused``: the compiled layer parts (:func:`part`)."""
        x = self.embed[tokens]
        attn_in = self.prep(pos, mask, write_pos, self.layers[0][1].nkv, fused)
        add_rms, eps = part("_add_rms", fused), self.a.eps
        caught, delta = [], None
        for i, (n1, attn, n2, mlp) in enumerate(self.layers):
            x, h = add_rms(x, delta, n1, eps)
            x, h = add_rms(x, self.tp.all_reduce(attn(h, attn_in, cache[i], fused)), n2, eps)
            delta = self.tp.all_reduce(mlp(h, fused))  # the residual add is in the next add_rms
            if i in self.fc_layers:
                caught.append(x + delta)
        x = x + delta
        hid = torch.cat(caught, -1) @ self.fc
        if logits_rows is not None:
            x = x.gather(1, logits_rows.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
        logits = add_rms(x, None, self.norm, eps)[1] @ self.lm_head
        return hid, logits.reshape(-1, self.a.vocab)


class DummyDraft:
    fusable = True

    def __init__(self, arch: Arch, target: DummyTarget, *, hot_vocab: int, seed: int, device, dtype):
        g = BlockGen(seed + 1, device, dtype)  # replicated on every rank
        H = arch.hidden
        self.a, self.device, self.dtype, self.target = arch, torch.device(device), dtype, target
        self.n_emb, self.n_hid, self.n_post = g.ones(H), g.ones(H), g.ones(H)
        self.attn = _Attention(g, arch, 2 * H, "draft.attn", 0)
        self.mlp = _Mlp(g, arch, "draft.mlp", 0)
        self.norm = g.ones(H)
        # Random weights give near-uniform drafts, whose verify tree is one level deep; a trained
        # drafter is confident along its top-1 chain. Logits of standard deviation DRAFT_LOGIT_STD give
        # the tree that depth, so the trace's accept lengths fit in it (same kernels, same shapes).
        self.lm_head = g.full("draft.lm_head", H, hot_vocab, std=DRAFT_LOGIT_STD / H ** 0.5)
        # hot rows -> target ids (sglang's hot_token_id, EAGLE3's d2t): the first hot_vocab ids
        self.hot_token_id = torch.arange(hot_vocab, device=device, dtype=torch.int64)
        self.uses_hot_vocab = True

    def new_cache(self, B: int, S_max: int):
        a = self.a
        return new_stacked_cache(1, B, a.kv_heads, S_max, a.head_dim, self.device, self.dtype)

    def forward(self, tokens, hidden, pos, cache, write_pos, mask, *, fused=False):
        """tokens [B, T] (target ids), hidden [B, T, H]; returns (hidden out [B, T, H], hot logits [B*T, Vh])."""
        add_rms, eps = part("_add_rms", fused), self.a.eps
        x = part("_draft_in", fused)(self.target.embed[tokens], hidden, self.n_emb, self.n_hid, eps)
        attn_in = self.target.prep(pos, mask, write_pos, self.attn.nkv, fused)
        h, hn = add_rms(hidden, self.attn(x, attn_in, cache[0], fused), self.n_post, eps)
        h, hn = add_rms(h, self.mlp(hn, fused), self.norm, eps)
        logits = hn @ self.lm_head
        return h, logits.reshape(-1, logits.shape[-1])


def check_inputs(target: DummyTarget, B: int = 3, T: int = 5, S: int = 48, seed: int = 0):
    """Random inputs of one cached forward for comparing it with :func:`reference_forward` (drawn on the
    CPU from ``seed``, placed on the target's device): (tokens, pos, cache, write_pos, mask), T new tokens
    per request written after a random prefix, a random mask over the prefix in which every query sees
    itself."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, target.a.vocab, (B, T), generator=g)
    L = torch.randint(4, S - T, (B,), generator=g)
    write = L.view(B, 1) + torch.arange(T).view(1, T)
    mask = torch.rand(B, T, S, generator=g) < 0.6
    mask &= torch.arange(S).view(1, 1, S) <= write.view(B, T, 1)
    mask[torch.arange(B).view(B, 1), torch.arange(T).view(1, T), write] = True
    cache = target.new_cache(B, S)
    for k, v in cache:
        k.copy_(torch.randn(k.shape, generator=g))
        v.copy_(torch.randn(v.shape, generator=g))
    dev = target.device
    return tokens.to(dev), write.clone().to(dev), cache, write.to(dev), mask.to(dev)


def reference_forward(target: DummyTarget, tokens, pos, cache, write_pos, mask):
    """The target forward by the plain formulas, in float32 on float32 copies of ``cache``: per-layer
    RoPE from the positions (:func:`_rope`), K/V repeated per query head, explicit masked softmax.
    The numerics check of :meth:`DummyTarget.forward` (tests, and the GPU self-check) compares against it."""
    a = target.a
    hd, nh, nkv = a.head_dim, a.heads, a.kv_heads
    B, T = tokens.shape
    f = torch.float32
    x = target.embed[tokens].to(f)
    bi = torch.arange(B, device=tokens.device).unsqueeze(1).expand(B, T)
    caught = []
    for i, (n1, attn, n2, mlp) in enumerate(target.layers):
        kc, vc = (c.to(f).clone() for c in cache[i])
        h = _rms(x, n1.to(f), a.eps)
        q, k, v = (h @ attn.wqkv.to(f)).split([nh * hd, nkv * hd, nkv * hd], -1)
        q, k = _rope(q.view(B, T, nh, hd), pos, a.rope_theta), _rope(k.view(B, T, nkv, hd), pos, a.rope_theta)
        kc.transpose(1, 2)[bi, write_pos] = k
        vc.transpose(1, 2)[bi, write_pos] = v.view(B, T, nkv, hd)
        kr, vr = kc.repeat_interleave(nh // nkv, 1), vc.repeat_interleave(nh // nkv, 1)  # [B, nh, S, hd]
        sc = torch.einsum("bthd,bhsd->bhts", q, kr) / hd ** 0.5
        sc = sc.masked_fill(~mask.unsqueeze(1), float("-inf"))
        o = torch.einsum("bhts,bhsd->bthd", torch.softmax(sc, -1), vr).reshape(B, T, nh * hd)
        x = x + o @ attn.wo.to(f)
        gt, up = (_rms(x, n2.to(f), a.eps) @ mlp.wgu.to(f)).chunk(2, -1)
        x = x + (F.silu(gt) * up) @ mlp.wd.to(f)
        if i in target.fc_layers:
            caught.append(x)
    hid = torch.cat(caught, -1) @ target.fc.to(f)
    return hid, (_rms(x, target.norm.to(f), a.eps) @ target.lm_head.to(f)).reshape(-1, a.vocab)


def load_dummy_pair(model_section, device, dtype=None, tp: TensorParallel = SINGLE) -> tuple[DummyTarget, DummyDraft]:
    """Both models of a ``load = "dummy"`` contract's ``[model]`` section, generated on ``device``
    (the target's ``tp`` shard; the draft replicated)."""
    dtype = dtype or getattr(torch, model_section.dtype)
    arch = Arch.from_contract(model_section.target_arch)
    d = model_section.draft_arch
    tgt = DummyTarget(arch, fc_layers=d.fc_layers, seed=model_section.seed, device=device, dtype=dtype, tp=tp)
    return tgt, DummyDraft(arch, tgt, hot_vocab=d.hot_vocab_size, seed=model_section.seed, device=device, dtype=dtype)


__all__ = ["Arch", "DummyDraft", "DummyTarget", "RopeTable", "check_inputs", "load_dummy_pair", "part",
           "reference_forward"]

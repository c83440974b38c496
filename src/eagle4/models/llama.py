"""A plain Llama decoder (RMSNorm, RoPE, SwiGLU, GQA) with a slot-addressed (paged, page size 1)
KV cache. Weight names and ``config.json`` keys follow Hugging Face's ``LlamaForCausalLM`` so a
real local checkpoint loads unchanged (single ``model.safetensors`` or a sharded index).

Attention is driven by :class:`AttnMeta`: for each request, the list of KV slots it reads and a
bool mask ``[queries, kv]``. The engine builds it from K4's ``kv_indptr/kv_indices/packed_mask``
(:func:`meta_from_tree_mask`) for draft and verify steps, and from a causal rule for prefill and
draft extend (:func:`causal_meta`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class LlamaConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int | None = None
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    head_dim: int | None = None
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    architectures: list = field(default_factory=lambda: ["LlamaForCausalLM"])
    model_type: str = "llama"

    def __post_init__(self):
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"num_attention_heads={self.num_attention_heads} must be a multiple of "
                             f"num_key_value_heads={self.num_key_value_heads}")

    @classmethod
    def from_dict(cls, d: dict) -> LlamaConfig:
        names = set(cls.__dataclass_fields__)
        missing = [k for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                               "num_attention_heads") if k not in d]
        if missing:
            raise ValueError(f"config.json lacks required key(s) {missing}")
        if d.get("rope_scaling"):
            raise ValueError("config.json: rope_scaling is not supported by this small engine")
        eos = d.get("eos_token_id")
        if isinstance(eos, list):
            d = dict(d, eos_token_id=eos[0])
        return cls(**{k: v for k, v in d.items() if k in names})

    @classmethod
    def from_json(cls, path: str | Path) -> LlamaConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_dict(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def rope_cos_sin(positions: torch.Tensor, head_dim: int, theta: float, dtype):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float64) / head_dim))
    ang = positions.to(torch.float64)[..., None] * inv
    emb = torch.cat([ang, ang], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def apply_rope(x, cos, sin):
    # x [..., n, heads, hd]; cos/sin [..., n, hd]
    h = x.shape[-1] // 2
    rot = torch.cat([-x[..., h:], x[..., :h]], dim=-1)
    return x * cos.unsqueeze(-2) + rot * sin.unsqueeze(-2)


@dataclass
class AttnMeta:
    """Dense per-request attention description.

    q_rows  [B, Qm]  rows of the flat token batch (``-1`` = padding);
    kv_slots [B, Lm] KV-cache slots read by each request (padding: slot 0, masked out);
    mask    [B, Qm, Lm] bool, True = visible.
    """

    q_rows: torch.Tensor
    kv_slots: torch.Tensor
    mask: torch.Tensor


def _pad_stack(rows: list[np.ndarray], fill, dtype) -> np.ndarray:
    m = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), max(m, 1)), fill, dtype=dtype)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


def causal_meta(prefix_slots: list[np.ndarray], new_slots: list[np.ndarray], row_offsets: list[int],
                device) -> AttnMeta:
    """Prefill / extend: request b has prefix KV ``prefix_slots[b]`` and ``len(new_slots[b])`` new
    tokens (flat rows ``row_offsets[b]...``) that see the prefix and causally each other."""
    B = len(new_slots)
    kv = [np.concatenate([np.asarray(p, np.int64), np.asarray(n, np.int64)]) for p, n in zip(prefix_slots, new_slots, strict=False)]
    kv_pad = _pad_stack(kv, 0, np.int64)
    qn = [len(n) for n in new_slots]
    q_rows = _pad_stack([np.arange(o, o + n) for o, n in zip(row_offsets, qn, strict=False)], -1, np.int64)
    Qm, Lm = q_rows.shape[1], kv_pad.shape[1]
    mask = np.zeros((B, Qm, Lm), dtype=bool)
    for b in range(B):
        L = len(prefix_slots[b])
        n = qn[b]
        cols = np.arange(Lm)
        mask[b, :n] = cols[None, :] < (L + 1 + np.arange(n))[:, None]
    t = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    return AttnMeta(t(q_rows), t(kv_pad), t(mask))


def meta_from_tree_mask(qo_indptr, kv_indptr, kv_indices, mask_indptr_bytes, packed_mask, device) -> AttnMeta:
    """Build dense metadata from K4's flashinfer-style outputs (numpy arrays): the attention the
    model runs is exactly the one K4 describes (kv slots from ``kv_indices``, visibility from the
    little-endian ``packed_mask`` segments)."""
    qo = np.asarray(qo_indptr, np.int64)
    kvp = np.asarray(kv_indptr, np.int64)
    mb = np.asarray(mask_indptr_bytes, np.int64)
    B = len(qo) - 1
    qn = np.diff(qo)
    kn = np.diff(kvp)
    Qm, Lm = max(int(qn.max(initial=0)), 1), max(int(kn.max(initial=0)), 1)
    q_rows = np.full((B, Qm), -1, np.int64)
    kv_slots = np.zeros((B, Lm), np.int64)
    mask = np.zeros((B, Qm, Lm), bool)
    kvi = np.asarray(kv_indices)
    pm = np.asarray(packed_mask, np.uint8)
    for b in range(B):
        q, L = int(qn[b]), int(kn[b])
        q_rows[b, :q] = np.arange(qo[b], qo[b + 1])
        kv_slots[b, :L] = kvi[kvp[b]: kvp[b + 1]]
        bits = np.unpackbits(pm[mb[b]: mb[b + 1]], bitorder="little")[: q * L]
        mask[b, :q, :L] = bits.reshape(q, L).astype(bool)
    t = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    return AttnMeta(t(q_rows), t(kv_slots), t(mask))


class KVCache:
    """Per-layer K/V pools indexed by slot id (page size 1)."""

    def __init__(self, n_layers: int, num_slots: int, n_kv: int, head_dim: int, dtype, device):
        self.k = torch.zeros(n_layers, num_slots, n_kv, head_dim, dtype=dtype, device=device)
        self.v = torch.zeros_like(self.k)
        self.num_slots = num_slots


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.nh, self.nkv, self.hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        H = cfg.hidden_size
        self.q_proj = nn.Linear(H, self.nh * self.hd, bias=False)
        self.k_proj = nn.Linear(H, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(H, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.nh * self.hd, H, bias=False)
        self.theta = cfg.rope_theta

    def _qkv(self, x, positions, rope=None):
        """q, k (rotated) and v; ``rope``: the (cos, sin) of ``positions`` when the caller computed
        them once for every layer (the same function: ``rope_cos_sin``)."""
        shp = x.shape[:-1]
        q = self.q_proj(x).view(*shp, self.nh, self.hd)
        k = self.k_proj(x).view(*shp, self.nkv, self.hd)
        v = self.v_proj(x).view(*shp, self.nkv, self.hd)
        cos, sin = rope if rope is not None else rope_cos_sin(positions, self.hd, self.theta, x.dtype)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v

    def forward_train(self, x, positions):
        """x [Bt, T, H], plain causal attention (training)."""
        q, k, v = self._qkv(x, positions)
        rep = self.nh // self.nkv
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(o.transpose(1, 2).reshape(*x.shape[:-1], self.nh * self.hd))

    def forward_cached(self, x, positions, write_slots, meta: AttnMeta, cache: KVCache, layer: int, rope=None):
        """x [n, H] flat tokens; K/V written at ``write_slots`` first, then attention per ``meta``."""
        q, k, v = self._qkv(x, positions, rope)
        cache.k[layer, write_slots] = k
        cache.v[layer, write_slots] = v
        B, Qm = meta.q_rows.shape
        valid = meta.q_rows >= 0
        qg = q[meta.q_rows.clamp(min=0)]                      # [B, Qm, nh, hd]
        kg = cache.k[layer][meta.kv_slots]                    # [B, Lm, nkv, hd]
        vg = cache.v[layer][meta.kv_slots]
        rep = self.nh // self.nkv
        qg = qg.view(B, Qm, self.nkv, rep, self.hd)
        s = torch.einsum("bqgrd,blgd->bgrql", qg, kg) / math.sqrt(self.hd)
        m = meta.mask[:, None, None, :, :]
        s = s.masked_fill(~m, float("-inf"))
        p = torch.softmax(s, dim=-1)
        p = torch.nan_to_num(p, nan=0.0)                      # padding query rows see nothing
        o = torch.einsum("bgrql,blgd->bqgrd", p, vg).reshape(B, Qm, self.nh * self.hd)
        out = torch.zeros(x.shape[0], self.nh * self.hd, dtype=x.dtype, device=x.device)
        out[meta.q_rows[valid]] = o[valid]
        return self.o_proj(out)


class MLP(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def forward_train(self, x, positions):
        x = x + self.self_attn.forward_train(self.input_layernorm(x), positions)
        return x + self.mlp(self.post_attention_layernorm(x))

    def forward_cached(self, x, positions, write_slots, meta, cache, layer, rope=None):
        x = x + self.self_attn.forward_cached(self.input_layernorm(x), positions, write_slots, meta, cache, layer,
                                              rope)
        return x + self.mlp(self.post_attention_layernorm(x))


class _Inner(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class LlamaModel(nn.Module):
    """``LlamaForCausalLM``-compatible parameter names (``model.*``, ``lm_head.weight``)."""

    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.config = cfg
        self.model = _Inner(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def new_cache(self, num_slots: int, device=None, dtype=None) -> KVCache:
        p = next(self.parameters())
        c = self.config
        return KVCache(c.num_hidden_layers, num_slots, c.num_key_value_heads, c.head_dim,
                       dtype or p.dtype, device or p.device)

    def logits(self, hidden):
        return self.lm_head(self.model.norm(hidden))

    def forward_train(self, ids):
        """ids [Bt, T] -> (feature before the final norm [Bt, T, H], logits [Bt, T, V])."""
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer.forward_train(x, pos)
        return x, self.logits(x)

    @torch.no_grad()
    def forward_cached(self, ids, positions, write_slots, meta: AttnMeta, cache: KVCache):
        """ids/positions/write_slots [n] -> (feature [n, H], logits [n, V])."""
        x = self.model.embed_tokens(ids)
        c = self.config
        rope = rope_cos_sin(positions, c.head_dim, c.rope_theta, x.dtype)  # once per forward, not per layer
        for i, layer in enumerate(self.model.layers):
            x = layer.forward_cached(x, positions, write_slots, meta, cache, i, rope)
        return x, self.logits(x)


_ST_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
              "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
              "BOOL": torch.bool}


def _load_safetensors_plain(path: str) -> dict[str, torch.Tensor]:
    """Minimal reader of the safetensors format (8-byte header length, JSON header, raw little-endian
    data), used only where the ``safetensors`` package is not installed."""
    import struct

    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8: 8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        buf = bytearray(raw[base + a: base + b])
        dt = _ST_DTYPES[info["dtype"]]
        t = torch.frombuffer(buf, dtype=torch.uint8) if b > a else torch.empty(0, dtype=torch.uint8)
        out[name] = t.view(dt).reshape(info["shape"]).clone()
    return out


_ST_ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8,
                "U32": 4, "U16": 2, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
_ST_MAX_HEADER = 100 << 20  # the format's own limit on the JSON header


def check_safetensors_header(path: str | Path) -> None:
    """Refuse, with one line naming the file and tensor, a safetensors header whose shapes, dtypes or data
    offsets cannot describe the file (a shape whose byte size overflows, offsets past the end), before
    any reader allocates for it. Reads the header only."""
    p = Path(path)
    size = p.stat().st_size
    with open(p, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{p}: not a safetensors file ({size} bytes, no header length)")
        n = int.from_bytes(head, "little")
        if n > min(_ST_MAX_HEADER, size - 8):
            raise ValueError(f"{p}: safetensors header length {n} exceeds the file ({size} bytes) or 100 MiB")
        try:
            header = json.loads(f.read(n))
        except (ValueError, RecursionError) as e:
            raise ValueError(f"{p}: safetensors header is not JSON ({type(e).__name__})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{p}: safetensors header is not a JSON object")
    data = size - 8 - n
    for name, info in header.items():
        if name == "__metadata__":
            continue
        where = f"{p}: tensor {name!r}"
        if not isinstance(info, dict):
            raise ValueError(f"{where}: entry is not an object")
        shape, offs, dt = info.get("shape"), info.get("data_offsets"), info.get("dtype")
        if not (isinstance(shape, list) and all(type(x) is int and x >= 0 for x in shape)):
            raise ValueError(f"{where}: shape {shape!r} is not a list of non-negative integers")
        if not (isinstance(offs, list) and len(offs) == 2 and all(type(x) is int for x in offs)
                and 0 <= offs[0] <= offs[1] <= data):
            raise ValueError(f"{where}: data_offsets {offs!r} do not lie within the {data} data bytes")
        if dt in _ST_ITEMSIZE:
            need = math.prod(shape) * _ST_ITEMSIZE[dt]
            if need != offs[1] - offs[0]:
                raise ValueError(f"{where}: shape {shape} of {dt} needs {need} bytes, data_offsets hold "
                                 f"{offs[1] - offs[0]}")


def read_safetensors_dir(model_dir: str | Path) -> dict[str, torch.Tensor]:
    try:
        from safetensors.torch import load_file
    except ImportError:  # e.g. a GPU box without pip access: the format is simple enough to read here
        load_file = _load_safetensors_plain

    d = Path(model_dir)
    idx = d / "model.safetensors.index.json"
    if idx.exists():
        files = sorted(set(json.loads(idx.read_text())["weight_map"].values()))
    else:
        files = sorted(p.name for p in d.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{d}: no *.safetensors files (expected model.safetensors or an index)")
    state: dict[str, torch.Tensor] = {}
    for f in files:
        check_safetensors_header(d / f)
        state.update(load_file(str(d / f)))
    return state


def load_target(model_dir: str | Path, *, dtype=torch.float32, device="cpu") -> LlamaModel:
    d = Path(model_dir)
    if not (d / "config.json").exists():
        raise FileNotFoundError(f"{d}/config.json not found (target model directory, HF Llama layout)")
    cfg = LlamaConfig.from_json(d / "config.json")
    model = LlamaModel(cfg)
    state = read_safetensors_dir(d)
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not (cfg.tie_word_embeddings and m == "lm_head.weight")]
    unexpected = [u for u in unexpected if "rotary_emb" not in u]
    if missing or unexpected:
        raise ValueError(f"{d}: weights do not match the Llama layout: missing {missing[:5]}, "
                         f"unexpected {unexpected[:5]}")
    return model.to(device=device, dtype=dtype).eval()

"""A plain Llama decoder (RMSNorm, RoPE, SwiGLU, GQA). Weight names and ``config.json`` keys follow
Hugging Face's ``LlamaForCausalLM`` so a real local checkpoint loads unchanged (single
``model.safetensors`` or a sharded index).

The model's own forward is ``forward_train`` (plain causal attention, used to train the embedded
pair); the engine runs the layers through ``eagle4.models.static_pair``, which reads a dense
per-request cache under K4's mask.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

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

    def _qkv(self, x, positions):
        """q, k (rotated) and v."""
        shp = x.shape[:-1]
        q = self.q_proj(x).view(*shp, self.nh, self.hd)
        k = self.k_proj(x).view(*shp, self.nkv, self.hd)
        v = self.v_proj(x).view(*shp, self.nkv, self.hd)
        cos, sin = rope_cos_sin(positions, self.hd, self.theta, x.dtype)
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

    def logits(self, hidden):
        return self.lm_head(self.model.norm(hidden))

    def forward_train(self, ids):
        """ids [Bt, T] -> (feature before the final norm [Bt, T, H], logits [Bt, T, V])."""
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer.forward_train(x, pos)
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


def read_model_dir(model_dir: str | Path, what: str) -> tuple[Path, LlamaConfig, dict[str, torch.Tensor]]:
    """A local model directory's ``config.json`` and weights; ``what`` names the directory in the
    error when ``config.json`` is missing."""
    d = Path(model_dir)
    if not (d / "config.json").exists():
        raise FileNotFoundError(f"{d}/config.json not found ({what})")
    return d, LlamaConfig.from_json(d / "config.json"), read_safetensors_dir(d)


def load_weights(model: nn.Module, state: dict[str, torch.Tensor], d: Path, what: str, *, dtype, device,
                 missing_ok: frozenset[str] = frozenset(), unexpected_ok=lambda name: False) -> nn.Module:
    """``state`` into ``model``, then cast, moved and in eval mode; a weight the model lacks or does
    not know (other than those ``missing_ok`` / ``unexpected_ok`` allow) is an error naming ``d`` and
    ``what`` ("weights do not match the Llama layout")."""
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if m not in missing_ok]
    unexpected = [u for u in unexpected if not unexpected_ok(u)]
    if missing or unexpected:
        raise ValueError(f"{d}: {what}: missing {missing[:5]}, unexpected {unexpected[:5]}")
    return model.to(device=device, dtype=dtype).eval()


def load_target(model_dir: str | Path, *, dtype=torch.float32, device="cpu") -> LlamaModel:
    d, cfg, state = read_model_dir(model_dir, "target model directory, HF Llama layout")
    model = LlamaModel(cfg)
    tied = frozenset({"lm_head.weight"}) if cfg.tie_word_embeddings else frozenset()
    for k in tied:
        state.pop(k, None)
    return load_weights(model, state, d, "weights do not match the Llama layout", dtype=dtype, device=device,
                        missing_ok=tied, unexpected_ok=lambda name: "rotary_emb" in name)

"""GPU check of the deployment model's numerics, then the attention-kernel choice by measurement.

1. numerics: the tiny dummy contract in bf16 on CUDA, ``DummyTarget.forward`` (the engine's path) against
   ``reference_forward`` (plain formulas, float32): relative error of the hidden state and the logits;
2. tree attention of one verify layer at deployment shape (Llama-3.1-8B heads, 64 tree tokens per request
   over a prefix of 1152 in a cache of S_max rows, a random tree mask): SDPA with the additive grouped bias
   (the engine), SDPA with the bool mask, and FlexAttention with a block mask (compiled), per batch.

    python3 scripts/attn_choice.py OUT.json
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from eagle4.contract import load_contract  # noqa: E402
from eagle4.models.dummy import attn_bias, load_dummy_pair, reference_forward  # noqa: E402
from eagle4.workload.tiny_contract import write_tiny_contract  # noqa: E402


def numerics() -> dict:
    with tempfile.TemporaryDirectory() as td:
        c = load_contract(write_tiny_contract(Path(td), ROOT / "contracts" / "deployment-8b.toml", "bfloat16"))
        tgt, _ = load_dummy_pair(c.model, "cuda")
        out = {}
        for seed in range(3):  # fresh inputs per check
            g = torch.Generator("cuda").manual_seed(seed)
            B, T, S = 3, 16, 64
            tokens = torch.randint(0, 512, (B, T), device="cuda", generator=g)
            write = torch.randint(4, S - T, (B, 1), device="cuda", generator=g) + torch.arange(T, device="cuda")
            cols = torch.arange(S, device="cuda").view(1, 1, S)
            mask = (torch.rand(B, T, S, device="cuda", generator=g) < 0.6) & (cols <= write.unsqueeze(-1))
            mask |= cols == write.unsqueeze(-1)
            cache = tgt.new_cache(B, S)
            for k, v in cache:
                k.normal_(generator=g)
                v.normal_(generator=g)
            rh, rl = reference_forward(tgt, tokens, write, cache, write, mask)
            h, lg = tgt.forward(tokens, write, cache, write, mask)
            out[f"seed{seed}"] = {"hidden_rel_err": float((h.float() - rh).norm() / rh.norm()),
                                  "logits_rel_err": float((lg.float() - rl).norm() / rl.norm()),
                                  "nan": bool(torch.isnan(lg).any())}
        return out


def bench(fn, n=50):
    for _ in range(5):
        fn()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    ev[0].record()
    for i in range(n):
        fn()
        ev[i + 1].record()
    torch.cuda.synchronize()
    return statistics.median(ev[i].elapsed_time(ev[i + 1]) * 1e-3 for i in range(n))


def attention(batches=(1, 8, 32)) -> list[dict]:
    from torch.nn.attention.flex_attention import flex_attention

    flex = torch.compile(flex_attention, dynamic=False)
    rows = []
    for B in batches:
        r = _attention_point(B, flex)
        rows.append(r)
        print(json.dumps(r), flush=True)
    return rows


def _attention_point(B: int, flex) -> dict:
    from torch.nn.attention.flex_attention import create_block_mask

    nh, nkv, hd, T, L, S = 32, 8, 128, 64, 1152, 1456
    grp = nh // nkv
    dt = torch.bfloat16
    q = torch.randn(B, T, nh, hd, device="cuda", dtype=dt)
    kc = torch.randn(B, nkv, S, hd, device="cuda", dtype=dt)
    vc = torch.randn(B, nkv, S, hd, device="cuda", dtype=dt)
    cols = torch.arange(S, device="cuda").view(1, 1, S)
    tree = torch.rand(B, T, T, device="cuda") < 0.3
    tree |= torch.eye(T, dtype=torch.bool, device="cuda")
    mask = cols < L
    mask = mask.expand(B, T, S).clone()
    mask[:, :, L:L + T] = tree

    bias = attn_bias(mask, grp, dt)

    def sdpa_bias():
        qg = q.view(B, T, nkv, grp, hd).permute(0, 2, 3, 1, 4).reshape(B, nkv, grp * T, hd)
        return F.scaled_dot_product_attention(qg, kc, vc, attn_mask=bias)

    def sdpa_bool():
        qg = q.view(B, T, nkv, grp, hd).permute(0, 2, 3, 1, 4).reshape(B, nkv, grp * T, hd)
        m = mask.unsqueeze(1).expand(B, grp, T, S).reshape(B, 1, grp * T, S)
        return F.scaled_dot_product_attention(qg, kc, vc, attn_mask=m)

    def mask_mod(b, h, qi, kv):
        return mask[b, qi, kv]

    bm = create_block_mask(mask_mod, B, None, T, S, device="cuda")
    qh = q.transpose(1, 2).contiguous()

    def flex_run():
        return flex(qh, kc, vc, block_mask=bm, enable_gqa=True)

    ref = sdpa_bias().view(B, nkv, grp, T, hd).permute(0, 3, 1, 2, 4).reshape(B, T, nh, hd)
    fo = flex_run().transpose(1, 2)
    err = float((fo.float() - ref.float()).norm() / ref.float().norm())
    r = {"B": B, "sdpa_bias_s": bench(sdpa_bias), "sdpa_bool_s": bench(sdpa_bool), "flex_s": bench(flex_run),
         "flex_block_mask_build_s": bench(lambda: create_block_mask(mask_mod, B, None, T, S, device="cuda"), 10),
         "flex_vs_sdpa_rel_err": err}
    r["flex_over_sdpa_bias"] = r["flex_s"] / r["sdpa_bias_s"]
    return r


def main(argv) -> int:
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    out["numerics"] = numerics()
    print(json.dumps(out["numerics"]), flush=True)
    ok = all(v["logits_rel_err"] < 3e-2 and not v["nan"] for v in out["numerics"].values())
    try:
        out["attention"] = attention()
    except Exception as e:  # the choice is then recorded as not measured, with the reason
        out["attention_error"] = f"{type(e).__name__}: {e}"
        print(out["attention_error"], flush=True)
    Path(argv[0]).write_text(json.dumps(out, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

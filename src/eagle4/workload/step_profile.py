"""WP2 on the device engine: GPU kernel time of one speculative step, by kernel and by region, from
a torch-profiler trace of CUDA-graph replays (a separate run from the timed ones).

Regions are assigned from the kernel names: our seven ops (``k1_kernel`` .. ``k7_kernel`` and their
variants such as K5's one-round ``k5s1_kernel``; the fused draft step ``step_kernel`` is K1-K3), GEMMs
(the model's projections and LM heads), attention, sort (the draft top-K), and the rest (norms,
RoPE, gathers, copies: the PyTorch glue of the step)."""

from __future__ import annotations

import re
from collections import defaultdict

REGIONS = [("K{0}", re.compile(r"\bk([1-7])[a-z0-9]*_kernel\b")),
           ("K1-K3", re.compile(r"\bstep_kernel<")),  # cuda/draft_step.cu: K1 -> K2 -> K3 in one launch
           ("gemm", re.compile(r"gemm|cutlass|nvjet|sm90_xmma|cublas|matmul", re.I)),
           ("attention", re.compile(r"fmha|attention|flash|attn", re.I)),
           ("sort_topk", re.compile(r"sort|radix|topk", re.I)),
           ("memcpy_memset", re.compile(r"memcpy|memset", re.I))]


def region_of(kernel_name: str) -> str:
    for label, rx in REGIONS:
        m = rx.search(kernel_name)
        if m:
            return label.format(*m.groups()) if m.groups() else label
    return "torch_glue"


def profile_steps(engine, steps: int = 10) -> dict:
    """Profile ``steps`` replays; returns per-kernel and per-region GPU time per step (seconds) and the
    kernels launched per step by region."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            engine.step()
        torch.cuda.synchronize()
    per_kernel: dict[str, float] = defaultdict(float)
    launches: dict[str, float] = defaultdict(float)
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA and getattr(ev, "device_time", 0) > 0:
            per_kernel[ev.name] += ev.device_time * 1e-6 / steps  # us -> s per step
            launches[region_of(ev.name)] += 1 / steps
    per_region: dict[str, float] = defaultdict(float)
    for k, v in per_kernel.items():
        per_region[region_of(k)] += v
    total = sum(per_kernel.values())
    return {"kernel_s_per_step": total, "per_kernel": dict(per_kernel), "per_region": dict(per_region),
            "launches_per_region": dict(launches)}


def top_coverage(per_region: dict, total: float, n: int) -> tuple[list[tuple[str, float]], float]:
    ranked = sorted(((k, v / total) for k, v in per_region.items()), key=lambda kv: -kv[1])
    return ranked, sum(s for _, s in ranked[:n])


def step_hbm_bytes(contract, B: int, L: int) -> dict:
    """Bytes one speculative step must read at least (weights once, the KV prefix of every request
    per forward), by component: the roofline's numerator. ``L``: mean prefix length."""
    m = contract.model
    t, dr, d = m.target_arch, m.draft_arch, contract.decode
    e = 2 if m.dtype in ("bfloat16", "float16") else 4
    H, I, hd = t.hidden_size, t.intermediate_size, t.hidden_size // t.num_heads
    layer = H * (t.num_heads + 2 * t.num_kv_heads) * hd + t.num_heads * hd * H + 3 * H * I
    target_w = (t.num_layers * layer + H * t.vocab_size) * e + len(dr.fc_layers) * H * H * e
    draft_layer = 2 * H * (t.num_heads + 2 * t.num_kv_heads) * hd + t.num_heads * hd * H + 3 * H * I
    draft_w = (draft_layer + H * dr.hot_vocab_size) * e
    kv_tok = 2 * t.num_kv_heads * hd * e
    out = {"target_weights": target_w, "target_kv": B * L * kv_tok * t.num_layers,
           "draft_weights": draft_w * d.tree_depth,  # layers 2..D and the extend: D forwards
           "draft_kv": B * L * kv_tok * d.tree_depth}
    out["total"] = sum(out.values())
    return out

"""An independent floor for the e2e bench, and the step's roofline.

The floor is a plain PyTorch step of the deployment shape, written without the engine's code: the
target forward over ``B * verify_num`` tree tokens (fused QKV, RoPE, GQA ``scaled_dot_product_attention``
over a KV cache of ``prompt_tokens + verify_num`` rows, SwiGLU, full-vocabulary LM head) plus
``tree_depth`` draft forwards (fc 3H->H, one decoder layer, hot-vocabulary LM head) over ``B * node_top_k``
tokens, bf16, captured as one CUDA graph, no tree kernels and no mask. It runs in the same process
as the timed engine, so ``step / floor`` compares two programs on one card in one state.

Tensor-parallel (``[model] tp`` > 1, one process per rank): each rank holds its shard of every
target layer (``kv_heads / tp`` KV heads with their query heads, ``intermediate / tp`` MLP columns)
and all-reduces the o and down projections' partial sums, as the engine does; the draft layer, the
embedding and both LM heads are whole on every rank. The graph captures the all-reduces.

The roofline is ``max(bytes / HBM peak, FLOPs / dense bf16 peak)`` with the card's declared
datasheet peaks (``eagle4.cards``); :func:`ceilings` measures the achieved ones (a device copy, a
large bf16 matmul) for the manifest.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from eagle4.models.tensor_parallel import SINGLE, TensorParallel, for_contract


def step_flops(contract, B: int, L: int) -> dict:
    """FLOPs of one speculative step on one rank (2 per multiply-add): the target over ``B*Vn`` tree
    tokens against ``L`` cached tokens (its layers' share of ``[model] tp``), and ``D`` draft forwards
    over ``B*K`` tokens (hot LM head; whole on every rank)."""
    m = contract.model
    t, dr, d, tp = m.target_arch, m.draft_arch, contract.decode, getattr(m, "tp", 1)
    H, I, nh, nkv = t.hidden_size, t.intermediate_size, t.num_heads, t.num_kv_heads
    hd = H // nh
    qkv = H * (nh + 2 * nkv) * hd
    layer_w = qkv + nh * hd * H + 3 * H * I
    Tt, Td = B * d.verify_num, B * d.node_top_k
    attn = 2 * 2 * nh * hd * L  # QK^T and PV per query token
    target = (2 * Tt * (t.num_layers * layer_w / tp + H * t.vocab_size + len(dr.fc_layers) * H * H)
              + Tt * t.num_layers * attn / tp)
    draft_w = 2 * qkv + nh * hd * H + 3 * H * I + H * dr.hot_vocab_size
    draft = d.tree_depth * (2 * Td * draft_w + Td * attn)
    return {"target": float(target), "draft": float(draft), "total": float(target + draft)}


def roofline(contract, B: int, L: int, card) -> dict:
    """Both bounds of one step on ``card`` (declared peaks): seconds by bytes and by FLOPs."""
    from eagle4.workload.step_profile import step_hbm_bytes

    by, fl = step_hbm_bytes(contract, B, L)["total"], step_flops(contract, B, L)["total"]
    peak = getattr(card, "bf16_dense_flops", float("nan"))
    return {"bytes": by, "flops": fl, "roofline_bytes_s": by / card.hbm_bps, "roofline_flops_s": fl / peak}


class _Layer:
    """One decoder layer; with ``tp`` its shard (``nh``, ``nkv``, ``I`` are this rank's) and the two
    all-reduces."""

    def __init__(self, in_dim, H, I, nh, nkv, hd, dev, dt, tp=SINGLE):
        def w(*s):
            return torch.randn(s, device=dev, dtype=dt) * 0.02

        self.nh, self.nkv, self.hd, self.tp = nh, nkv, hd, tp
        self.wqkv, self.wo, self.wgu, self.wd = w(in_dim, (nh + 2 * nkv) * hd), w(nh * hd, H), w(H, 2 * I), w(I, H)
        self.n1 = torch.ones(in_dim, device=dev, dtype=dt)
        self.n2 = torch.ones(H, device=dev, dtype=dt)

    def __call__(self, x, res, cos, sin, kc, vc, write):
        B, T, _ = x.shape
        nh, nkv, hd = self.nh, self.nkv, self.hd
        h = F.rms_norm(x, (x.shape[-1],), self.n1, 1e-5)
        q, k, v = (h @ self.wqkv).view(B, T, nh + 2 * nkv, hd).split([nh, nkv, nkv], 2)
        q = (q * cos + q.roll(hd // 2, -1) * sin).transpose(1, 2)
        k = (k * cos + k.roll(hd // 2, -1) * sin).transpose(1, 2)
        kc[:, :, write] = k
        vc[:, :, write] = v.transpose(1, 2)
        o = F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True)
        res = res + self.tp.all_reduce(o.transpose(1, 2).reshape(B, T, nh * hd) @ self.wo)
        g, u = (F.rms_norm(res, (res.shape[-1],), self.n2, 1e-5) @ self.wgu).chunk(2, -1)
        return res + self.tp.all_reduce((F.silu(g) * u) @ self.wd)


class FloorStep:
    """The plain step of one operating point (its own random weights and caches); ``tp``: this rank's
    shard (default: the contract's ``[model] tp``, joining the launcher's process group)."""

    def __init__(self, contract, B: int, device="cuda", tp: TensorParallel | None = None):
        m, d = contract.model, contract.decode
        t, dr = m.target_arch, m.draft_arch
        dev, dt = torch.device(device), getattr(torch, m.dtype)
        tp = for_contract(contract, dev) if tp is None else tp
        H, I, nh, nkv = t.hidden_size, t.intermediate_size, t.num_heads, t.num_kv_heads
        hd = H // nh
        self.B, self.Tt, self.Td = B, d.verify_num, d.node_top_k
        self.L = contract.prompts.prompt_tokens + d.verify_num
        sh = (tp.local(nh, "num_heads"), tp.local(nkv, "num_kv_heads"), tp.local(I, "intermediate_size"))
        self.layers = [_Layer(H, H, sh[2], sh[0], sh[1], hd, dev, dt, tp) for _ in range(t.num_layers)]
        self.draft = _Layer(2 * H, H, I, nh, nkv, hd, dev, dt)
        self.embed = torch.randn(t.vocab_size, H, device=dev, dtype=dt)
        self.lm_head = torch.randn(H, t.vocab_size, device=dev, dtype=dt) * 0.02
        self.fc = torch.randn(len(dr.fc_layers) * H, H, device=dev, dtype=dt) * 0.02
        self.hot = torch.randn(H, dr.hot_vocab_size, device=dev, dtype=dt) * 0.02
        self.fc_layers, self.depth = list(dr.fc_layers), d.tree_depth
        kv, kv_draft = (B, sh[1], self.L, hd), (B, nkv, self.L, hd)
        self.cache = [(torch.randn(s, device=dev, dtype=dt), torch.randn(s, device=dev, dtype=dt))
                      for s in [kv] * t.num_layers + [kv_draft]]
        ang = torch.arange(self.L, device=dev, dtype=torch.float32)[:, None] / (
            t.rope_theta ** (torch.arange(0, hd, 2, device=dev, dtype=torch.float32) / hd))
        self.cos = torch.cat([ang.cos(), ang.cos()], -1).to(dt)[None, -self.Tt:, None]
        self.sin = torch.cat([-ang.sin(), ang.sin()], -1).to(dt)[None, -self.Tt:, None]
        self.tok = torch.randint(0, t.vocab_size, (B, self.Tt), device=dev)
        self.write_t = torch.arange(self.L - self.Tt, self.L, device=dev)
        self.write_d = torch.arange(self.L - self.Td, self.L, device=dev)
        self.graph = None

    @torch.no_grad()
    def step(self):
        x = self.embed[self.tok]
        caught = []
        for i, lay in enumerate(self.layers):
            x = lay(x, x, self.cos, self.sin, *self.cache[i], self.write_t)
            if i in self.fc_layers:
                caught.append(x)
        hid = torch.cat(caught, -1) @ self.fc
        logits = F.rms_norm(x, (x.shape[-1],), None, 1e-5) @ self.lm_head
        h = hid[:, : self.Td]
        cos, sin = self.cos[:, : self.Td], self.sin[:, : self.Td]
        for _ in range(self.depth):
            e = self.embed[self.tok[:, : self.Td]]
            h = self.draft(torch.cat([e, h], -1), h, cos, sin, *self.cache[-1], self.write_d)
            dl = F.rms_norm(h, (h.shape[-1],), None, 1e-5) @ self.hot
        return logits, dl

    def capture(self, warmup: int = 3) -> None:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(warmup):
                self.step()
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.step()
        torch.cuda.synchronize()

    def time(self, n: int = 30) -> list[float]:
        """Seconds per replay (CUDA events), ``n`` replays after the capture."""
        if self.graph is None:
            self.capture()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        for _ in range(3):
            self.graph.replay()
        ev[0].record()
        for i in range(n):
            self.graph.replay()
            ev[i + 1].record()
        torch.cuda.synchronize()
        return [ev[i].elapsed_time(ev[i + 1]) * 1e-3 for i in range(n)]


def floor_step_s(contract, B: int, n: int = 30, tp: TensorParallel | None = None) -> float:
    """Median seconds of the plain step at batch ``B`` (captured, timed, then freed; ``tp``: as
    :class:`FloorStep`)."""
    import statistics

    f = FloorStep(contract, B, tp=tp)
    try:
        return statistics.median(f.time(n))
    finally:
        del f
        torch.cuda.empty_cache()


def ceilings(n: int = 10) -> dict:
    """Achieved ceilings of this card: a device-to-device copy (bytes read + written) and an
    8192^3 bf16 matmul on random data, each the median of ``n`` event-timed runs."""
    import statistics

    def timed(fn):
        for _ in range(3):
            fn()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
        ev[0].record()
        for i in range(n):
            fn()
            ev[i + 1].record()
        torch.cuda.synchronize()
        return statistics.median(ev[i].elapsed_time(ev[i + 1]) * 1e-3 for i in range(n))

    def copy_s():
        src = torch.randn(1 << 30, device="cuda", dtype=torch.float32)  # 4 GiB
        dst = torch.empty_like(src)
        return timed(lambda: dst.copy_(src))

    def matmul_s():
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        return timed(lambda: a @ b)

    copy_bps = 2 * (1 << 30) * 4 / copy_s()
    t_mm = matmul_s()
    torch.cuda.empty_cache()
    return {"copy_bps": copy_bps, "copy_bytes": 2 * (1 << 30) * 4, "bf16_matmul_flops": 2 * 8192 ** 3 / t_mm,
            "bf16_matmul_shape": "8192x8192x8192", "method": "median of 10 CUDA-event-timed runs after 3 warm-ups"}


__all__ = ["FloorStep", "ceilings", "floor_step_s", "roofline", "step_flops"]

"""Dev probe (not shipped): fused vs eager engine step, floor, WP2 shares, flex vs SDPA, numerics."""
import json, os, statistics, sys, time, traceback
import torch
sys.path.insert(0, "src"); sys.path.insert(0, "scripts")
from eagle4.contract import load_contract
from eagle4.workload.device_engine import DeviceEngine
from eagle4.workload.step_profile import profile_steps, top_coverage
from eagle4.workload.floor import floor_step_s
OUT = os.environ["OUT"]
res = {"points": []}
def dump():
    json.dump(res, open(f"{OUT}/probe.json", "w"), indent=1, default=str)
t00 = time.time()
# 1. numerics + eager==graphs with fused parts (tiny shape)
try:
    import gpu_selfcheck_e2e as sc
    o = {}
    ok = sc.correctness(o)
    res["correctness"] = {k: o[k] for k in ("ref_vs_cuda_equal", "eager_vs_graphs_equal")}
    from pathlib import Path; import tempfile
    from eagle4.models.dummy import load_dummy_pair, reference_forward
    from eagle4.workload.tiny_contract import write_tiny_contract
    with tempfile.TemporaryDirectory() as td:
        c = load_contract(write_tiny_contract(Path(td), Path("contracts/deployment-8b.toml"), "bfloat16"))
        tgt, _ = load_dummy_pair(c.model, "cuda")
        g = torch.Generator().manual_seed(0); B, T, S = 3, 5, 48
        tokens = torch.randint(0, c.model.target_arch.vocab_size, (B, T), generator=g).cuda()
        write = (torch.randint(4, S - T, (B,), generator=g).view(B, 1) + torch.arange(T).view(1, T)).cuda()
        mask = (torch.rand(B, T, S, generator=g) < 0.6).cuda() & (torch.arange(S, device="cuda").view(1, 1, S) <= write.view(B, T, 1))
        mask[torch.arange(B).view(B, 1), torch.arange(T).view(1, T), write] = True
        cache = tgt.new_cache(B, S); cache.normal_()
        ref = reference_forward(tgt, tokens, write, cache, write, mask)
        for fused in (False, True):
            got = tgt.forward(tokens, write, cache.clone(), write, mask, fused=fused)
            res[f"relerr_fused{fused}"] = [float((a.float() - r).norm() / r.norm()) for a, r in zip(got, ref)]
except Exception:
    res["correctness_error"] = traceback.format_exc()
print("numerics", res.get("correctness"), res.get("relerr_fusedTrue"), res.get("relerr_fusedFalse"), time.time() - t00, flush=True)
dump()
c = load_contract("contracts/deployment-8b.toml")
eng = DeviceEngine(c, "cuda", device="cuda")
print("weights", time.time() - t00, flush=True)
plan = [(1, (False, True)), (8, (True,)), (32, (False, True)), (128, (True,))]
for B, modes in plan:
    eng.setup(B)
    prompts = torch.randint(0, c.model.target_arch.vocab_size, (B, c.prompts.prompt_tokens)).cuda()
    for fused in modes:
        eng.fused = fused
        eng.prefill(prompts, torch.arange(B, device="cuda") * 257)
        t = time.time(); eng.capture(); cap = time.time() - t
        for _ in range(3): eng.step()
        eng.split_events = []
        times = []
        for _ in range(25):
            t = time.perf_counter(); eng.step(); times.append(time.perf_counter() - t)
        torch.cuda.synchronize()
        dr, vr = eng.split_times(eng.split_events); eng.split_events = None
        prof = profile_steps(eng, 4)
        ranked, _ = top_coverage(prof["per_region"], prof["kernel_s_per_step"], 3)
        p = {"B": B, "fused": fused, "capture_s": cap, "step_ms": 1e3 * statistics.median(times),
             "draft_ms": 1e3 * statistics.median(dr), "verify_ms": 1e3 * statistics.median(vr),
             "kernel_ms": 1e3 * prof["kernel_s_per_step"], "regions": ranked[:8],
             "top": sorted(prof["per_kernel"].items(), key=lambda kv: -kv[1])[:15],
             "n_kernels": len(prof["per_kernel"])}
        res["points"].append(p); dump()
        print(json.dumps({k: v for k, v in p.items() if k != "top"}), time.time() - t00, flush=True)
        eng._draft_graph = eng._verify_graph = None
    keep = eng.tcache, eng.dcache
    eng.tcache = eng.dcache = None; torch.cuda.empty_cache()
    fl = floor_step_s(c, B)
    res["points"][-1]["floor_ms"] = fl * 1e3; dump()
    print("floor", B, fl * 1e3, time.time() - t00, flush=True)
    del keep; torch.cuda.empty_cache()
    if time.time() - t00 > 430:
        print("stopping early for time"); break
# 3. flex attention vs SDPA at the verify shape
try:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    import torch.nn.functional as F
    fa = torch.compile(flex_attention)
    nh, nkv, hd, T, S = 32, 8, 128, 64, 1376
    for B in (1, 32):
        q = torch.randn(B, nh, T, hd, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(B, nkv, S, hd, device="cuda", dtype=torch.bfloat16); v = torch.randn_like(k)
        m = torch.rand(B, T, S, device="cuda") < 0.5; m[:, :, :1024] = True
        def mm(b, h, qi, kv): return m[b, qi, kv]
        qg = q.view(B, nkv, 4 * T, hd)
        bias = torch.zeros(B, 1, 4 * T, S, device="cuda", dtype=torch.bfloat16).masked_fill_(~m.repeat(1, 4, 1).unsqueeze(1), float("-inf"))
        def timeit(f, n=50):
            for _ in range(5): f()
            torch.cuda.synchronize(); t = time.perf_counter()
            for _ in range(n): f()
            torch.cuda.synchronize(); return (time.perf_counter() - t) / n * 1e3
        bm = create_block_mask(mm, B, None, T, S, device="cuda", _compile=True)
        r = {"B": B, "sdpa_bias_ms": timeit(lambda: F.scaled_dot_product_attention(qg, k, v, attn_mask=bias)),
             "flex_ms": timeit(lambda: fa(q, k, v, block_mask=bm, enable_gqa=True)),
             "flex_with_mask_ms": timeit(lambda: fa(q, k, v, block_mask=create_block_mask(mm, B, None, T, S, device="cuda", _compile=True), enable_gqa=True))}
        res.setdefault("flex", []).append(r); dump(); print(r, flush=True)
except Exception:
    res["flex_error"] = traceback.format_exc(); print(res["flex_error"][-800:])
dump()
print("total", time.time() - t00)

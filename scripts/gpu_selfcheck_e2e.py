"""GPU self-check of the device engine, then timing at deployment shape, in one process:

1. correctness (tiny dummy contract, bf16, CUDA): the ref backend eager, the cuda backend eager and
   the cuda backend replaying CUDA graphs must commit the same tokens for the same steps;
2. timing (contracts/deployment-8b.toml): per batch, prefill, capture, then timed graph replays;
3. WP2 at each batch: torch-profiler kernel time of a step by kernel and region.

    python3 scripts/gpu_selfcheck_e2e.py OUT_DIR [B ...]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from eagle4.contract import load_contract  # noqa: E402
from eagle4.perf.card import card_of  # noqa: E402
from eagle4.workload.engine import DeviceEngine  # noqa: E402
from eagle4.workload.floor import roofline  # noqa: E402
from eagle4.workload.step_profile import profile_steps, step_hbm_bytes, top_coverage  # noqa: E402
from eagle4.workload.tiny_contract import write_tiny_contract  # noqa: E402

TOP_KERNELS = 24  # per-kernel rows kept per batch in the hotspots CSV


def run_steps(eng, B, prompts, n):
    eng.setup(B)
    eng.prefill(prompts, torch.arange(B, device=eng.device) * 257)
    if eng.graphs:
        eng.capture()
    return [eng.step().clone() for _ in range(n)]


def correctness(out: dict) -> bool:
    with tempfile.TemporaryDirectory() as td:
        c = load_contract(write_tiny_contract(Path(td), ROOT / "contracts" / "deployment-8b.toml", "bfloat16"))
        B = 3
        g = torch.Generator("cpu").manual_seed(0)
        prompts = torch.randint(0, 512, (B, 32), generator=g).cuda()
        res = {}
        for name, backend, graphs in (("ref_eager", "ref", False), ("cuda_eager", "cuda", False),
                                      ("cuda_graphs", "cuda", True)):
            eng = DeviceEngine(c, backend, device="cuda", graphs=graphs)
            res[name] = torch.stack(run_steps(eng, B, prompts, 6)).numpy()
            del eng
        out["correctness"] = {k: v[:, :, :2].tolist() for k, v in res.items()}
        same_kernels = bool(np.array_equal(res["ref_eager"], res["cuda_eager"]))
        same_graphs = bool(np.array_equal(res["cuda_eager"], res["cuda_graphs"]))
        out["ref_vs_cuda_equal"], out["eager_vs_graphs_equal"] = same_kernels, same_graphs
        print("correctness: ref==cuda", same_kernels, " eager==graphs", same_graphs, flush=True)
        close = fused_forward_error(c, out)
        return same_graphs and close


def fused_forward_error(c, out: dict, tol: float = 3e-2) -> bool:
    """The compiled forward (what the timed steps run) against the plain float32 formulas, bf16."""
    from eagle4.models.dummy import check_inputs, load_dummy_pair, reference_forward

    tgt, _ = load_dummy_pair(c.model, "cuda")
    tokens, pos, cache, write, mask = check_inputs(tgt)
    ref = reference_forward(tgt, tokens, pos, cache, write, mask)
    got = tgt.forward(tokens, pos, cache.clone(), write, mask, fused=True)
    err = [float((a.float() - r).norm() / r.norm()) for a, r in zip(got, ref, strict=True)]
    out["fused_forward_rel_error"] = {"hidden": err[0], "logits": err[1], "tolerance": tol}
    print("correctness: fused forward vs float32 formulas", err, flush=True)
    return max(err) < tol


def timing(out: dict, batches, steps=20):
    c = load_contract(ROOT / "contracts" / "deployment-8b.toml")
    t0 = time.perf_counter()
    eng = DeviceEngine(c, "cuda", device="cuda")
    torch.cuda.synchronize()
    out["weights_s"] = time.perf_counter() - t0
    out["points"] = []
    for B in batches:
        g = torch.Generator("cpu").manual_seed(B)
        prompts = torch.randint(0, c.model.target_arch.vocab_size, (B, c.prompts.prompt_tokens), generator=g).cuda()
        eng.setup(B)
        torch.cuda.synchronize()
        t = time.perf_counter()
        eng.prefill(prompts, torch.arange(B, device="cuda") * 257)
        torch.cuda.synchronize()
        prefill_s = time.perf_counter() - t
        t = time.perf_counter()
        eng.capture()
        capture_s = time.perf_counter() - t
        for _ in range(3):
            eng.step()
        times, toks, trace = [], [], []
        for _ in range(steps):
            t = time.perf_counter()
            o = eng.step()
            times.append(time.perf_counter() - t)
            toks.append(int(o[:, 0].sum()))
            trace.append(float(o[:, 1].float().mean()))
        prof = profile_steps(eng, 5)
        L = c.prompts.prompt_tokens + 64
        hbm = step_hbm_bytes(c, B, L)
        rl = roofline(c, B, L, card_of(out["device"]))
        ranked, cov3 = top_coverage(prof["per_region"], prof["kernel_s_per_step"], 3)
        st = float(np.median(times))
        p = {"B": B, "prefill_s": prefill_s, "capture_s": capture_s, "step_s_median": st,
             "step_s_p99": float(np.percentile(times, 99)), "tokens_per_step": float(np.mean(toks)),
             "decode_tokens_per_s": float(np.sum(toks) / np.sum(times)),
             "committed_per_row": float(np.mean(toks)) / B, "trace_mean_plus1": float(np.mean(trace)) + 1,
             "kernel_s_per_step": prof["kernel_s_per_step"], "step_over_kernels": st / prof["kernel_s_per_step"],
             "hbm_bytes": hbm, "roofline_bytes_s": rl["roofline_bytes_s"], "roofline_flops_s": rl["roofline_flops_s"],
             "regions": ranked, "top3": cov3,
             "top_kernels": sorted(prof["per_kernel"].items(), key=lambda kv: -kv[1])[:TOP_KERNELS],
             "launches_per_region": prof["launches_per_region"],
             "mem_gb": torch.cuda.max_memory_allocated() / 1e9}
        out["points"].append(p)
        print(json.dumps({k: v for k, v in p.items() if k not in ("top_kernels", "hbm_bytes")}), flush=True)
        eng._draft_graph = eng._verify_graph = None
        torch.cuda.empty_cache()


def write_hotspots(out: dict, out_dir: Path) -> None:
    """WP2 tables: region and kernel shares of one step's GPU kernel time, per batch."""
    import csv

    c = load_contract(ROOT / "contracts" / "deployment-8b.toml")
    m, card = c.measurement, card_of(out["device"])
    with open(out_dir / "h100_e2e_hotspots.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["contract_sha256", "device", "batch", "kind", "name", "seconds_per_step", "share_of_kernel_time",
                    "step_s", "kernel_s", "provenance"])
        for p in out["points"]:
            for name, share in p["regions"]:
                w.writerow([c.sha256, out["device"], p["B"], "region", name, share * p["kernel_s_per_step"], share,
                            p["step_s_median"], p["kernel_s_per_step"], "measured (torch profiler, CUDA-graph replays)"])
            for name, sec in p["top_kernels"]:
                w.writerow([c.sha256, out["device"], p["B"], "kernel", name, sec, sec / p["kernel_s_per_step"],
                            p["step_s_median"], p["kernel_s_per_step"], "measured (torch profiler, CUDA-graph replays)"])
    L = [f"# WP2 on the deployment contract (`{c.sha256[:12]}`), {out['device']}", "",
         "Profiled in a run separate from the timed ones (torch profiler over CUDA-graph replays of one",
         "speculative step: draft + verify). Shares are of the step's GPU kernel time; the step time is the",
         f"median wall time of a replay incl. its one D2H copy. Goal at B=1: step <= {m.step_over_kernels_max}x kernel time.",
         "Roofline, both bounds (eagle4.workload.floor.roofline: a model, not ncu counters): the bytes one step",
         "must read (weights once per forward, KV prefix) / the HBM peak, and its FLOPs / the dense bf16 peak of",
         f"{card.describe()}, dense bf16 {card.bf16_dense_flops / 1e12:g} TFLOP/s "
         "(declared).", "",
         f"| batch | step (ms) | kernels (ms) | step/kernels | roofline bytes/FLOPs (ms) | top-{m.hotspot_top_n} regions | coverage | >= {m.hotspot_coverage_min:.0%} | glue kernels / step |",
         "|---|---|---|---|---|---|---|---|---|"]
    for p in out["points"]:
        top = ", ".join(f"{n} {s:.1%}" for n, s in p["regions"][:m.hotspot_top_n])
        L.append(f"| {p['B']} | {p['step_s_median'] * 1e3:.2f} | {p['kernel_s_per_step'] * 1e3:.2f} | "
                 f"{p['step_over_kernels']:.3f} | {p['roofline_bytes_s'] * 1e3:.2f} / {p['roofline_flops_s'] * 1e3:.2f} | {top} | {p['top3']:.1%} | "
                 f"{'yes' if p['top3'] >= m.hotspot_coverage_min else 'NO'} | "
                 f"{p['launches_per_region'].get('torch_glue', 0):.0f} |")
    L += ["", f"Per-kernel rows (top {TOP_KERNELS} per batch) are in h100_e2e_hotspots.csv. `torch_glue` = norms,",
          "RoPE, gathers, masks, copies and the tree glue of the step (PyTorch and Inductor kernels outside",
          "the GEMMs, attention, the top-K and the seven kernels)."]
    (out_dir / "h100_e2e_hotspots.md").write_text("\n".join(L) + "\n")


def main(argv):
    out_dir = Path(argv[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    batches = [int(x) for x in argv[1:]] or [1, 8, 32, 128]
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    ok = correctness(out)
    if ok:
        timing(out, batches)
    (out_dir / "h100_e2e_selfcheck.json").write_text(json.dumps(out, indent=1))
    if ok:
        write_hotspots(out, out_dir)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Writes the engine-result fixtures of this folder (run from the repository root:
``python3 tests/data/engine_results/make_fixtures.py``). Deterministic; re-running rewrites the same bytes.

The files have the real shapes of each format (TurboMind/LMDeploy ``benchmark_speculative.py`` JSON,
``vllm bench serve --save-result`` JSON, sglang ``bench_serving`` JSONL, run logs with a perf summary
line, stage dumps); the NUMBERS ARE INVENTED for tests and the tutorial. They are not measurements.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

HERE = Path(__file__).resolve().parent
GPU = "NVIDIA H100 80GB HBM3"
BUILD = "0.10.2+eagle3.g9d1e0c4"
COMMIT = "9d1e0c4a7b2f"


def _w(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def spec_bench(name, batch, ctx, steps, spec, tps, acc_len=None, micro=True, runs=3, ts="2026-11-20T10:00:00"):
    vals = [round(tps * f, 3) for f in (0.992, 1.004, 1.004)][:runs]
    mean = sum(vals) / len(vals)
    lat = [round(1000.0 / v, 4) for v in vals]
    mem = 61.8 + 0.9 * batch * ctx / 32768 + (1.7 if spec else 0.0)
    out = {
        "latency_ms_per_token": {"mean": sum(lat) / len(lat), "min": min(lat), "max": max(lat), "values": lat},
        "throughput_tokens_per_sec": {"mean": mean, "min": min(vals), "max": max(vals), "values": vals},
        "memory_gb": {"mean": round(mem, 3), "max": round(mem + 0.2, 3), "utilization_pct": round(100 * mem / 85.0, 2)},
        "total_runs": runs,
    }
    if spec:
        drafts = steps * batch * runs // 3
        acc = round((acc_len - 1.0) * drafts)
        out["eagle_speculation"] = {
            "num_drafts": drafts, "total_draft_tokens": drafts * spec, "total_accepted_tokens": acc,
            "mean_acceptance_rate": acc / (drafts * spec), "mean_acceptance_length": 1.0 + acc / drafts,
            "num_spec_tokens": spec, "mean_accepted_tokens_per_draft": acc / drafts,
            "mean_tokens_per_seq": 1.0 + acc / drafts, "max_tokens_per_seq": spec + 1,
            "max_acceptance_length": spec + 1, "fraction_steps_accept_ge2": round(min(0.97, (acc_len - 1.0) / 2.6), 4),
            "mean_committed_extras": acc / drafts, "enabled": True}
    out["scenario"] = {"name": name, "batch_size": batch, "context_length": ctx, "max_new_tokens": steps,
                       "use_speculation": bool(spec), "num_spec_tokens": spec, "perf_mode": True, "micro_run": micro}
    out["system"] = {"gpu_name": GPU, "gpu_memory_total_gb": 85.03, "timestamp": ts, "turbomind_build_id": BUILD}
    return json.dumps(out, indent=2) + "\n"


LOG_OK = """\
[TM][INFO] {ts} run started (pid {pid})
[TM][INFO] TurboMind build {build} (commit {commit}) on {gpu}
[TM][INFO] GEMM_TUNED loaded: 412 entries from /cache/turbomind/gemm_tuned_sm90.json
[TM][INFO] [EAGLE3] draft tags: eagle3_fc eagle3_qkv eagle3_o eagle3_mlp eagle3_lm_head
[TM][INFO] [EAGLE3] session_len={ctx} max_batch_size={batch} num_spec_tokens=3
[TM][INFO] [EAGLE3] step=1 accepted=3 committed=4
[TM][INFO] [EAGLE3] step=2 accepted=2 committed=3
[TM][INFO] [EAGLE3] disable multi-token for request 0: reason=terminal (max_new_tokens reached)
[TM][INFO] [EAGLE3][perf-summary] steps={steps} tuned_hits={hits} total={total} gemm_fallback=0 \
disabled_multitoken_terminal={batch} disabled_multitoken_other=0 kv_span_fail=0 packed_mask_fail=0 \
d2h_debug_copies=0 stream_syncs_in_decode=0
"""


def write_eagle3() -> None:
    root = HERE / "eagle3"
    micro_tps = [  # (single base, single spec3, batch4 base, batch4 spec3, acc single, acc batch4) per micro run
        (61.9, 131.2, 228.4, 262.7, 3.21, 2.46),
        (62.3, 130.1, 227.1, 261.0, 3.18, 2.44),
        (61.6, 132.4, 229.0, 263.9, 3.24, 2.47),
    ]
    for i, (sb, ss, bb, bs, acs, acb) in enumerate(micro_tps, 1):
        d = root / f"micro-{i}"
        ts = f"2026-11-2{i}T09:00:00"
        _w(d / "bench" / "meta.json", json.dumps({"commit": COMMIT}, indent=2) + "\n")
        _w(d / "bench" / "baseline_single_context32k.json", spec_bench("Baseline_Single_Context32K", 1, 32768, 512, 0, sb, ts=ts))
        _w(d / "bench" / "speculative_single_context32k_3tokens.json",
           spec_bench("Speculative_Single_Context32K_3tokens", 1, 32768, 512, 3, ss, acs, ts=ts))
        _w(d / "bench" / "baseline_batch4_context16k.json", spec_bench("Baseline_Batch4_Context16K", 4, 16384, 512, 0, bb, ts=ts))
        _w(d / "bench" / "speculative_batch4_context16k_3tokens.json",
           spec_bench("Speculative_Batch4_Context16K_3tokens", 4, 16384, 512, 3, bs, acb, ts=ts))
        for tag, ctx, batch in (("single32k", 32768, 1), ("batch4_16k", 16384, 4)):
            total = 512 * 5 * batch
            _w(d / "logs" / f"spec3_{tag}.log", LOG_OK.format(build=BUILD, commit=COMMIT, gpu=GPU, ctx=ctx, batch=batch,
                                                              steps=512, hits=total - 3 * batch, total=total, ts=ts,
                                                              pid=41000 + 10 * i + batch))
        write_dumps(d / "dumps", seed=i)
    d = root / "full"
    _w(d / "bench" / "meta.json", json.dumps({"commit": COMMIT}, indent=2) + "\n")
    ts = "2026-11-24T18:00:00"
    _w(d / "bench" / "baseline_single_context32k.json",
       spec_bench("Baseline_Single_Context32K", 1, 32768, 32768, 0, 58.7, micro=False, ts=ts))
    _w(d / "bench" / "speculative_single_context32k_3tokens.json",
       spec_bench("Speculative_Single_Context32K_3tokens", 1, 32768, 32768, 3, 120.6, 3.09, micro=False, ts=ts))
    _w(d / "bench" / "baseline_batch4_context16k.json",
       spec_bench("Baseline_Batch4_Context16K", 4, 16384, 16384, 0, 221.5, micro=False, ts=ts))
    _w(d / "bench" / "speculative_batch4_context16k_3tokens.json",
       spec_bench("Speculative_Batch4_Context16K_3tokens", 4, 16384, 16384, 3, 240.3, 2.31, micro=False, ts=ts))
    for tag, ctx, batch, steps in (("single32k", 32768, 1, 32768), ("batch4_16k", 16384, 4, 16384)):
        total = steps * 5 * batch
        _w(d / "logs" / f"spec3_{tag}.log", LOG_OK.format(build=BUILD, commit=COMMIT, gpu=GPU, ctx=ctx, batch=batch,
                                                          steps=steps, hits=total - 40 * batch, total=total, ts=ts,
                                                          pid=42000 + batch))


STAGES = (("fc_out", 256), ("attn_out", 256), ("ffn_out", 256), ("prehead_hidden", 256), ("logits", 2048))


def write_dumps(d: Path, seed: int) -> None:
    """reference.safetensors (float32) and turbomind.npz (float16, the engine's precision) for 4 tokens."""
    rng = np.random.default_rng(100 + seed)
    ref, cand = {}, {}
    for name, width in STAGES:
        a = rng.standard_normal((4, width)).astype(np.float32) * (4.0 if name == "logits" else 1.0)
        ref[name] = a
        cand[name] = (a + rng.standard_normal(a.shape).astype(np.float32) * 0.01).astype(np.float16)
    d.mkdir(parents=True, exist_ok=True)
    save_file(ref, str(d / "reference.safetensors"), metadata={"producer": "reference (fixture)"})
    np.savez(d / "turbomind.npz", **cand)


def write_vllm() -> None:
    d = HERE / "vllm"
    common = {"date": "20261120-101500", "endpoint_type": "openai", "backend": "openai", "label": None,
              "model_id": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct",
              "num_prompts": 32, "engine": "vllm", "version": "0.11.0", "device": GPU, "commit": "a1b2c3d4e5f6", "context": "16384",
              "decode_steps": "512", "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 4}

    def run(spec, tps, ttft, tpot, acc_len=None, acc_rate=None):
        r = dict(common, spec_tokens=str(spec), scenario=f"batch4-16k-spec{spec}")
        r.update({"duration": 32 * 512 / tps, "completed": 32, "failed": 0, "total_input_tokens": 32 * 16384,
                  "total_output_tokens": 32 * 512, "request_throughput": 32 / (32 * 512 / tps),
                  "request_goodput": None, "output_throughput": tps, "total_token_throughput": tps * 33.0,
                  "max_output_tokens_per_s": tps * 1.3, "max_concurrent_requests": 4})
        for lat, mean in (("ttft", ttft), ("tpot", tpot), ("itl", tpot * (acc_len or 1.0)), ("e2el", ttft + 511 * tpot)):
            r.update({f"mean_{lat}_ms": mean, f"median_{lat}_ms": mean * 0.98, f"std_{lat}_ms": mean * 0.05,
                      f"p99_{lat}_ms": mean * 1.31})
        if spec:
            drafts = 32 * 512 // 3
            r.update({"spec_decode_acceptance_rate": acc_rate, "spec_decode_acceptance_length": acc_len,
                      "spec_decode_num_drafts": drafts, "spec_decode_draft_tokens": drafts * spec,
                      "spec_decode_accepted_tokens": round(drafts * spec * acc_rate / 100.0),
                      "spec_decode_per_position_acceptance_rates": [0.81, 0.62, 0.44]})
        return json.dumps(r, indent=2) + "\n"

    _w(d / "openai-infqps-concurrency4-Llama-3.1-8B-Instruct-20261120-101500.json", run(0, 226.0, 2890.0, 16.9))
    _w(d / "openai-infqps-concurrency4-Llama-3.1-8B-Instruct-20261120-103000.json",
       run(3, 268.5, 2950.0, 14.2, acc_len=2.62, acc_rate=62.3))


def write_sglang() -> None:
    d = HERE / "sglang"

    def line(tps, acc, tag):
        r = {"tag": tag, "backend": "sglang", "dataset_name": "random", "request_rate": float("inf"),
             "max_concurrency": 1, "sharegpt_output_len": None, "random_input_len": 32768, "random_output_len": 512,
             "random_range_ratio": 1.0, "server_info": {"version": "0.5.4", "speculative_algorithm": "EAGLE3",
                                                         "speculative_num_steps": 3, "speculative_num_draft_tokens": 4},
             "duration": 8 * 512 / tps, "completed": 8, "total_input_tokens": 8 * 32768,
             "total_input_text_tokens": 8 * 32768, "total_input_vision_tokens": 0, "total_output_tokens": 8 * 512,
             "total_output_tokens_retokenized": 8 * 512 - 3, "request_throughput": tps / 512,
             "input_throughput": tps * 64, "output_throughput": tps, "total_throughput": tps * 65}
        for lat, mean in (("e2e_latency", 512 * 1000 / tps), ("ttft", 2100.0), ("tpot", 1000 / tps), ("itl", 1000 * acc / tps)):
            r.update({f"mean_{lat}_ms": mean, f"median_{lat}_ms": mean * 0.99, f"std_{lat}_ms": mean * 0.04,
                      f"p99_{lat}_ms": mean * 1.25})
        r.update({"p95_itl_ms": 1000 * acc / tps * 1.2, "concurrency": 0.99, "accept_length": acc,
                  "max_output_tokens_per_s": tps * 1.4, "max_concurrent_requests": 1})
        return json.dumps(r) + "\n"

    _w(d / "sglang_eagle3_32k.jsonl", line(139.8, 3.12, "32k-single-spec3") + line(141.2, 3.15, "32k-single-spec3"))
    _w(d / "sglang_eagle3_32k.jsonl.meta.json",
       json.dumps({"device": GPU, "commit": "0f9e8d7c6b5a", "spec_tokens": 3, "failed_requests": 0}, indent=2) + "\n")


if __name__ == "__main__":
    write_eagle3()
    write_vllm()
    write_sglang()

"""The experiment: mean acceptance length of each approximation configuration on the contract's
prompts, its impact relative to the exact draft with a paired bootstrap interval (eagle4.stats), the
losslessness check, and ``reports/acceptance_impact.csv``."""

from __future__ import annotations

import csv
import datetime as _dt
import platform
from pathlib import Path

import numpy as np
import torch

from eagle4 import stats
from eagle4.report import atomic
from eagle4.vcs import git_commit
from eagle4.workload.approximations.configs import CONFIGS, EXACT, ApproxConfig, apply_approximations
from eagle4.workload.approximations.hot_vocab import contract_hot_vocab_size, default_hot_vocab

CSV_FIELDS = ["config", "lm_head_vocab", "lm_head_dtype", "drafter_dtype", "mean_acceptance_length",
              "baseline_mean_acceptance_length", "impact", "impact_ci95_lo", "impact_ci95_hi", "n_verify_steps",
              "baseline_n_verify_steps", "output_tokens_total", "prompts", "output_tokens", "batch",
              "hot_vocab_size_used", "vocab_size", "hot_vocab_ratio_contract", "hot_source", "hot_table_sha256",
              "hot_corpus_coverage", "target_output_hot_coverage", "k1_hot_calls", "quantized_tensors",
              "quant_max_abs_err_over_scale", "greedy_equals_target", "temperatures", "seed", "backend", "device",
              "model_device", "torch", "threads", "wall_s", "commit", "contract_name", "contract_sha256",
              "provenance", "timestamp"]


class LosslessnessError(AssertionError):
    """Greedy speculative output differs from target-only greedy output."""


def _impact(base_sum, base_steps, appr_sum, appr_steps, axis=-1):
    """Relative drop of the mean acceptance length (steps-weighted, like the point estimate)."""
    mb = base_sum.sum(axis) / base_steps.sum(axis)
    return (mb - appr_sum.sum(axis) / appr_steps.sum(axis)) / mb


def _boot_impact(base_req, appr_req, n=2000, seed=0) -> tuple[float, float]:
    """95% bootstrap interval of the impact, resampling prompts (paired: same prompts both sides)."""
    samples = [[sum(x) for x in base_req], [len(x) for x in base_req],
               [sum(x) for x in appr_req], [len(x) for x in appr_req]]
    return stats.paired_bootstrap_ci(_impact, samples, n_resamples=n, seed=seed)


def measure(contract, *, configs: list[ApproxConfig] | None = None, n_prompts: int | None = None,
            output_tokens: int | None = None, hot_source: str = "training_corpus", backend: str = "ref",
            device: str = "cpu", check_lossless: bool = True, commit: str | None = None, log=print) -> list[dict]:
    """Mean acceptance length of each configuration on the contract's prompts (one static batch of
    ``n_prompts``, default all; ``output_tokens`` default the contract's), and its impact relative to
    the exact draft. Temperatures cycle over the requests as the engine does. Raises
    :class:`LosslessnessError` when a greedy request's output differs from the target-only greedy output.
    ``target_output_hot_coverage``: the share of the exact run's output tokens (the target's own: greedy
    picks, or samples its verification keeps) that lie in the hot set; 1 means the hot vocabulary could
    not change anything on this model and the gate refuses the measurement."""
    import time

    from eagle4.workload.engine import DeviceEngine

    configs = list(configs or CONFIGS)
    if configs[0] != EXACT:
        configs = [EXACT] + [c for c in configs if c != EXACT]
    prompts = contract.load_prompts()
    if n_prompts:
        prompts = prompts[:n_prompts]
    n_out = int(output_tokens or contract.prompts.output_tokens)
    temps = list(contract.decode.temperatures)
    seed = contract.runs.seeds[0]
    commit = commit or git_commit()
    _, ratio = contract_hot_vocab_size(contract, 1 << 30)

    def fresh():
        return DeviceEngine(contract, backend, device=device)

    eng0 = fresh()
    ids = eng0.encode_prompts([p["text"] for p in prompts], contract.prompts.prompt_tokens)
    V = eng0.draft_model.config.vocab_size
    hot = default_hot_vocab(contract, eng0.tokenizer, V, source=hot_source)
    greedy_req = [i for i in range(len(ids)) if temps[i % len(temps)] < 1e-6]
    target_out = (dict(zip(greedy_req, eng0.generate_target_only([ids[i] for i in greedy_req], n_out), strict=True))
                  if greedy_req and check_lossless else {})
    dev_info = eng0.backend.device_info()
    model_device = (torch.cuda.get_device_name(eng0.device) if eng0.device.type == "cuda"
                    else platform.processor() or platform.machine() or "cpu")
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")

    results = []
    for cfg in configs:
        eng = eng0 if cfg == EXACT else fresh()
        app = apply_approximations(eng, cfg, hot)
        t0 = time.perf_counter()
        res = eng.generate(ids, n_out, temps, seed=seed)
        wall = time.perf_counter() - t0
        same = "n/a"
        if target_out:
            for i, b in target_out.items():
                r = res[i]
                if r.output_ids != b:
                    j = next((k for k, (x, y) in enumerate(zip(r.output_ids, b, strict=False)) if x != y),
                             min(len(r.output_ids), len(b)))
                    raise LosslessnessError(f"{cfg.name}: prompt {i}: greedy speculative output differs from the "
                                            f"target-only greedy output at token {j}")
            same = "true" if len(target_out) == len(res) else f"true ({len(target_out)} greedy requests)"
        if cfg == EXACT:
            tgt_cov = float(np.isin([t for r in res for t in r.output_ids], hot.token_ids).mean())
        if cfg.hot_vocab and app.backend.k1_calls == 0:
            raise RuntimeError(f"{cfg.name}: K1 never ran on the hot path")
        acc = [a for r in res for a in r.accept_lengths]
        results.append({"cfg": cfg, "app": app, "per_req": [list(r.accept_lengths) for r in res],
                        "mean": float(np.mean(acc)), "steps": len(acc),
                        "tokens": sum(len(r.output_ids) for r in res), "same": same, "wall": wall})
        log(f"{cfg.name:26s} mean acceptance {results[-1]['mean']:.4f} over {len(acc)} request-steps "
            f"({wall:.1f}s)")

    base = results[0]
    rows = []
    for r in results:
        cfg, app = r["cfg"], r["app"]
        impact = (base["mean"] - r["mean"]) / base["mean"]
        lo, hi = (0.0, 0.0) if cfg == EXACT else _boot_impact(base["per_req"], r["per_req"])
        rows.append({
            "config": cfg.name, "lm_head_vocab": cfg.lm_head_vocab, "lm_head_dtype": cfg.lm_head_dtype,
            "drafter_dtype": cfg.drafter_dtype, "mean_acceptance_length": r["mean"],
            "baseline_mean_acceptance_length": base["mean"], "impact": impact, "impact_ci95_lo": lo,
            "impact_ci95_hi": hi, "n_verify_steps": r["steps"], "baseline_n_verify_steps": base["steps"],
            "output_tokens_total": r["tokens"], "prompts": len(ids), "output_tokens": n_out, "batch": len(ids),
            "hot_vocab_size_used": hot.size if cfg.hot_vocab else V, "vocab_size": V,
            "hot_vocab_ratio_contract": ratio, "hot_source": hot.source if cfg.hot_vocab else "",
            "hot_table_sha256": hot.sha256 if cfg.hot_vocab else "",
            "hot_corpus_coverage": hot.coverage if cfg.hot_vocab else "",
            "target_output_hot_coverage": tgt_cov if cfg.hot_vocab else "",
            "k1_hot_calls": app.backend.k1_calls if app.backend else 0, "quantized_tensors": len(app.quant_errs),
            "quant_max_abs_err_over_scale": max(app.quant_errs) if app.quant_errs else "",
            "greedy_equals_target": r["same"], "temperatures": ";".join(f"{t:g}" for t in temps), "seed": seed,
            "backend": eng0.backend.name, "device": dev_info.device, "model_device": model_device,
            "torch": torch.__version__, "threads": torch.get_num_threads(), "wall_s": r["wall"], "commit": commit,
            "contract_name": contract.contract.name, "contract_sha256": contract.sha256, "provenance": "measured",
            "timestamp": now})
    return rows


def write_csv(rows: list[dict], path: str | Path) -> Path:
    if not rows:
        raise RuntimeError(f"refusing to write an empty results file {path}")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with atomic.atomic_open(p, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.9g}" if isinstance(v, float) else v) for k, v in r.items()})
    return p

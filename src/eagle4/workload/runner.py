"""Run a benchmark contract on the local engine: one row per request-run, CSV first, markdown
rendered from the rows.

Every measured run of an operating point runs in its own process (``python -m
eagle4.workload.runner --child ...``), after the contract's warm-up runs in that process, so runs
are independent. ``isolate=False`` runs in-process (tests, debugging).

Outputs in ``out_dir``:
* ``e2e_raw.csv``: one row per request-run (TTFT, per-token ITL, TPOT, e2e, tokens/s, acceptance
  length, provenance, device, commit, contract hash);
* ``e2e_runs.csv``: one row per run (batch throughput, wall time, mean acceptance);
* ``e2e_profile.csv``: time per kernel / model forward / host region inside the loop, per run;
* ``acceptance_lengths.csv``: one row per request and verify step of each run's first iteration:
  ``accept_length`` = accepted draft tokens (K6's ``accept_length``, untruncated), ``tokens_committed`` =
  accept_length + 1 (read by ``eagle4.budget.trace`` as the measured acceptance distribution). Acceptance,
  here and in ``e2e_runs.csv``'s mean, is that of the runs' own seeds: the further iterations that cover the
  contract's minimum duration vary in number with the machine's speed.
* ``e2e_summary.md``: p50/p99 of TTFT and ITL, tokens/s with CoV, acceptance, top hotspots.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import platform
import sys
from pathlib import Path

import numpy as np

from eagle4 import stats
from eagle4.report import atomic
from eagle4.validity import RunRule, summarize_runs
from eagle4.vcs import git_commit  # one home for the commit on result rows (never HEAD)
from eagle4.workload.run_process import frozen_gc, pin_core, run_child
from eagle4.workload.serving_metrics import chunk_itl

RAW_FIELDS = ["contract_sha256", "contract_name", "point", "batch", "run_index", "seed", "iteration", "request_index",
              "prompt_id", "prompt_tokens", "output_tokens", "ttft_s", "itl_mean_s", "itl_p50_s", "itl_p99_s",
              "tpot_s", "e2e_s", "tokens_per_s", "acceptance_length", "verify_steps", "itl_s", "backend",
              "kernel_provenance", "provenance", "device", "model_device", "commit", "torch", "host",
              "timestamp"]
RUN_FIELDS = ["contract_sha256", "point", "batch", "run_index", "seed", "iterations", "wall_s", "output_tokens",
              "tokens_per_s", "mean_acceptance_length", "verify_steps", "backend", "provenance", "device",
              "model_device", "commit", "timestamp", "pinned_core", "gc_frozen"]
ACCEPT_FIELDS = ["contract_sha256", "point", "batch", "run_index", "request_index", "step", "accept_length",
                 "tokens_committed", "provenance"]
PROFILE_FIELDS = ["contract_sha256", "point", "batch", "run_index", "region", "kind", "seconds", "calls",
                  "share_of_step", "step_seconds", "steps"]


def _pct(x, q) -> float:
    return stats.percentile(x, q)


def make_engine(contract, backend: str, device: str):
    """The engine (eagle4.workload.engine) with ``backend``'s kernels on ``device``."""
    from eagle4.workload.engine import DeviceEngine

    return DeviceEngine(contract, backend, device=device)


def run_point_once(contract, point_name: str, run_index: int, backend: str = "ref", *, device: str = "cpu",
                   min_duration_s: float | None = None,
                   warmup: int | None = None, commit: str | None = None, engine=None) -> dict:
    """One measured run of one operating point (after ``warmup`` unmeasured runs) in this process."""
    import torch

    point = contract.operating_point(point_name)
    eng = engine or make_engine(contract, backend, device)
    prompts = contract.load_prompts()
    sel = [prompts[i % len(prompts)] for i in range(point.batch)]
    ids = eng.encode_prompts([p["text"] for p in sel], contract.prompts.prompt_tokens)
    temps = contract.decode.temperatures
    seed = contract.runs.seeds[run_index % len(contract.runs.seeds)]
    n_out = contract.prompts.output_tokens
    for w in range(contract.runs.warmup if warmup is None else warmup):
        eng.generate(ids, n_out, temps, seed=10_000 + w)
    from eagle4.workload.engine import Profile

    eng.profile = Profile(eng.profile.sync)  # measured iterations only
    # Repeat the measured generation until the contract's minimum duration is covered: one short
    # generation is at the mercy of host jitter (MLPerf pins a minimum duration for the same reason).
    iterations, measured = [], 0.0
    m = contract.measurement
    # a GPU run's host thread only launches: pin it (a CPU run keeps the cores its kernels need)
    pinned = pin_core(run_index) if m.pin_cores and eng.device.type == "cuda" else None
    with frozen_gc(m.gc_freeze):
        while True:
            res = eng.generate(ids, n_out, temps, seed=seed + 7919 * len(iterations))
            iterations.append(res)
            measured += max(r.e2e for r in res)
            if measured >= max(contract.runs.min_duration_s, min_duration_s or 0.0):
                break
    dev_info = eng.backend.device_info()
    # the kernels' backend may only emulate a device (the pyxrt test double): its rows are not measurements
    prov = "double" if getattr(eng.backend, "provenance", "") == "double" else "measured"
    model_device = torch.cuda.get_device_name(eng.device) if eng.device.type == "cuda" else platform.processor() or "cpu"
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    commit = commit or git_commit()
    rows = []
    for it, i, r in ((it, i, r) for it, res in enumerate(iterations) for i, r in enumerate(res)):
        itl = chunk_itl(r.token_times)  # one ITL per verify step (streamed chunk)
        n = len(r.output_ids)
        rows.append({
            "contract_sha256": contract.sha256, "contract_name": contract.contract.name, "point": point.name,
            "batch": point.batch, "run_index": run_index, "seed": seed, "iteration": it, "request_index": i,
            "prompt_id": sel[i].get("id", str(i)), "prompt_tokens": len(r.prompt_ids), "output_tokens": n,
            "ttft_s": r.ttft, "itl_mean_s": float(np.mean(itl)) if itl else float("nan"),
            "itl_p50_s": _pct(itl, 50), "itl_p99_s": _pct(itl, 99),
            "tpot_s": (r.e2e - r.ttft) / (n - 1) if n > 1 else float("nan"), "e2e_s": r.e2e,
            "tokens_per_s": n / r.e2e if r.e2e > 0 else float("nan"),
            "acceptance_length": r.mean_acceptance, "verify_steps": len(r.accept_lengths),
            "itl_s": ";".join(f"{x:.6g}" for x in itl), "backend": eng.backend.name,
            "kernel_provenance": getattr(eng.backend, "provenance", "?"), "provenance": prov,
            "device": dev_info.device, "model_device": model_device, "commit": commit,
            "torch": torch.__version__, "host": platform.node(), "timestamp": now,
        })
    wall = measured
    tot = sum(len(r.output_ids) for res in iterations for r in res)
    # Acceptance is taken from the run's first iteration only (the run's own seed): how many iterations the
    # minimum duration needs depends on the machine's speed, so acceptance over all of them (or over the last
    # one, whose seed moves with that count) would change from machine to machine for the same contract.
    first = iterations[0]
    acc = [a for r in first for a in r.accept_lengths]
    run = {"contract_sha256": contract.sha256, "point": point.name, "batch": point.batch, "run_index": run_index,
           "seed": seed, "iterations": len(iterations), "wall_s": wall, "output_tokens": tot, "tokens_per_s": tot / wall,
           "mean_acceptance_length": float(np.mean(acc)) if acc else float("nan"), "verify_steps": eng.profile.steps,
           "backend": eng.backend.name, "provenance": prov, "device": dev_info.device,
           "model_device": model_device, "commit": commit, "timestamp": now, "pinned_core": pinned,
           "gc_frozen": m.gc_freeze}
    prof = [{"contract_sha256": contract.sha256, "point": point.name, "batch": point.batch, "run_index": run_index,
             **r, "step_seconds": eng.profile.step_time, "steps": eng.profile.steps} for r in eng.profile.table()]
    accepts = [{"contract_sha256": contract.sha256, "point": point.name, "batch": point.batch, "run_index": run_index,
                "request_index": i, "step": k, "accept_length": a - 1, "tokens_committed": a, "provenance": prov}
               for i, r in enumerate(first) for k, a in enumerate(r.accept_lengths)]
    return {"rows": rows, "run": run, "profile": prof, "accepts": accepts}


def _write_csv(path: Path, fields: list[str], rows: list[dict]) -> None:
    atomic.write_csv(path, fields, rows)


def read_csv(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def summarize(raw: list[dict], runs: list[dict], profile: list[dict], *, cov_max: float | None = None,
              rule: RunRule | None = None) -> list[dict]:
    """Per operating point statistics (eagle4.stats) and validity (eagle4.validity, the contract's runs
    rule: ``rule``, or the schema's defaults with ``cov_max``); refuses rows of different contracts."""
    from eagle4.contract import ensure_same_contract

    sha = ensure_same_contract(raw)
    ensure_same_contract(runs, expected=sha)
    rule = rule or RunRule.from_contract({"runs": {} if cov_max is None else {"cov_max": cov_max}})
    out = []
    points = list(dict.fromkeys(r["point"] for r in runs))
    for p in points:
        rr = [r for r in raw if r["point"] == p]
        ru = [r for r in runs if r["point"] == p]
        tps = np.asarray([float(r["tokens_per_s"]) for r in ru])
        itl = [float(x) for r in rr for x in str(r["itl_s"]).split(";") if x]
        ttft = [float(r["ttft_s"]) for r in rr]
        valid = summarize_runs(ru, value="tokens_per_s", metric=f"tokens_per_s({p})", rule=rule, duration="wall_s",
                               contract_sha256=sha)
        pr = [r for r in profile if r["point"] == p]
        regions: dict[str, list[float]] = {}
        step_total = sum({(r["run_index"]): float(r["step_seconds"]) for r in pr}.values()) or 1.0
        for r in pr:
            regions.setdefault(r["region"], []).append(float(r["seconds"]))
        hot = sorted(((k, sum(v) / step_total) for k, v in regions.items()), key=lambda kv: -kv[1])
        out.append({"point": p, "batch": int(ru[0]["batch"]), "runs": len(ru),
                    "ttft_p50_s": _pct(ttft, 50), "ttft_p99_s": _pct(ttft, 99),
                    "itl_p50_s": _pct(itl, 50), "itl_p99_s": _pct(itl, 99),
                    "tokens_per_s_mean": float(tps.mean()), "tokens_per_s_median": valid.median,
                    "tokens_per_s_cov": valid.cov, "cov_ok": valid.cov_ok, "valid": valid.valid,
                    "invalid_reasons": valid.reasons,
                    "acceptance_length_mean": float(np.mean([float(r["mean_acceptance_length"]) for r in ru])),
                    "device": ru[0]["device"], "model_device": ru[0]["model_device"], "backend": ru[0]["backend"],
                    "provenance": "+".join(sorted({r.get("provenance", "measured") for r in ru})),
                    "hotspots": hot})
    return out


def render_summary(stats: list[dict], *, contract_sha: str, title: str = "End-to-end speculative decoding",
                   cov_max: float | None = None, commit: str = "") -> str:
    if cov_max is None:
        cov_max = RunRule.from_contract({}).cov_max  # the contract schema's default
    L = [f"# {title}", "", f"* contract sha256: `{contract_sha}`", f"* commit: `{commit}`",
         f"* provenance: {'+'.join(sorted({s.get('provenance', 'measured') for s in stats})) or 'measured'} "
         f"(wall clock on the device named below; 'double': kernels on the pyxrt test double, not a board); "
         f"CoV limit {cov_max:.0%}", "",
         "| point | batch | runs | TTFT p50 (ms) | TTFT p99 (ms) | ITL p50 (ms) | ITL p99 (ms) | tokens/s (mean) | CoV | acceptance length | backend | device |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in stats:
        L.append(f"| {s['point']} | {s['batch']} | {s['runs']} | {s['ttft_p50_s'] * 1e3:.2f} | {s['ttft_p99_s'] * 1e3:.2f} "
                 f"| {s['itl_p50_s'] * 1e3:.3f} | {s['itl_p99_s'] * 1e3:.3f} | {s['tokens_per_s_mean']:.1f} "
                 f"| {s['tokens_per_s_cov']:.2%}{'' if s['cov_ok'] else ' (over limit)'} "
                 f"| {s['acceptance_length_mean']:.3f} | {s['backend']} | {s['model_device']} |")
    L += ["", "Acceptance length = tokens committed per verify step per request (accepted draft tokens + 1 bonus),",
          "averaged over steps. ITL is counted per streamed chunk (one per verify step: the gap since the",
          "request's previous chunk, never divided among the chunk's tokens; eagle4.workload.serving_metrics).",
          "TPOT = (e2e - TTFT) / (tokens - 1) is in the raw CSV.", "",
          "## Time share inside the decode loop (share of verify+draft step wall time, all runs)", ""]
    for s in stats:
        L.append(f"### {s['point']}")
        L.append("")
        L.append("| region | share |")
        L.append("|---|---|")
        for k, v in s["hotspots"][:8]:
            L.append(f"| {k} | {v:.1%} |")
        L.append("")
    return "\n".join(L).rstrip() + "\n"


def run_contract(contract, backend: str = "ref", out_dir: str | Path = "reports", *, points=None, runs: int | None = None,
                 device: str = "cpu", isolate: bool = True, prefix: str = "e2e", threads: int | None = None,
                 timeout_s: float = 900, min_duration_s: float | None = None, log=print) -> dict:
    """Run the contract's operating points (or ``points``), ``runs`` measured runs each (default: the
    contract's), write the CSVs and the summary into ``out_dir``; return {"stats", "paths"}.
    ``min_duration_s`` may only lengthen each run's measured time beyond the contract's minimum."""
    from eagle4.contract import MIN_RUNS, load_contract

    if isinstance(contract, (str, Path)):
        contract = load_contract(contract)
    if contract.batch_profile.mode != "static":
        raise ValueError(f"batch_profile.mode = {contract.batch_profile.mode!r}: the local engine runs static batches "
                         "only; drive a server with `eagle4 workload http` for a phased profile")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    n_runs = runs or contract.runs.runs
    if n_runs < MIN_RUNS:
        raise ValueError(f"runs = {n_runs}: at least {MIN_RUNS} independent runs per operating point are required")
    if threads is None and device == "cpu":
        threads = 1  # one torch thread per run process: no spin-wait contention on shared CPUs
    pts = [contract.operating_point(p).name for p in points] if points else [p.name for p in contract.operating_points]
    commit = git_commit()
    raw, runrows, prof, accepts = [], [], [], []
    for p in pts:
        for i in range(n_runs):
            if isolate:
                res = _child(contract, p, i, backend, device, threads, commit, timeout_s, min_duration_s)
            else:
                if threads:
                    import torch

                    torch.set_num_threads(threads)
                res = run_point_once(contract, p, i, backend, device=device, commit=commit,
                                     min_duration_s=min_duration_s)
            raw += res["rows"]
            runrows.append(res["run"])
            prof += res["profile"]
            accepts += res.get("accepts", [])
            log(f"{p} run {i}: {res['run']['tokens_per_s']:.1f} tok/s, acceptance "
                f"{res['run']['mean_acceptance_length']:.3f}, wall {res['run']['wall_s']:.2f}s")
    paths = {"raw": out / f"{prefix}_raw.csv", "runs": out / f"{prefix}_runs.csv",
             "profile": out / f"{prefix}_profile.csv", "summary": out / f"{prefix}_summary.md",
             "accepts": out / "acceptance_lengths.csv"}
    _write_csv(paths["raw"], RAW_FIELDS, raw)
    _write_csv(paths["runs"], RUN_FIELDS, runrows)
    _write_csv(paths["profile"], PROFILE_FIELDS, prof)
    _write_csv(paths["accepts"], ACCEPT_FIELDS, accepts)
    point_stats = summarize(raw, runrows, prof, rule=RunRule.from_contract(contract))
    atomic.write_text(paths["summary"], render_summary(point_stats, contract_sha=contract.sha256,
                                                       cov_max=contract.runs.cov_max, commit=commit))
    return {"stats": point_stats, "paths": paths, "raw": raw, "runs": runrows, "profile": prof}


def _child(contract, point, run_index, backend, device, threads, commit, timeout_s, min_duration_s=None) -> dict:
    args = ["--contract", str(contract.source_path), "--point", point, "--run-index", str(run_index),
            "--backend", backend, "--device", device, "--commit", commit]
    if threads:
        args += ["--threads", str(threads)]
    if min_duration_s:
        args += ["--min-duration", str(min_duration_s)]
    return run_child("eagle4.workload.runner", args, timeout_s=timeout_s, what=f"run {point}#{run_index}")


def _child_main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--contract", required=True)
    ap.add_argument("--point", required=True)
    ap.add_argument("--run-index", type=int, required=True)
    ap.add_argument("--backend", default="ref")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--commit", default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--min-duration", type=float, default=None)
    ap.add_argument("--result", required=True)
    a = ap.parse_args(argv)
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    from eagle4.contract import load_contract

    c = load_contract(a.contract)
    res = run_point_once(c, a.point, a.run_index, a.backend, device=a.device, commit=a.commit,
                         min_duration_s=a.min_duration)
    atomic.write_text(a.result, json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(_child_main())

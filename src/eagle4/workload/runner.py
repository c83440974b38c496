"""Run a benchmark contract on the engine (``eagle4.workload.engine``); the run mode is a parameter
(default: the contract's ``batch_profile.mode``):

* ``static`` (offline): every request of a point starts at t = 0 as one static batch; a run repeats
  the measured generation until the contract's minimum duration is covered. One row per
  request-run; per-region wall time of the eager steps.
* ``concurrency`` (fixed concurrency) and ``poisson`` (arrivals at the point's ``request_rate``):
  a serving window (``run_serving_once``): graphs captured, warm-up until steady state, then waves of
  requests; every step streams one chunk per request; NVML power over the window; the independent
  floor (``eagle4.workload.floor``) measured in the same process on CUDA.

Every measured run is its own process (``python -m eagle4.workload.runner --child --mode ...``),
after its warm-up in that process, so runs are independent. ``isolate=False`` runs the static mode
in-process (tests, debugging).

Outputs in ``out_dir``, named ``<prefix>_*`` in both modes (``prefix`` default ``e2e``; the GPU bench
passes ``h100_baseline`` / ``h100_e2e``, the names of the committed records, ``eagle4.perf.records``):
* ``_raw.csv``: one row per request (static: per request-run, with TTFT, per-chunk ITL, TPOT, e2e,
  tokens/s, acceptance, provenance, device, commit, contract hash; serving: per request of the window);
* ``_runs.csv``: one row per run (process);
* ``_summary.md``: p50/p99 of TTFT and ITL, tokens/s with CoV, acceptance (and, serving: floor, roofline);
* static: ``_profile.csv`` (time per kernel / model forward / host region, per run) and
  ``acceptance_lengths.csv`` (one row per request and verify step of each run's first iteration:
  ``accept_length`` = accepted draft tokens, ``tokens_committed`` = accept_length + 1; read by
  ``eagle4.budget.trace``). Acceptance is that of the runs' own seeds: the further iterations that
  cover the minimum duration vary in number with the machine's speed;
* serving: ``_accept.csv`` (acceptance histogram and per-position acceptance per run),
  ``_points.csv`` (the summary's rows) and ``_manifest.json``.

Serving window rules: the window closes after the step that reaches ``runs.min_duration_s`` (or
``duration_s`` when the caller shortens it; the rows then say INVALID) and, like LoadGen's
``min_query_count``, not before the run has finished its share of the point's samples
(``ceil(measurement.min_samples / runs.runs)`` requests; waves run to completion until then, bounded
by ``MAX_WINDOW_FACTOR`` x the duration). Metric definitions: ``eagle4.workload.serving_metrics``.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import platform
import sys
import threading
import time
from pathlib import Path

import numpy as np

from eagle4.report import atomic
from eagle4.stats import cov_or_nan
from eagle4.validity import RunRule, summarize_runs
from eagle4.vcs import git_commit  # one home for the commit on result rows (never HEAD)
from eagle4.workload.run_process import frozen_gc, pin_core, run_child
from eagle4.workload.serving_metrics import RequestTimes, chunk_itl, pct, validity

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
            "itl_p50_s": pct(itl, 50), "itl_p99_s": pct(itl, 99),
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


def _write_csv(path: Path, rows: list[dict], fields: list[str] | None = None) -> None:
    """Rows through ``atomic.write_csv`` (floats as ``%.9g``, no empty file); ``fields`` default: the
    rows' keys in first-seen order."""
    atomic.write_csv(path, fields or list(dict.fromkeys(k for r in rows for k in r)), rows)


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
                    "ttft_p50_s": pct(ttft, 50), "ttft_p99_s": pct(ttft, 99),
                    "itl_p50_s": pct(itl, 50), "itl_p99_s": pct(itl, 99),
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


MODES = ("static", "concurrency", "poisson")


def run_contract(contract, backend: str = "ref", out_dir: str | Path = "reports", *, mode: str | None = None,
                 points=None, runs: int | None = None, device: str = "cpu", isolate: bool = True, prefix: str = "e2e",
                 threads: int | None = None, timeout_s: float = 900, min_duration_s: float | None = None,
                 duration_s: float | None = None, resume: bool = False, deadline: float | None = None,
                 log=print) -> dict:
    """Run the contract's operating points (or ``points``), ``runs`` measured runs each (default: the
    contract's), in ``mode`` (default: the contract's ``batch_profile.mode``); write the CSVs and the
    summary into ``out_dir``; return {"stats", "paths", ...}.
    static: ``min_duration_s`` may only lengthen each run's measured time beyond the contract's minimum.
    serving (concurrency, poisson): ``duration_s`` overrides the window (shorter: INVALID rows);
    ``resume`` keeps the rows already in ``out_dir`` (same contract and commit); ``deadline`` (Unix
    time) starts no process expected to end after it (``run_serving``)."""
    from eagle4.contract import MIN_RUNS, load_contract

    if isinstance(contract, (str, Path)):
        contract = load_contract(contract)
    mode = mode or contract.batch_profile.mode
    if mode not in MODES:
        raise ValueError(f"{contract.source_path}: batch_profile.mode = {mode!r}: the runner runs {'|'.join(MODES)}; "
                         "drive a server with `eagle4 workload http` for a phased profile")
    if mode != "static":
        return run_serving(contract, out_dir, mode=mode, points=points, runs=runs, duration_s=duration_s,
                           backend=backend, device=device, prefix=prefix, timeout_s=timeout_s, resume=resume,
                           deadline=deadline, log=log)
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
    _write_csv(paths["raw"], raw, RAW_FIELDS)
    _write_csv(paths["runs"], runrows, RUN_FIELDS)
    _write_csv(paths["profile"], prof, PROFILE_FIELDS)
    _write_csv(paths["accepts"], accepts, ACCEPT_FIELDS)
    point_stats = summarize(raw, runrows, prof, rule=RunRule.from_contract(contract))
    atomic.write_text(paths["summary"], render_summary(point_stats, contract_sha=contract.sha256,
                                                       cov_max=contract.runs.cov_max, commit=commit))
    return {"stats": point_stats, "paths": paths, "raw": raw, "runs": runrows, "profile": prof, "mode": "static"}


def _child(contract, point, run_index, backend, device, threads, commit, timeout_s, min_duration_s=None) -> dict:
    args = ["--mode", "static", "--contract", str(contract.source_path), "--point", point, "--run-index",
            str(run_index), "--backend", backend, "--device", device, "--commit", commit]
    if threads:
        args += ["--threads", str(threads)]
    if min_duration_s:
        args += ["--min-duration", str(min_duration_s)]
    return run_child("eagle4.workload.runner", args, timeout_s=timeout_s, what=f"run {point}#{run_index}")



# ---- serving modes (fixed concurrency, Poisson arrivals) ----------------------------------------
class PowerSampler:
    """NVML power samples (W) at ``hz`` in a thread; energy by the trapezoid rule."""

    def __init__(self, hz: float, index: int = 0):
        self.hz, self.samples, self.why = hz, [], ""
        try:
            import pynvml

            pynvml.nvmlInit()
            self._h = pynvml.nvmlDeviceGetHandleByIndex(index)
            self._nvml = pynvml
        except Exception as e:  # no NVML here: energy is reported as missing, never guessed
            self._nvml, self.why = None, f"NVML unavailable: {e}"
        self._stop = threading.Event()

    def __enter__(self):
        if self._nvml:
            self._t = threading.Thread(target=self._run, daemon=True)
            self._t.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.samples.append((time.perf_counter(), self._nvml.nvmlDeviceGetPowerUsage(self._h) / 1e3))
            self._stop.wait(1.0 / self.hz)

    def __exit__(self, *exc):
        self._stop.set()
        if self._nvml:
            self._t.join(timeout=5)

    def energy_j(self) -> float:
        if len(self.samples) < 2:
            return float("nan")
        t, p = np.asarray(self.samples).T
        return float(np.trapezoid(p, t) if hasattr(np, "trapezoid") else np.trapz(p, t))


def _arrivals(mode: str, B: int, rate: float | None, rng, horizon: float) -> list[float] | None:
    if mode != "poisson":
        return None
    out, t = [], 0.0
    while t < horizon:
        t += rng.exponential(1.0 / rate)
        out.append(t)
    return out


MAX_WINDOW_FACTOR = 10  # bound on a window that waits for its share of finished requests


def finished_share(min_samples: int, runs: int) -> int:
    """LoadGen's min_query_count per run: the finished requests each of ``runs`` runs owes the
    point so that its TTFT/TPOT percentiles have ``min_samples`` samples."""
    return -(-min_samples // runs)


def run_serving_once(contract, point_name: str, run_index: int, *, mode: str | None = None, backend="cuda",
                     device="cuda", duration_s=None, commit="unknown", core: int | None = None,
                     runs_total: int | None = None) -> dict:
    """One measured serving window of one operating point in this process (module docstring)."""
    import torch

    from eagle4.workload.engine import DeviceEngine

    m, pt = contract.measurement, contract.operating_point(point_name)
    pinned = pin_core(run_index, core) if m.pin_cores else None
    B = pt.batch
    seed = contract.runs.seeds[run_index % len(contract.runs.seeds)]
    rng = np.random.default_rng(seed)
    eng = DeviceEngine(contract, backend, device=device)
    eng.setup(B)
    V, P, O = eng.target.a.vocab, contract.prompts.prompt_tokens, contract.prompts.output_tokens
    S = eng.shape.S
    sync = (lambda: torch.cuda.synchronize()) if eng.device.type == "cuda" else (lambda: None)

    def new_prompts():
        return torch.as_tensor(rng.integers(0, V, (B, P)), device=eng.device)

    n_req = [0]

    def prefill():
        n_trace = len(eng.trace.lengths) if eng.trace is not None else 1
        cur = torch.as_tensor([(n_req[0] + b) * 257 % n_trace for b in range(B)], device=eng.device)
        eng.prefill(new_prompts(), cur)
        n_req[0] += B

    stats = {"steps": [], "hist": np.zeros(S + 1, np.int64), "pos": np.zeros(S, np.int64), "trace": 0, "real": 0}

    def run_wave(wave, t0, deadline, record):
        """Prefill the wave, then step until its requests finish or ``deadline`` passes."""
        prefill()  # padding rows (a short Poisson wave) run too; only the wave's requests count
        sync()
        tf = time.perf_counter() - t0
        for r in wave:
            r.chunks.append((tf, 1))
        rows = list(wave) + [None] * (B - len(wave))
        # every decision read off a clock is rank 0's (agree): TP ranks must run the same steps
        while eng.tp.agree(not all(r.finished for r in wave) and time.perf_counter() - t0 < deadline):
            eng.park([r is None or r.finished for r in rows])
            ts = time.perf_counter()
            out = eng.step().numpy()
            te = time.perf_counter()
            if record:
                stats["steps"].append(te - ts)
            for b, r in enumerate(wave):
                if r.finished:
                    continue
                r.chunks.append((te - t0, int(min(out[b, 0], r.target_tokens - r.n_tokens))))
                if record:
                    a = int(out[b, 0]) - 1
                    stats["hist"][a] += 1
                    stats["pos"][:a] += 1
                    stats["trace"] += int(out[b, 1])
                    stats["real"] += a
            yield te - ts

    prefill()
    if eng.graphs:
        eng.capture()
    # warm-up (whole waves) until steady state
    times, warm = [], 0
    steady = False
    while not steady and warm < 20 * max(m.warmup_steps_min, m.steady_window):  # bounded; rows say if not steady
        for dt in run_wave([RequestTimes(0.0, target_tokens=O) for _ in range(B)], time.perf_counter(), 1e9, False):
            times.append(dt)
            warm += 1
            w = times[-m.steady_window:]
            steady = eng.tp.agree(warm >= m.warmup_steps_min and len(w) >= m.steady_window
                                  and cov_or_nan(w) <= m.steady_cov)
            if steady:
                break
    want = contract.runs.min_duration_s if duration_s is None else duration_s
    # LoadGen's min_query_count: each run finishes its share of the point's TTFT/TPOT samples
    need = finished_share(m.min_samples, runs_total or contract.runs.runs) if duration_s is None else 0
    cap = MAX_WINDOW_FACTOR * max(want, 30.0)  # bounded, with room for a slow (shared CPU) machine
    reqs: list[RequestTimes] = []

    def done() -> int:
        return sum(r.finished for r in reqs)

    arrivals = _arrivals(mode or contract.batch_profile.mode, B, pt.request_rate, rng, want * 2 + 60)
    q_i = 0
    if eng.graphs:
        eng.split_events = []
    with frozen_gc(m.gc_freeze), PowerSampler(m.nvml_sample_hz) as power:
        sync()
        t0 = time.perf_counter()
        while eng.tp.agree((time.perf_counter() - t0 < want or done() < need) and time.perf_counter() - t0 < cap):
            now = time.perf_counter() - t0
            # a wave: fixed concurrency -> B requests arrive now; poisson -> the queued ones (wait for one)
            if arrivals is None:
                wave = [RequestTimes(now, target_tokens=O) for _ in range(B)]
            else:
                if arrivals[q_i] > now:
                    time.sleep(arrivals[q_i] - now)
                now = time.perf_counter() - t0
                k = 0
                while q_i + k < len(arrivals) and arrivals[q_i + k] <= now and k < B:
                    k += 1
                wave = [RequestTimes(arrivals[q_i + j], target_tokens=O) for j in range(k)]
                q_i += k
            # short of the run's share of finished requests: the wave runs to completion
            deadline = want if done() >= need else cap
            reqs += wave
            for _ in run_wave(wave, t0, deadline, True):
                pass
        sync()
        window = time.perf_counter() - t0
    steps, hist, pos_acc, trace_sum, real_sum = (stats["steps"], stats["hist"], stats["pos"], stats["trace"],
                                                 stats["real"])
    split = eng.split_times(eng.split_events) if eng.split_events else ([], [])
    eng.split_events = None
    device_name = torch.cuda.get_device_name(0) if eng.device.type == "cuda" else "cpu"
    floor_s, ceil = float("nan"), {}
    if eng.device.type == "cuda":
        # the independent floor, in this process after the window (eagle4.workload.floor)
        from eagle4.workload.floor import ceilings, floor_step_s

        for g in ("_draft_graph", "_verify_graph"):
            setattr(eng, g, None)
        eng.tcache = eng.dcache = None
        eng.target = eng.draft = None  # the floor generates its own weights (70B at tp=2: 75 GB a rank)
        torch.cuda.empty_cache()
        floor_s = floor_step_s(contract, B)
        if run_index == 0:
            ceil = ceilings()
    try:
        from eagle4.cards import card_of

        card = card_of(device_name).name
    except ValueError:
        card = device_name
    toks = sum(r.n_tokens for r in reqs if r.first is not None and r.first <= window)
    e = power.energy_j()
    n_iter = int(hist.sum())
    run = {"point": pt.name, "batch": B, "run_index": run_index, "seed": seed, "window_s": window,
           "duration_rule_s": contract.runs.min_duration_s, "min_finished_rule": need,
           "finished_requests": done(), "steps": len(steps), "requests": len(reqs),
           "output_tokens": toks, "tokens_per_s": toks / window, "step_s_median": pct(steps, 50),
           "draft_s_median": pct(split[0], 50) if split[0] else float("nan"),
           "verify_s_median": pct(split[1], 50) if split[1] else float("nan"),
           "floor_step_s": floor_s, "card": card,
           "ceil_copy_bps": ceil.get("copy_bps", float("nan")),
           "ceil_bf16_matmul_flops": ceil.get("bf16_matmul_flops", float("nan")),
           "warmup_steps": warm, "steady_state": bool(steady), "mean_acceptance_length": real_sum / max(n_iter, 1) + 1,
           "trace_mean_acceptance_length": trace_sum / max(n_iter, 1) + 1,
           "energy_j": e, "joules_per_token": e / toks if toks else float("nan"),
           "power_samples": len(power.samples), "nvml_hz": m.nvml_sample_hz, "nvml_note": power.why,
           "pinned_core": pinned, "gc_frozen": m.gc_freeze, "graphs": eng.graphs, "fused": eng.fused,
           "backend": eng.backend.name,
           "device": device_name,
           "commit": commit, "contract_sha256": contract.sha256, "provenance": "measured",
           "acceptance": eng.trace.row_note if eng.trace is not None else "acceptance: the models' own (random prompts)",
           "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    rows = [{"point": pt.name, "batch": B, "run_index": run_index, "request": i, "arrival_s": r.arrival,
             "ttft_s": r.ttft, "tpot_s": r.tpot, "finished": r.finished, "output_tokens": r.n_tokens,
             "itl_s": ";".join(f"{x:.6g}" for x in r.itl())} for i, r in enumerate(reqs)]
    accept = {"point": pt.name, "run_index": run_index, "iterations": n_iter,
              "histogram": hist.tolist(), "per_position": (pos_acc / max(n_iter, 1)).tolist()}
    return {"run": run, "requests": rows, "accept": accept}


def write_serving_files(out: Path, prefix: str, contract, commit: str, runs: list[dict], reqs: list[dict],
                        accepts: list[dict]) -> list[dict]:
    """The serving bench's ``<prefix>_runs/raw/accept/points.csv`` and ``_summary.md`` from the rows so
    far (the bench writes them after every run: an interrupted bench keeps what it measured, --resume
    continues it). Returns the summary rows."""
    sha = contract.sha256
    _write_csv(out / f"{prefix}_runs.csv", [{"contract_sha256": sha, **r} for r in runs])
    _write_csv(out / f"{prefix}_raw.csv", [{"contract_sha256": sha, "commit": commit, **r} for r in reqs])
    _write_csv(out / f"{prefix}_accept.csv", [{"contract_sha256": sha, **r} for r in accepts])
    stats = summarize_serving(contract, runs, reqs)
    _write_csv(out / f"{prefix}_points.csv", stats)
    atomic.write_text(out / f"{prefix}_summary.md", render_serving(contract, stats))
    return stats


def _finite_mean(v) -> float:
    v = [x for x in v if np.isfinite(x)]
    return float(np.mean(v)) if v else float("nan")


def _med(rows: list[dict], key: str) -> float:
    v = [float(r[key]) for r in rows if r.get(key) not in (None, "")]
    v = [x for x in v if np.isfinite(x)]
    return float(np.median(v)) if v else float("nan")


def _roofline(contract, B: int, card_name: str) -> dict:
    """Both roofline bounds of one step at the mean decode prefix (prompt + half the output) on the
    card that ran (declared peaks); NaN where the card is not in the table."""
    from eagle4.cards import UnknownCard, card_named
    from eagle4.workload.floor import roofline

    try:
        card = card_named(card_name)
    except UnknownCard:
        return {"roofline_bytes_s": float("nan"), "roofline_flops_s": float("nan")}
    return roofline(contract, B, contract.prompts.prompt_tokens + contract.prompts.output_tokens // 2, card)


def summarize_serving(contract, runs: list[dict], reqs: list[dict]) -> list[dict]:
    out = []
    for p in dict.fromkeys(r["point"] for r in runs):
        ru = [r for r in runs if r["point"] == p]
        rq = [r for r in reqs if r["point"] == p]
        ttft = [float(r["ttft_s"]) for r in rq if r["ttft_s"] not in (None, "")]
        tpot = [float(r["tpot_s"]) for r in rq if r["tpot_s"] not in (None, "")]
        itl = [float(x) for r in rq for x in str(r["itl_s"]).split(";") if x]
        tps = [float(r["tokens_per_s"]) for r in ru]
        status, why, c = validity(ru, n_samples={"TTFT": len(ttft), "ITL": len(itl), "TPOT": len(tpot)},
                                  contract=contract)
        step_med = float(np.median([float(r["step_s_median"]) for r in ru]))
        floor = _med(ru, "floor_step_s")
        roof = _roofline(contract, int(ru[0]["batch"]), ru[0].get("card", ""))
        g = None
        if contract.slo is not None:  # goodput_rows: the same rule as serving_metrics.goodput, on CSV rows
            win = sum(float(r["window_s"]) for r in ru)
            ok = [r for r in rq if r["finished"] in (True, "True") and r["tpot_s"] not in (None, "")
                  and float(r["ttft_s"]) * 1e3 <= contract.slo.ttft_ms and float(r["tpot_s"]) * 1e3 <= contract.slo.tpot_ms]
            g = (len(ok) / win, sum(int(r["output_tokens"]) for r in ok) / win)
        out.append({"point": p, "batch": int(ru[0]["batch"]), "runs": len(ru),
                    "window_s_min": min(float(r["window_s"]) for r in ru),
                    "ttft_p50_s": pct(ttft, 50), "ttft_p99_s": pct(ttft, 99), "ttft_n": len(ttft),
                    "itl_p50_s": pct(itl, 50), "itl_p99_s": pct(itl, 99), "itl_n": len(itl),
                    "tpot_p50_s": pct(tpot, 50), "tpot_p99_s": pct(tpot, 99), "tpot_n": len(tpot),
                    "tokens_per_s_mean": float(np.mean(tps)),
                    "tokens_per_s_cov": c,
                    "goodput_req_per_s": g[0] if g else float("nan"), "goodput_tok_per_s": g[1] if g else float("nan"),
                    "joules_per_token": _finite_mean([float(r["joules_per_token"]) for r in ru]),
                    "acceptance_length": float(np.mean([float(r["mean_acceptance_length"]) for r in ru])),
                    "trace_acceptance_length": float(np.mean([float(r["trace_mean_acceptance_length"]) for r in ru])),
                    "step_s_median": step_med,
                    "draft_s_median": _med(ru, "draft_s_median"), "verify_s_median": _med(ru, "verify_s_median"),
                    "floor_step_s": floor, "step_over_floor": step_med / floor,
                    "roofline_bytes_s": roof["roofline_bytes_s"], "roofline_flops_s": roof["roofline_flops_s"],
                    "status": status, "why": "; ".join(why), "device": ru[0]["device"],
                    "commit": ru[0]["commit"], "contract_sha256": ru[0]["contract_sha256"],
                    "card": ru[0].get("card", ""), "provenance": ru[0].get("provenance", "measured"),
                    "graphs": ru[0].get("graphs", ""), "fused": ru[0].get("fused", ""),
                    "note": ru[0]["acceptance"]})
    return out


def render_serving(contract, stats: list[dict]) -> str:
    L = [f"# End-to-end serving baseline: contract `{contract.contract.name}`", "",
         f"* contract sha256 `{contract.sha256}`; commit `{stats[0]['commit']}`; device {stats[0]['device']}",
         f"* {stats[0]['note']}",
         f"* rules: >= {contract.runs.runs} processes, >= {contract.runs.min_duration_s:g} s measured each, "
         f">= {contract.measurement.min_samples} samples per p50/p99, CoV(tokens/s) <= {contract.runs.cov_max:.0%}; "
         "a point missing any is INVALID (reasons listed)", "",
         "* floor: a plain PyTorch step of the same shapes in the same process (eagle4.workload.floor); roofline = "
         "max(bytes / HBM peak, FLOPs / dense bf16 peak) of the card that ran (declared peaks, eagle4.cards)",
         f"* engine: CUDA graphs {stats[0].get('graphs', '')}; step code through torch.compile (layer parts and glue) "
         f"{stats[0].get('fused', '')}; attention: PyTorch SDPA with K4's mask as an additive bias over each "
         "request's cache in place", "",
         "| point | runs | TTFT p50/p99 (ms) | ITL p50/p99 (ms) | TPOT p50/p99 (ms) | tokens/s | CoV | goodput (req/s) | J/token | acceptance (trace) | step = draft + verify (ms) | floor (ms) | step/floor | roofline bytes/FLOPs (ms) | status |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in stats:
        L.append(f"| {s['point']} | {s['runs']} | {s['ttft_p50_s'] * 1e3:.1f}/{s['ttft_p99_s'] * 1e3:.1f} (n={s['ttft_n']}) "
                 f"| {s['itl_p50_s'] * 1e3:.2f}/{s['itl_p99_s'] * 1e3:.2f} (n={s['itl_n']}) "
                 f"| {s['tpot_p50_s'] * 1e3:.2f}/{s['tpot_p99_s'] * 1e3:.2f} (n={s['tpot_n']}) "
                 f"| {s['tokens_per_s_mean']:.1f} | {s['tokens_per_s_cov']:.2%} | {s['goodput_req_per_s']:.3f} "
                 f"| {s['joules_per_token']:.3f} | {s['acceptance_length']:.2f} ({s['trace_acceptance_length']:.2f}) "
                 f"| {s['step_s_median'] * 1e3:.2f} = {s['draft_s_median'] * 1e3:.2f} + {s['verify_s_median'] * 1e3:.2f} "
                 f"| {s['floor_step_s'] * 1e3:.2f} | {s['step_over_floor']:.3f} "
                 f"| {s['roofline_bytes_s'] * 1e3:.2f} / {s['roofline_flops_s'] * 1e3:.2f} "
                 f"| {s['status']}{': ' + s['why'] if s['why'] else ''} |")
    b1 = next((s for s in stats if int(s["batch"]) == 1), None)
    r = EXTERNAL_REFERENCE
    L += ["", "## External reference (a published figure on another card; no gate reads it)", "",
          "| engine | card | model | batch | tokens/s | accept length | implied step (ms) | source |",
          "|---|---|---|---|---|---|---|---|",
          f"| {r['engine']} | {r['card']} | {r['model']} | {r['batch']} | {r['tokens_per_s']:g} | {r['accept_length']} "
          f"| {r['implied_step_note']} | {r['source']} |"]
    if b1 is not None:
        L.append(f"| this harness | {b1.get('card', '')} | deployment shape, dummy weights, trace acceptance | 1 "
                 f"| {b1['tokens_per_s_mean']:.1f} | {b1['acceptance_length']:.2f} | {b1['step_s_median'] * 1e3:.2f} "
                 "| this record |")
    return "\n".join(L) + "\n"


# sglang's documentation (speculative decoding, EAGLE-3 section): Llama-3.1-8B-Instruct + EAGLE-3 on one
# H100, MT-bench, batch 1. Its accept length is not stated beside the figure, so the implied step time
# is not derived here. Rendered beside the harness's own row for scale; never read by a gate.
EXTERNAL_REFERENCE = {"engine": "sglang (published)", "card": "H100 (another card)", "model": "Llama-3.1-8B-Instruct + EAGLE-3",
                      "batch": 1, "tokens_per_s": 373.0, "accept_length": "not stated",
                      "implied_step_note": "n/a (accept length not published with it)",
                      "source": "sglang docs, speculative decoding (MT-bench); provenance: published"}


def _resumed(out: Path, prefix: str, sha: str, commit: str) -> tuple[list[dict], list[dict], list[dict]]:
    """The runs, request and acceptance rows an earlier (interrupted or split) invocation wrote to
    ``out`` for the same contract and commit; rows of another contract or commit are refused."""
    paths = [out / f"{prefix}_{k}.csv" for k in ("runs", "raw", "accept")]
    if not paths[0].is_file():
        return [], [], []
    runs, reqs, acc = (read_csv(p) if p.is_file() else [] for p in paths)
    for p, rows in zip(paths, (runs, reqs, acc), strict=True):
        for i, r in enumerate(rows):
            if r.get("contract_sha256") != sha:
                raise ValueError(f"{p}: row {i + 2}: contract_sha256 {r.get('contract_sha256')!r} is not this "
                                 f"contract's {sha}: --resume only continues the same contract")
            if "commit" in r and r["commit"] != commit:
                raise ValueError(f"{p}: row {i + 2}: commit {r['commit']!r} is not this checkout's {commit}: "
                                 "--resume only continues the same code")
    return runs, reqs, acc


def run_serving(c, out_dir, *, mode=None, points=None, runs=None, duration_s=None, backend="cuda", device="cuda",
                prefix="e2e", timeout_s=600, resume=False, deadline=None, launch=None,
                manifest_extra=None, log=print) -> dict:
    """The serving modes of ``run_contract``: every (point, run) as its own process. ``resume``: keep the
    rows already in ``out_dir`` (same contract and commit) and run only the (point, run) pairs they lack,
    so a baseline longer than one session's call can be measured in parts into one set of files.
    ``deadline`` (Unix time): start no process that ``expected_process_s`` says would end after it (a
    call with a hard time limit then ends between processes, its rows written, none cut short).
    ``launch(args, what)`` runs one (point, run) process from the child arguments and returns its result
    (default: this module's child; ``eagle4.workload.tp_run`` starts one process per rank);
    ``manifest_extra`` is added to the manifest (a tensor-parallel bench's degree and topology)."""
    if launch is None:
        def launch(args, what):
            return run_child("eagle4.workload.runner", ["--mode", mode, *args], timeout_s=timeout_s, what=what)
    contract_path = Path(c.source_path)
    if contract_path.is_absolute() and contract_path.is_relative_to(Path.cwd()):
        contract_path = contract_path.relative_to(Path.cwd())  # the manifest names it as the bench script does
    mode = mode or c.batch_profile.mode
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    commit = git_commit()
    pts = points or [p.name for p in c.operating_points]
    runs_n = runs or c.runs.runs
    all_runs, all_reqs, accepts = _resumed(out, prefix, c.sha256, commit) if resume else ([], [], [])
    resumed = {(r["point"], int(r["run_index"])) for r in all_runs}
    if resumed:
        log(f"resumed: runs {sorted(resumed)} from {out}")
    stats = None
    took: dict[str, list[float]] = {}  # wall seconds of this invocation's processes, per point
    left = [(p, i) for p in pts for i in range(runs_n) if (p, i) not in resumed]
    for n_done, (p, i) in enumerate(left):
        if deadline is not None and time.time() + expected_process_s(took, p) > deadline:
            log(f"stopped before {p} run {i}: {len(left) - n_done} runs left would end after the deadline; "
                "the rows so far are written (continue with --resume)")
            break
        t_start = time.time()
        args = ["--contract", str(contract_path), "--point", p, "--run-index", str(i), "--backend", backend,
                "--device", device, "--runs-total", str(runs_n), "--commit", commit]
        if duration_s is not None:
            args += ["--duration", str(duration_s)]
        res = launch(args, f"{p} run {i}")
        all_runs.append(res["run"])
        how = res["run"]["provenance"]  # every row says how it was obtained, not only the run's row
        all_reqs += [{**q, "provenance": how} for q in res["requests"]]
        accepts.append({**res["accept"], "histogram": json.dumps(res["accept"]["histogram"]),
                        "per_position": json.dumps(res["accept"]["per_position"]), "provenance": how})
        r = res["run"]
        log(f"{p} run {i}: {r['tokens_per_s']:.1f} tok/s over {r['window_s']:.1f} s, step {r['step_s_median'] * 1e3:.2f} ms, "
            f"acceptance {r['mean_acceptance_length']:.2f}, {r['joules_per_token']:.3f} J/token")
        stats = write_serving_files(out, prefix, c, commit, all_runs, all_reqs, accepts)
        took.setdefault(p, []).append(time.time() - t_start)
    if stats is None:  # every point resumed: nothing ran, the files stay as written
        if not all_runs:
            raise ValueError(f"no operating point to run or resume: {pts}")
        stats = summarize_serving(c, all_runs, all_reqs)
    manifest = {"contract": str(contract_path), "contract_sha256": c.sha256, "commit": commit,
                "runs_per_point": runs_n, "duration_override_s": duration_s, "gc_freeze": c.measurement.gc_freeze,
                "pin_cores": c.measurement.pin_cores, "nvml_sample_hz": c.measurement.nvml_sample_hz,
                "backend": backend, "device": all_runs[0]["device"], "acceptance": all_runs[0]["acceptance"],
                "pinned_cores": sorted({int(r["pinned_core"]) for r in all_runs if r["pinned_core"] not in (None, "")}),
                "min_finished_requests_per_run": finished_share(c.measurement.min_samples, runs_n),
                "card": all_runs[0].get("card", ""), **(manifest_extra or {}), **_environment(all_runs)}
    atomic.write_text(out / f"{prefix}_manifest.json", json.dumps(manifest, indent=1))
    paths = {k: out / f"{prefix}_{k}.{'md' if k == 'summary' else 'json' if k == 'manifest' else 'csv'}"
             for k in ("raw", "runs", "accept", "points", "summary", "manifest")}
    return {"stats": stats, "paths": paths, "mode": mode}


COLD_FACTOR = 2.0  # a point's first process compiles its shapes cold (on the H200 about 1.5x a warm one)


def expected_process_s(took: dict[str, list[float]], point: str) -> float:
    """Wall seconds the next process of ``point`` is expected to take: the longest of that point's in
    this invocation, else ``COLD_FACTOR`` x the longest of any point's, else 0 (nothing to go by)."""
    if took.get(point):
        return max(took[point])
    return COLD_FACTOR * max((max(v) for v in took.values()), default=0.0)


def _environment(runs: list[dict]) -> dict:
    """torch / driver versions and the card's declared and measured ceilings for the manifest (the
    measured ones come from each point's first process)."""
    env: dict = {}
    try:
        import torch

        env["torch"] = torch.__version__
        env["cuda_runtime"] = torch.version.cuda
    except ImportError:
        pass
    try:
        import subprocess

        env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                       capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        env["driver"] = "unknown (nvidia-smi not run)"
    from eagle4.cards import UnknownCard, card_named

    try:
        card = card_named(runs[0].get("card", ""))
        env["declared_peaks"] = {"hbm_bps": card.hbm_bps, "bf16_dense_flops": card.bf16_dense_flops,
                                 "source": card.source}
    except UnknownCard:
        env["declared_peaks"] = None
    env["measured_ceilings"] = [{"point": r["point"], "copy_bps": float(r["ceil_copy_bps"]),
                                 "bf16_matmul_flops": float(r["ceil_bf16_matmul_flops"]),
                                 "method": "device copy of 4 GiB (read + write bytes); 8192^3 bf16 matmul on "
                                           "random data; medians of 10 CUDA-event-timed runs"}
                                for r in runs if str(r.get("run_index")) == "0" and r.get("ceil_copy_bps") not in (None, "")
                                and np.isfinite(float(r["ceil_copy_bps"]))]
    return env


def _child_main(argv) -> int:
    ap = argparse.ArgumentParser(prog="python -m eagle4.workload.runner --child")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--mode", choices=MODES, default="static")
    ap.add_argument("--contract", required=True)
    ap.add_argument("--point", required=True)
    ap.add_argument("--run-index", type=int, required=True)
    ap.add_argument("--backend", default="ref")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--commit", default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--min-duration", type=float, default=None)
    ap.add_argument("--duration", type=float, default=None)
    ap.add_argument("--runs-total", type=int, default=None)
    ap.add_argument("--result", required=True)
    a = ap.parse_args(argv)
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    from eagle4.contract import load_contract

    c = load_contract(a.contract)
    if a.mode == "static":
        res = run_point_once(c, a.point, a.run_index, a.backend, device=a.device, commit=a.commit,
                             min_duration_s=a.min_duration)
    else:
        res = run_serving_once(c, a.point, a.run_index, mode=a.mode, backend=a.backend, device=a.device,
                               duration_s=a.duration, commit=a.commit or "unknown", runs_total=a.runs_total)
    atomic.write_text(a.result, json.dumps(res))
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--child" in argv:
        return _child_main(argv)
    ap = argparse.ArgumentParser(prog="python -m eagle4.workload.runner")
    ap.add_argument("--contract", required=True)
    ap.add_argument("--out", default="reports")
    ap.add_argument("--mode", choices=MODES, default=None, help="default: the contract's batch_profile.mode")
    ap.add_argument("--prefix", default="e2e", help="output files <prefix>_*.csv (default e2e)")
    ap.add_argument("--points", default=None, help="comma-separated (default: all)")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--duration", type=float, default=None,
                    help="serving: measured seconds per run, overriding runs.min_duration_s (shorter runs are INVALID)")
    ap.add_argument("--min-duration", type=float, default=None,
                    help="static: lengthen each run's measured time beyond the contract's minimum")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--resume", action="store_true",
                    help="serving: keep the rows already in --out (same contract and commit); run only the points they lack")
    ap.add_argument("--deadline", type=float, default=None,
                    help="serving: Unix time; start no process expected to end after it (continue later with --resume)")
    a = ap.parse_args(argv)
    try:
        res = run_contract(a.contract, a.backend, a.out, mode=a.mode, points=a.points.split(",") if a.points else None,
                           runs=a.runs, device=a.device, prefix=a.prefix, duration_s=a.duration,
                           min_duration_s=a.min_duration, resume=a.resume, deadline=a.deadline)
    except ValueError as e:
        print(f"runner: {e}", file=sys.stderr)
        return 2
    st = res["stats"]
    if res.get("mode", "static") == "static":
        return 0 if all(s["cov_ok"] for s in st) else 1
    return 0 if all(s["status"] == "VALID" for s in st) else 1


if __name__ == "__main__":
    sys.exit(main())

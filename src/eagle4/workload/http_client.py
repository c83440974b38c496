"""Benchmark client for OpenAI-compatible streaming servers (sglang, vLLM, our local server).

Per request: TTFT (first chunk that carries a token), the arrival time of every *token* (a chunk
may carry several tokens under speculative decoding: the count comes from ``token_ids`` when the
server returns them, else from continuous usage stats, else from the final usage spread over the
last chunk), ITL per token (a chunk of k tokens after a gap g gives k entries of g/k), TPOT =
(e2e - TTFT) / (tokens - 1), e2e latency, and failures (HTTP errors, broken or empty streams).

Acceptance length comes from server counters read before and after the run, as deltas (never a
cumulative value): vLLM ``/metrics`` ``vllm:spec_decode_num_accepted_tokens_total`` and
``vllm:spec_decode_num_drafts_total`` -> 1 + accepted / drafts; sglang ``/get_server_info``
``internal_states[0]`` counters when the server exposes totals (an average-only field is reported
as unavailable rather than used).
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from eagle4 import stats
from eagle4.report import atomic
from eagle4.workload.serving_metrics import TokenTimes


@dataclass
class HttpRequestResult(TokenTimes):  # ttft, e2e, itl()
    ok: bool = False
    error: str = ""
    start: float = 0.0
    token_times: list[float] = field(default_factory=list)  # seconds since start, one per token
    count_method: str = ""
    prompt_tokens: int = 0

    @property
    def output_tokens(self) -> int:
        return len(self.token_times)

    @property
    def tpot(self) -> float:
        n = self.output_tokens
        return (self.e2e - self.ttft) / (n - 1) if n > 1 else float("nan")


def _post_stream(url: str, payload: dict, timeout: float) -> HttpRequestResult:
    r = HttpRequestResult()
    data = json.dumps(payload).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    r.start = t0
    pending_final = None
    last_usage = 0
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            for raw in resp:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                body = line[5:].strip()
                if body == "[DONE]":
                    break
                now = time.perf_counter() - t0
                msg = json.loads(body)
                if "error" in msg:
                    raise RuntimeError(f"server error: {msg['error']}")
                usage = msg.get("usage") or {}
                n = None
                for ch in msg.get("choices") or []:
                    if "token_ids" in ch and ch["token_ids"] is not None:
                        n = (n or 0) + len(ch["token_ids"])
                        r.count_method = r.count_method or "token_ids"
                if n is None and usage.get("completion_tokens") is not None and msg.get("choices"):
                    n = int(usage["completion_tokens"]) - last_usage  # continuous usage stats
                    r.count_method = r.count_method or "continuous_usage"
                if n is None and any((ch.get("text") or ch.get("delta", {}).get("content")) for ch in msg.get("choices") or []):
                    n = 1
                    pending_final = now
                    r.count_method = r.count_method or "chunks+final_usage"
                if usage.get("completion_tokens") is not None:
                    if r.count_method == "chunks+final_usage":
                        extra = int(usage["completion_tokens"]) - len(r.token_times)
                        if extra > 0 and pending_final is not None:  # attribute the uncounted tokens to the last chunk
                            r.token_times += [pending_final] * extra
                    last_usage = int(usage["completion_tokens"])
                    r.prompt_tokens = int(usage.get("prompt_tokens") or 0)
                if n:
                    r.token_times += [now] * n
        r.ok = bool(r.token_times)
        if not r.ok:
            r.error = "stream ended without a token"
    except (urllib.error.URLError, OSError, RuntimeError, ValueError) as e:
        r.ok, r.error = False, f"{type(e).__name__}: {e}"
    return r


_PROM = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eEinfINFNaN]+)')


def _get(url: str, timeout: float = 10.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def read_counters(base_url: str, kind: str = "auto") -> dict:
    """Cumulative spec-decode counters of the server (summed over label sets)."""
    out: dict = {"source": None}
    if kind in ("auto", "vllm"):
        try:
            text = _get(base_url.rstrip("/") + "/metrics")
            vals: dict[str, float] = {}
            for line in text.splitlines():
                m = _PROM.match(line)
                if m:
                    vals[m.group(1)] = vals.get(m.group(1), 0.0) + float(m.group(3))
            if "vllm:spec_decode_num_drafts_total" in vals:
                return {"source": "vllm:/metrics", "drafts": vals["vllm:spec_decode_num_drafts_total"],
                        "accepted": vals.get("vllm:spec_decode_num_accepted_tokens_total", 0.0),
                        "draft_tokens": vals.get("vllm:spec_decode_num_draft_tokens_total", float("nan"))}
        except (urllib.error.URLError, OSError, ValueError):
            pass
    if kind in ("auto", "sglang"):
        try:
            info = json.loads(_get(base_url.rstrip("/") + "/get_server_info"))
            st = (info.get("internal_states") or [{}])[0]
            if "spec_num_verify_ct_total" in st:
                return {"source": "sglang:/get_server_info", "drafts": float(st["spec_num_verify_ct_total"]),
                        "accepted": float(st["spec_num_accepted_tokens_total"])}
            if "avg_spec_accept_length" in st:
                return {"source": "sglang:/get_server_info (average only: not usable as a delta)"}
        except (urllib.error.URLError, OSError, ValueError):
            pass
    return out


def acceptance_from_deltas(before: dict, after: dict) -> float:
    if not before.get("source") or "drafts" not in before or "drafts" not in after:
        return float("nan")
    d = after["drafts"] - before["drafts"]
    a = after["accepted"] - before["accepted"]
    return 1.0 + a / d if d > 0 else float("nan")


def run_batch(base_url: str, prompts: list, max_tokens: int, *, model: str | None = None, temperature: float = 0.0,
              timeout: float = 300.0) -> list[HttpRequestResult]:
    """``len(prompts)`` concurrent streaming requests (static batch); returns when all finished."""
    url = base_url.rstrip("/") + "/v1/completions"
    results: list[HttpRequestResult | None] = [None] * len(prompts)

    def one(i):
        payload = {"prompt": prompts[i], "max_tokens": max_tokens, "temperature": temperature, "stream": True,
                   "ignore_eos": True, "return_token_ids": True,
                   "stream_options": {"include_usage": True, "continuous_usage_stats": False}}
        if model:
            payload["model"] = model
        results[i] = _post_stream(url, payload, timeout)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(prompts))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout + 5
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    return [r if r is not None else HttpRequestResult(ok=False, error="request thread did not finish") for r in results]


def run_http_point(base_url: str, prompts: list, batch: int, max_tokens: int, *, kind="auto", model=None,
                   temperature=0.0, timeout=300.0) -> dict:
    before = read_counters(base_url, kind)
    t0 = time.perf_counter()
    sel = [prompts[i % len(prompts)] for i in range(batch)]
    res = run_batch(base_url, sel, max_tokens, model=model, temperature=temperature, timeout=timeout)
    wall = time.perf_counter() - t0
    after = read_counters(base_url, kind)
    ok = [r for r in res if r.ok]
    return {"results": res, "wall_s": wall, "failures": len(res) - len(ok),
            "tokens_per_s": sum(r.output_tokens for r in ok) / wall if wall > 0 else float("nan"),
            "acceptance_length": acceptance_from_deltas(before, after),
            "counter_source": after.get("source") or "none"}


def run_http_phases(base_url: str, prompts: list, phases, max_tokens: int, *, kind="auto", model=None,
                    temperature=0.0, timeout=300.0, max_requests: int = 10_000) -> dict:
    """Batch profile over time: for each phase, ``concurrency`` workers each issue requests back to
    back until the phase's ``duration_s`` has elapsed (a request started in a phase finishes even
    past its end). Bounded by ``max_requests`` in all."""
    before = read_counters(base_url, kind)
    t0 = time.perf_counter()
    results: list[tuple[int, HttpRequestResult]] = []
    lock = threading.Lock()
    issued = [0]

    def worker(phase_idx, deadline, wid):
        k = wid
        while time.perf_counter() < deadline:
            with lock:
                if issued[0] >= max_requests:
                    return
                issued[0] += 1
            (r,) = run_batch(base_url, [prompts[k % len(prompts)]], max_tokens, model=model,
                             temperature=temperature, timeout=timeout)
            with lock:
                results.append((phase_idx, r))
            k += len(prompts) // 2 + 1

    for i, ph in enumerate(phases):
        deadline = time.perf_counter() + float(ph.duration_s)
        ts = [threading.Thread(target=worker, args=(i, deadline, w), daemon=True) for w in range(ph.concurrency)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=float(ph.duration_s) + timeout + 5)
    wall = time.perf_counter() - t0
    after = read_counters(base_url, kind)
    ok = [r for _, r in results if r.ok]
    return {"results": [r for _, r in results], "phases": [i for i, _ in results], "wall_s": wall,
            "failures": len(results) - len(ok),
            "tokens_per_s": sum(r.output_tokens for r in ok) / wall if wall > 0 else float("nan"),
            "acceptance_length": acceptance_from_deltas(before, after),
            "counter_source": after.get("source") or "none"}


def run_http_contract(contract, base_url: str, out_dir, *, model=None, kind="auto", points=None, runs=None,
                      prefix="http", timeout=300.0) -> dict:
    """Every operating point (or ``points``), ``runs`` runs each, against a live server; CSV + summary."""
    import csv
    import datetime as _dt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    texts = [p["text"] for p in contract.load_prompts()]
    n_out = contract.prompts.output_tokens
    temp = contract.decode.temperatures[0]
    pts = [contract.operating_point(p) for p in points] if points else list(contract.operating_points)
    phased = contract.batch_profile.mode == "phases"
    if phased:  # one pseudo operating point: the profile over time
        from types import SimpleNamespace

        pts = [SimpleNamespace(name="profile", batch=max(ph.concurrency for ph in contract.batch_profile.phases))]
    n_runs = runs or contract.runs.runs
    rows, runrows = [], []
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    for p in pts:
        def once(p=p):
            if phased:
                return run_http_phases(base_url, texts, contract.batch_profile.phases, n_out, kind=kind, model=model,
                                       temperature=temp, timeout=timeout)
            return run_http_point(base_url, texts, p.batch, n_out, kind=kind, model=model, temperature=temp,
                                  timeout=timeout)

        for _ in range(contract.runs.warmup):
            once()
        for i in range(n_runs):
            res = once()
            runrows.append({"contract_sha256": contract.sha256, "point": p.name, "batch": p.batch, "run_index": i,
                            "wall_s": res["wall_s"], "tokens_per_s": res["tokens_per_s"], "failures": res["failures"],
                            "acceptance_length": res["acceptance_length"], "counter_source": res["counter_source"],
                            "url": base_url, "provenance": "measured", "timestamp": now})
            for j, r in enumerate(res["results"]):
                itl = r.itl()
                rows.append({"contract_sha256": contract.sha256, "point": p.name, "batch": p.batch, "run_index": i,
                             "request_index": j, "ok": r.ok, "error": r.error, "output_tokens": r.output_tokens,
                             "ttft_s": r.ttft, "tpot_s": r.tpot, "e2e_s": r.e2e,
                             "itl_p50_s": stats.percentile(itl, 50), "itl_p99_s": stats.percentile(itl, 99),
                             "itl_s": ";".join(f"{x:.6g}" for x in itl), "count_method": r.count_method,
                             "url": base_url, "provenance": "measured", "timestamp": now})
    paths = {"raw": out / f"{prefix}_raw.csv", "runs": out / f"{prefix}_runs.csv", "summary": out / f"{prefix}_summary.md"}
    for path, rr in ((paths["raw"], rows), (paths["runs"], runrows)):
        if not rr:
            raise RuntimeError(f"refusing to write an empty results file {path}")
        with atomic.atomic_open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rr[0]))
            w.writeheader()
            w.writerows(rr)
    L = [f"# HTTP benchmark of {base_url}", "", f"* contract sha256: `{contract.sha256}`", "",
         "| point | batch | runs | failures | TTFT p50 (ms) | TTFT p99 (ms) | ITL p50 (ms) | ITL p99 (ms) | TPOT mean (ms) | tokens/s | acceptance (counter deltas) |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in pts:
        rr = [r for r in rows if r["point"] == p.name and r["ok"]]
        ru = [r for r in runrows if r["point"] == p.name]
        itl = [float(x) for r in rr for x in r["itl_s"].split(";") if x]
        ttft = [r["ttft_s"] for r in rr]
        pc = lambda x, q: stats.percentile(x, q) * 1e3  # noqa: E731
        acc = [r["acceptance_length"] for r in ru if np.isfinite(r["acceptance_length"])]
        L.append(f"| {p.name} | {p.batch} | {len(ru)} | {sum(r['failures'] for r in ru)} | {pc(ttft, 50):.2f} | "
                 f"{pc(ttft, 99):.2f} | {pc(itl, 50):.3f} | {pc(itl, 99):.3f} | "
                 f"{np.nanmean([r['tpot_s'] for r in rr]) * 1e3 if rr else float('nan'):.3f} | "
                 f"{np.mean([r['tokens_per_s'] for r in ru]):.1f} | "
                 f"{(f'{np.mean(acc):.3f}' if acc else 'unavailable')} |")
    atomic.write_text(paths["summary"], "\n".join(L) + "\n")
    return {"paths": paths, "rows": rows, "runs": runrows}

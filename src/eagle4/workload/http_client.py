"""Benchmark client for real serving engines (sglang, vLLM; the local test server speaks both).

``eagle4 workload http --kind sglang|vllm --url URL --contract C`` runs the contract's operating
points against a live server. What it measures, and where each number comes from:

* **Prompts** are the contract's, tokenized *by the server* (vLLM ``POST /tokenize``, sglang
  ``POST /v1/tokenize``) and cut to ``[prompts] prompt_tokens``; the ids are sent as ids (vLLM
  ``/v1/completions`` ``prompt: [ids]``, sglang ``/generate`` ``input_ids``), so both sides see the
  same tokens.
* **Tokens, not chunks.** Under speculative decoding one streamed chunk may carry several tokens.
  vLLM: ``choices[0].token_ids`` (``return_token_ids``) or, failing that, continuous usage deltas
  (``stream_options.continuous_usage_stats``); sglang: deltas of the cumulative
  ``meta_info.completion_tokens``. A stream that carries neither is a failed request (its tokens
  cannot be counted), never a chunk count. A chunk of k tokens after a gap g gives k ITL entries of g/k.
* **Acceptance.** sglang: per request, ``completion_tokens / meta_info.spec_verify_ct`` (sglang's own
  accept length, the bonus token included); vLLM: deltas of ``vllm:spec_decode_num_accepted_tokens_total``
  and ``vllm:spec_decode_num_drafts_total`` from ``/metrics`` around the run, ``1 + accepted / drafts``.
* **Speculative configuration read back** (sglang ``/server_info`` or ``/get_server_info``:
  ``speculative_algorithm``, ``speculative_num_steps``, ``speculative_eagle_topk``,
  ``speculative_num_draft_tokens``; vLLM ``/server_info`` (``VLLM_SERVER_DEV_MODE=1``):
  ``speculative_config=SpeculativeConfig(method=..., num_spec_tokens=...)``) and compared with the
  contract's ``[decode]``. Rows carry the contract hash only when it matches; otherwise (mismatch or
  not readable) ``contract_sha256`` is empty, so no gate or comparison accepts them.
* **Bounded waits.** Every request has an overall deadline (``[http] request_timeout_s``,
  ``--timeout``), enforced on every socket read and write of the client from :func:`make_client` (a server
  dripping one byte a second cannot stretch it), and every answer that is read whole is bounded
  (:data:`MAX_BODY_BYTES`); a server that does not answer, stays silent or fails a request makes the run an error
  (:class:`HttpBenchError`): no row is written for it, never a ``measured`` row at 0 tok/s.

Outputs (atomic writes): ``<prefix>_raw.csv`` (one row per request, the columns ``compare-fpga``
reads), ``<prefix>_runs.csv`` (one row per run), ``<prefix>_summary.md``.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpcore
import httpx
import numpy as np

from eagle4 import stats
from eagle4.report import atomic
from eagle4.workload.serving_metrics import TokenTimes

KINDS = ("sglang", "vllm")
DEFAULT_REQUEST_TIMEOUT_S = 120.0  # a 2-core CI runner serving the embedded pair at b8 stays well inside
DEFAULT_CONNECT_TIMEOUT_S = 10.0
EAGLE_METHODS = {"eagle", "eagle3", "eagle-3", "eagle_3", "mtp"}
#: the largest answer read whole (/v1/models, /server_info, /tokenize, /metrics, an error body): these
#: are kilobytes; a bigger one is refused, never read into memory
MAX_BODY_BYTES = 16 << 20


class HttpBenchError(RuntimeError):
    """The server could not be measured (unreachable, silent, failing, or unable to tokenize)."""


@dataclass(frozen=True)
class Timeouts:
    request_s: float = DEFAULT_REQUEST_TIMEOUT_S
    connect_s: float = DEFAULT_CONNECT_TIMEOUT_S

    def httpx(self) -> httpx.Timeout:
        # read: the longest silence between two chunks; the whole request is bounded by request_s too
        return httpx.Timeout(self.request_s, connect=self.connect_s)


@dataclass
class HttpRequestResult(TokenTimes):  # ttft, e2e, itl()
    ok: bool = False
    error: str = ""
    start: float = 0.0
    token_times: list[float] = field(default_factory=list)  # seconds since start, one per token
    count_method: str = ""
    prompt_tokens: int = 0
    spec_verify_ct: int | None = None  # sglang meta_info

    @property
    def output_tokens(self) -> int:
        return len(self.token_times)

    @property
    def tpot(self) -> float:
        n = self.output_tokens
        return (self.e2e - self.ttft) / (n - 1) if n > 1 else float("nan")

    @property
    def acceptance_length(self) -> float:
        """sglang's per-request accept length: completion tokens per verify step."""
        if not self.spec_verify_ct:
            return float("nan")
        return self.output_tokens / self.spec_verify_ct


# ---- overall deadlines ---------------------------------------------------------------------------------
# httpx's timeouts bound each read; the deadline of the request in progress (per thread: contextvars) caps
# every read and write of the connection, so the whole request ends by it however the server drips.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("eagle4_http_deadline", default=None)


@contextlib.contextmanager
def deadline(seconds: float):
    """Every socket operation of a :func:`make_client` client inside the block ends by ``seconds`` from now."""
    tok = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(tok)


def _left(timeout: float | None, exc=httpcore.ReadTimeout) -> float | None:
    d = _DEADLINE.get()
    if d is None:
        return timeout
    left = d - time.monotonic()
    if left <= 0:
        raise exc("the request's overall deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream):
        self._s = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._s.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._s.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._s.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        return _DeadlineStream(self._s.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str):
        return self._s.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self):
        self._b = httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _DeadlineStream(self._b.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout),
                                                   local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _DeadlineStream(self._b.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout),
                                                           socket_options))

    def sleep(self, seconds: float) -> None:
        self._b.sleep(seconds)


def make_client(timeouts: Timeouts, **kw) -> httpx.Client:
    """An ``httpx.Client`` whose requests (made inside :func:`deadline`) end by their overall deadline."""
    transport = httpx.HTTPTransport(limits=kw.pop("limits", httpx.Limits(max_connections=None)))
    transport._pool._network_backend = _DeadlineBackend()  # httpx exposes no hook for the network backend
    return httpx.Client(timeout=timeouts.httpx(), transport=transport, **kw)


def _bounded(client: httpx.Client, method: str, url: str, *, limit: int = MAX_BODY_BYTES, **kw) -> httpx.Response:
    """``client.request`` whose body is read only up to ``limit`` bytes (Content-Length checked first), within
    the deadline in force or else one of the client's read timeout."""
    own = deadline(client.timeout.read or DEFAULT_REQUEST_TIMEOUT_S) if _DEADLINE.get() is None \
        else contextlib.nullcontext()
    with own, client.stream(method, url, **kw) as r:
        n = r.headers.get("content-length")
        if n is not None and n.isdigit() and int(n) > limit:
            raise HttpBenchError(f"{url}: answer of {int(n)} bytes, over the {limit} byte limit")
        body = bytearray()
        for chunk in r.iter_bytes():
            body += chunk
            if len(body) > limit:
                raise HttpBenchError(f"{url}: answer over the {limit} byte limit")
        return httpx.Response(r.status_code, headers=r.headers, content=bytes(body), request=r.request)


# ---- server probing ----------------------------------------------------------------------------------
def _get_json(client: httpx.Client, url: str, path: str) -> dict | None:
    try:
        r = _bounded(client, "GET", url + path)
    except httpx.HTTPError:
        return None
    if r.status_code != 200:
        return None
    try:
        return r.json()
    except ValueError:
        return None


def probe(client: httpx.Client, url: str) -> str:
    """The served model id (``/v1/models``); a server that does not answer is an error."""
    try:
        r = _bounded(client, "GET", url + "/v1/models")
    except httpx.TimeoutException as e:
        raise HttpBenchError(f"{url}: no answer to GET /v1/models within the timeout ({type(e).__name__})") from None
    except httpx.HTTPError as e:
        raise HttpBenchError(f"{url}: server unreachable ({type(e).__name__}: {e})") from None
    if r.status_code != 200:
        raise HttpBenchError(f"{url}: GET /v1/models answered HTTP {r.status_code}")
    try:
        return str(r.json()["data"][0]["id"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise HttpBenchError(f"{url}: GET /v1/models did not list a model") from None


def read_spec_config(client: httpx.Client, url: str, kind: str) -> dict | None:
    """The server's speculative configuration, normalised to ``{"source", "algorithm", "num_steps",
    "topk", "num_verify_tokens"}`` (``None`` where the server does not say)."""
    if kind == "sglang":
        for path in ("/server_info", "/get_server_info"):
            info = _get_json(client, url, path)
            if info and "speculative_algorithm" in info:
                def val(k, info=info):
                    v = info.get(k)
                    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

                return {"source": f"sglang:{path}", "algorithm": str(info.get("speculative_algorithm") or ""),
                        "num_steps": val("speculative_num_steps"), "topk": val("speculative_eagle_topk"),
                        "num_verify_tokens": val("speculative_num_draft_tokens")}
        return None
    info = _get_json(client, url, "/server_info")  # vLLM: only with VLLM_SERVER_DEV_MODE=1
    text = str((info or {}).get("vllm_config", ""))
    m = re.search(r"speculative_config=SpeculativeConfig\(([^)]*)\)", text)
    if not m:
        return None
    body = m.group(1)
    meth = re.search(r"method='?([\w-]+)'?", body)
    n = re.search(r"num_spec_tokens=(\d+)", body)
    steps = int(n.group(1)) if n else None
    # vLLM's EAGLE proposes a chain: one candidate per step, the root plus every drafted token verified
    return {"source": "vllm:/server_info", "algorithm": meth.group(1) if meth else "", "num_steps": steps,
            "topk": 1 if steps is not None else None, "num_verify_tokens": steps + 1 if steps is not None else None}


def expected_spec_config(contract) -> dict:
    d = contract.decode
    return {"num_steps": d.tree_depth, "topk": d.node_top_k, "num_verify_tokens": d.verify_num}


def check_spec_config(server: dict | None, contract) -> list[str]:
    """Mismatches between the server's speculative configuration and the contract (empty: match)."""
    if server is None:
        return ["the server does not report its speculative configuration (sglang: /server_info; vLLM: "
                "/server_info needs VLLM_SERVER_DEV_MODE=1)"]
    out = []
    if server["algorithm"].lower().replace("_", "-") not in EAGLE_METHODS | {"eagle-3"}:
        out.append(f"speculative algorithm {server['algorithm']!r} is not EAGLE-style")
    exp = expected_spec_config(contract)
    names = {"num_steps": "draft steps (decode.tree_depth)", "topk": "top-k per node (decode.node_top_k)",
             "num_verify_tokens": "verify tokens (decode.verify_num)"}
    for k, want in exp.items():
        got = server.get(k)
        if got != want:
            out.append(f"{names[k]}: server {got}, contract {want}")
    return out


def tokenize(client: httpx.Client, url: str, kind: str, model: str, text: str) -> list[int]:
    """Token ids of ``text`` by the server's own tokenizer (special tokens as the server adds them)."""
    paths = ("/tokenize", "/v1/tokenize") if kind == "vllm" else ("/v1/tokenize", "/tokenize")
    last = ""
    for path in paths:
        try:
            r = _bounded(client, "POST", url + path, json={"model": model, "prompt": text, "add_special_tokens": True})
        except httpx.HTTPError as e:
            raise HttpBenchError(f"{url}{path}: {type(e).__name__}: {e}") from None
        if r.status_code == 200:
            try:
                toks = r.json()["tokens"]
            except (ValueError, KeyError, TypeError):
                raise HttpBenchError(f"{url}{path}: answer has no 'tokens' list") from None
            if not isinstance(toks, list) or not all(isinstance(t, int) for t in toks):
                raise HttpBenchError(f"{url}{path}: 'tokens' is not a list of token ids")
            return toks
        last = f"HTTP {r.status_code}"
    raise HttpBenchError(f"{url}: cannot cut prompts with the server's tokenizer ({' and '.join(paths)}: {last})")


def read_counters(client: httpx.Client, url: str) -> dict:
    """vLLM's cumulative spec-decode counters from ``/metrics`` (summed over label sets)."""
    try:
        text = _bounded(client, "GET", url + "/metrics").text
    except httpx.HTTPError as e:
        raise HttpBenchError(f"{url}/metrics: {type(e).__name__}: {e}") from None
    vals: dict[str, float] = {}
    for line in text.splitlines():
        m = _PROM.match(line)
        if m:
            vals[m.group(1)] = vals.get(m.group(1), 0.0) + float(m.group(3))
    if "vllm:spec_decode_num_drafts_total" not in vals:
        return {"source": None}
    return {"source": "vllm:/metrics", "drafts": vals["vllm:spec_decode_num_drafts_total"],
            "accepted": vals.get("vllm:spec_decode_num_accepted_tokens_total", 0.0),
            "draft_tokens": vals.get("vllm:spec_decode_num_draft_tokens_total", float("nan"))}


_PROM = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eEinfINFNaN]+)')


def acceptance_from_deltas(before: dict, after: dict) -> float:
    if not before.get("source") or "drafts" not in before or "drafts" not in after:
        return float("nan")
    d = after["drafts"] - before["drafts"]
    a = after["accepted"] - before["accepted"]
    return 1.0 + a / d if d > 0 else float("nan")


# ---- one streamed request ----------------------------------------------------------------------------
def _request(kind: str, ids: list[int], max_tokens: int, temperature: float, model: str) -> tuple[str, dict]:
    if kind == "sglang":
        return "/generate", {"input_ids": ids, "stream": True,
                             "sampling_params": {"max_new_tokens": max_tokens, "temperature": temperature,
                                                 "ignore_eos": True}}
    return "/v1/completions", {"model": model, "prompt": ids, "max_tokens": max_tokens, "temperature": temperature,
                               "stream": True, "ignore_eos": True, "return_token_ids": True,
                               "stream_options": {"include_usage": True, "continuous_usage_stats": True}}


def _count_vllm(msg: dict, r: HttpRequestResult, st: dict) -> int:
    usage = msg.get("usage") or {}
    n = None
    for ch in msg.get("choices") or []:
        if ch.get("token_ids") is not None:
            n = (n or 0) + len(ch["token_ids"])
            r.count_method = "token_ids"
    if usage.get("prompt_tokens") is not None:
        r.prompt_tokens = int(usage["prompt_tokens"])
    if usage.get("completion_tokens") is not None:
        total = int(usage["completion_tokens"])
        if n is None and r.count_method in ("", "usage_deltas"):
            n = total - st["usage"]
            r.count_method = "usage_deltas"
        st["usage"] = total
    if n is None and any(ch.get("text") for ch in msg.get("choices") or []):
        raise ValueError("the stream carries text without token ids or usage deltas: tokens cannot be counted "
                         "(ask the server for return_token_ids or continuous_usage_stats)")
    return n or 0


def _count_sglang(msg: dict, r: HttpRequestResult, st: dict) -> int:
    meta = msg.get("meta_info")
    if not isinstance(meta, dict) or "completion_tokens" not in meta:
        if msg.get("text"):
            raise ValueError("sglang chunk without meta_info.completion_tokens: tokens cannot be counted")
        return 0
    total = int(meta["completion_tokens"])
    n, st["usage"] = total - st["usage"], total
    r.count_method = "meta_info.completion_tokens"
    r.prompt_tokens = int(meta.get("prompt_tokens") or r.prompt_tokens)
    if meta.get("spec_verify_ct") is not None:
        r.spec_verify_ct = int(meta["spec_verify_ct"])
    return n


def stream_one(client: httpx.Client, url: str, kind: str, ids: list[int], max_tokens: int, *, model: str,
               temperature: float, timeouts: Timeouts) -> HttpRequestResult:
    path, payload = _request(kind, ids, max_tokens, temperature, model)
    count = _count_sglang if kind == "sglang" else _count_vllm
    r = HttpRequestResult(prompt_tokens=len(ids))
    st = {"usage": 0}
    t0 = time.perf_counter()
    r.start = t0
    try:
        with deadline(timeouts.request_s), \
                client.stream("POST", url + path, json=payload, timeout=timeouts.httpx()) as resp:
            if resp.status_code != 200:
                head = next(resp.iter_bytes(), b"")[:200]  # the start of the error body, never all of it
                raise ValueError(f"HTTP {resp.status_code}: {head.decode('utf-8', 'replace')}")
            for line in resp.iter_lines():
                now = time.perf_counter() - t0
                if now > timeouts.request_s:
                    raise TimeoutError(f"request exceeded {timeouts.request_s:g} s")
                line = line.strip()
                if not line.startswith("data:"):
                    continue
                body = line[5:].strip()
                if body == "[DONE]":
                    break
                msg = json.loads(body)
                if not isinstance(msg, dict):
                    raise ValueError(f"stream event is not a JSON object: {body[:80]!r}")
                if "error" in msg:
                    raise ValueError(f"server error: {msg['error']}")
                n = count(msg, r, st)
                if n < 0:
                    raise ValueError("the server's token count went backwards")
                r.token_times += [now] * n
        if not r.token_times:
            raise ValueError("stream ended without a token")
        if len(r.token_times) != max_tokens:
            raise ValueError(f"{len(r.token_times)} tokens streamed, {max_tokens} asked (ignore_eos is set)")
        r.ok = True
    except httpx.TimeoutException as e:
        r.error = f"no data within {timeouts.request_s:g} s ({type(e).__name__})"
    except (httpx.HTTPError, ValueError, TimeoutError) as e:
        r.error = f"{type(e).__name__}: {e}"
    return r


def run_batch(client: httpx.Client, url: str, kind: str, prompts: list[list[int]], max_tokens: int, *, model: str,
              temperatures: list[float], timeouts: Timeouts) -> list[HttpRequestResult]:
    """``len(prompts)`` concurrent streaming requests (temperatures cycled over them, as the engine
    does); returns when all finished or timed out."""
    results: list[HttpRequestResult | None] = [None] * len(prompts)

    def one(i):
        results[i] = stream_one(client, url, kind, prompts[i], max_tokens, model=model,
                                temperature=temperatures[i % len(temperatures)], timeouts=timeouts)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(prompts))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeouts.request_s + timeouts.connect_s + 5
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    return [r if r is not None else HttpRequestResult(error="request thread did not finish") for r in results]


def run_point(client: httpx.Client, url: str, kind: str, prompts: list[list[int]], batch: int, max_tokens: int, *,
              model: str, temperatures: list[float], timeouts: Timeouts) -> dict:
    """One measured run of a static batch; a failed request makes the run an error."""
    before = read_counters(client, url) if kind == "vllm" else {}
    sel = [prompts[i % len(prompts)] for i in range(batch)]
    t0 = time.perf_counter()
    res = run_batch(client, url, kind, sel, max_tokens, model=model, temperatures=temperatures, timeouts=timeouts)
    wall = time.perf_counter() - t0
    bad = [r for r in res if not r.ok]
    if bad:
        raise HttpBenchError(f"{url}: {len(bad)} of {len(res)} requests failed (first: {bad[0].error}); "
                             "a run with failed requests is not a measurement")
    if kind == "vllm":
        acc, source = acceptance_from_deltas(before, read_counters(client, url)), "vllm:/metrics deltas"
    else:
        verify = [r.spec_verify_ct for r in res]
        if any(v is None for v in verify):
            acc, source = float("nan"), "unavailable (no meta_info.spec_verify_ct)"
        else:
            acc = sum(r.output_tokens for r in res) / max(1, sum(verify))
            source = "sglang meta_info.spec_verify_ct"
    return {"results": res, "wall_s": wall, "tokens_per_s": sum(r.output_tokens for r in res) / wall,
            "acceptance_length": acc, "acceptance_source": source}


# ---- the contract --------------------------------------------------------------------------------------
RAW_FIELDS = ["contract_sha256", "contract_name", "point", "batch", "run_index", "request_index", "prompt_tokens",
              "output_tokens", "ttft_s", "itl_p50_s", "itl_p99_s", "tpot_s", "e2e_s", "tokens_per_s",
              "acceptance_length", "itl_s", "count_method", "kind", "url", "model", "device", "model_device",
              "spec_config", "provenance", "timestamp"]
RUN_FIELDS = ["contract_sha256", "contract_name", "point", "batch", "run_index", "wall_s", "output_tokens",
              "tokens_per_s", "mean_acceptance_length", "acceptance_source", "kind", "url", "model", "device",
              "spec_config", "provenance", "timestamp"]


def contract_timeouts(contract, request_s: float | None = None, connect_s: float | None = None) -> Timeouts:
    h = contract.http
    return Timeouts(float(request_s or h.request_timeout_s), float(connect_s or h.connect_timeout_s))


def run_http_contract(contract, url: str, out_dir, *, kind: str, model: str | None = None, points=None,
                      runs: int | None = None, prefix: str = "http", timeouts: Timeouts | None = None) -> dict:
    """Every operating point (or ``points``), ``runs`` runs each, against a live server."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    if contract.batch_profile.mode != "static":
        raise HttpBenchError("the HTTP client runs static batches only (batch_profile.mode = 'static')")
    url = url.rstrip("/")
    timeouts = timeouts or contract_timeouts(contract)
    out = Path(out_dir)
    n_out = contract.prompts.output_tokens
    temps = list(contract.decode.temperatures)
    pts = [contract.operating_point(p) for p in points] if points else list(contract.operating_points)
    n_runs = runs or contract.runs.runs
    with make_client(timeouts) as client:
        served = probe(client, url)
        model = model or served
        spec = read_spec_config(client, url, kind)
        mismatches = check_spec_config(spec, contract)
        stamp = "" if mismatches else contract.sha256
        spec_txt = json.dumps(spec, sort_keys=True) if spec else "unavailable"
        prompts = [tokenize(client, url, kind, model, p["text"])[: contract.prompts.prompt_tokens]
                   for p in contract.load_prompts()]
        rows, runrows = [], []
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        device = f"{kind} server {url}"
        common = {"contract_sha256": stamp, "contract_name": contract.contract.name, "kind": kind, "url": url,
                  "model": model, "device": device, "spec_config": spec_txt, "provenance": "measured",
                  "timestamp": now}
        for p in pts:
            def once(p=p):
                return run_point(client, url, kind, prompts, p.batch, n_out, model=model, temperatures=temps,
                                 timeouts=timeouts)

            for _ in range(contract.runs.warmup):
                once()
            for i in range(n_runs):
                res = once()
                runrows.append({**common, "point": p.name, "batch": p.batch, "run_index": i, "wall_s": res["wall_s"],
                                "output_tokens": sum(r.output_tokens for r in res["results"]),
                                "tokens_per_s": res["tokens_per_s"], "mean_acceptance_length": res["acceptance_length"],
                                "acceptance_source": res["acceptance_source"]})
                for j, r in enumerate(res["results"]):
                    itl = r.itl()
                    rows.append({**common, "point": p.name, "batch": p.batch, "run_index": i, "request_index": j,
                                 "prompt_tokens": r.prompt_tokens, "output_tokens": r.output_tokens, "ttft_s": r.ttft,
                                 "itl_p50_s": stats.percentile(itl, 50), "itl_p99_s": stats.percentile(itl, 99),
                                 "tpot_s": r.tpot, "e2e_s": r.e2e, "tokens_per_s": r.output_tokens / r.e2e,
                                 "acceptance_length": (r.acceptance_length if kind == "sglang"
                                                       else res["acceptance_length"]),
                                 "itl_s": ";".join(f"{x:.6g}" for x in itl), "model_device": device,
                                 "count_method": r.count_method})
    out.mkdir(parents=True, exist_ok=True)
    paths = {"raw": out / f"{prefix}_raw.csv", "runs": out / f"{prefix}_runs.csv", "summary": out / f"{prefix}_summary.md"}
    atomic.write_csv(paths["raw"], RAW_FIELDS, rows)
    atomic.write_csv(paths["runs"], RUN_FIELDS, runrows)
    atomic.write_text(paths["summary"], _summary(contract, url, kind, model, spec_txt, mismatches, pts, rows, runrows))
    return {"paths": paths, "rows": rows, "runs": runrows, "mismatches": mismatches, "contract_sha256": stamp}


def _summary(contract, url, kind, model, spec_txt, mismatches, pts, rows, runrows) -> str:
    L = [f"# HTTP benchmark of {url} ({kind})", "", f"* model: `{model}`", f"* server speculative config: `{spec_txt}`"]
    if mismatches:
        L += ["* **not a measurement of the contract** (no contract hash stamped):",
              *[f"  * {m}" for m in mismatches]]
    else:
        L.append(f"* contract `{contract.contract.name}` sha256 `{contract.sha256}` (speculative config matches)")
    L += ["", "| point | batch | runs | TTFT p50 (ms) | TTFT p99 (ms) | ITL p50 (ms) | ITL p99 (ms) | TPOT mean (ms) | "
          "tokens/s | acceptance |", "|---|---|---|---|---|---|---|---|---|---|"]
    for p in pts:
        rr = [r for r in rows if r["point"] == p.name]
        ru = [r for r in runrows if r["point"] == p.name]
        itl = [float(x) for r in rr for x in r["itl_s"].split(";") if x]
        ttft = [r["ttft_s"] for r in rr]
        pc = lambda x, q: stats.percentile(x, q) * 1e3  # noqa: E731
        acc = [r["mean_acceptance_length"] for r in ru if np.isfinite(r["mean_acceptance_length"])]
        acc_txt = f"{np.mean(acc):.3f} ({ru[0]['acceptance_source']})" if acc else "unavailable"
        L.append(f"| {p.name} | {p.batch} | {len(ru)} | {pc(ttft, 50):.2f} | {pc(ttft, 99):.2f} | {pc(itl, 50):.3f} | "
                 f"{pc(itl, 99):.3f} | {np.nanmean([r['tpot_s'] for r in rr]) * 1e3:.3f} | "
                 f"{np.mean([r['tokens_per_s'] for r in ru]):.1f} | "
                 f"{acc_txt} |")
    return "\n".join(L) + "\n"

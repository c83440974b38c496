"""A minimal streaming server around the local engine (stdlib ``http.server``) that speaks the two
serving dialects the HTTP client measures, so the client is tested against real HTTP, real streaming
and real speculative decoding. ``EngineServer(engine, dialect="vllm" | "sglang")``.

Both dialects:
* ``POST /v1/completions`` (OpenAI; ``stream``; ``prompt`` text or token ids; ``max_tokens``;
  ``temperature``; ``stream_options.include_usage`` / ``continuous_usage_stats``; ``return_token_ids``):
  a streamed chunk carries every token one verify step committed (several tokens per chunk);
* ``GET /v1/models``, ``GET /health``.

vLLM dialect: ``POST /tokenize`` (``{"tokens", "count", "max_model_len"}``); ``GET /metrics``
(Prometheus, vLLM's counter names ``vllm:spec_decode_num_drafts_total``,
``vllm:spec_decode_num_draft_tokens_total``, ``vllm:spec_decode_num_accepted_tokens_total``, ...);
``GET /server_info`` (``{"vllm_config": "... speculative_config=SpeculativeConfig(method=...,
num_spec_tokens=...) ..."}``, as vLLM serves it in dev mode).

sglang dialect: ``POST /generate`` (``input_ids`` or ``text``, ``sampling_params.max_new_tokens``,
``stream``): cumulative ``text`` and ``meta_info`` (``prompt_tokens``, ``completion_tokens``,
``spec_verify_ct``, ``finish_reason``) per chunk; ``POST /v1/tokenize``; ``GET /server_info`` and
``GET /get_server_info`` (server arguments ``speculative_algorithm``, ``speculative_num_steps``,
``speculative_eagle_topk``, ``speculative_num_draft_tokens``, and ``internal_states``).

The advertised speculative configuration is the engine's own (``DecodeParams``) unless ``advertise``
overrides fields (tests of the client's configuration check). Requests that arrive while a batch runs
wait for the next batch (static batching). Bound to 127.0.0.1 on an ephemeral port by default.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_NAME = "eagle4-default"


class _Req:
    def __init__(self, ids, max_tokens, temperature):
        self.ids, self.max_tokens, self.temperature = ids, max_tokens, temperature
        self.q: queue.Queue = queue.Queue()
        self.chunks = 0  # streamed steps: the prefill's token, then one per verify step


class EngineWorker(threading.Thread):
    def __init__(self, engine, max_batch: int = 128, seed: int = 0):
        super().__init__(daemon=True, name="eagle4-engine")
        self.engine, self.max_batch, self.seed = engine, max_batch, seed
        self.pending: queue.Queue = queue.Queue()
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.counters = {"spec_decode_num_drafts": 0, "spec_decode_num_draft_tokens": 0,
                         "spec_decode_num_accepted_tokens": 0, "generation_tokens": 0, "prompt_tokens": 0,
                         "request_success": 0, "request_failure": 0}
        self.running = 0

    def submit(self, req: _Req):
        self.pending.put(req)

    def run(self):
        while not self.stop_flag.is_set():
            try:
                first = self.pending.get(timeout=0.05)
            except queue.Empty:
                continue
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    batch.append(self.pending.get_nowait())
                except queue.Empty:
                    break
            self._run_batch(batch)

    def _run_batch(self, batch):
        # requests of one batch share max_tokens = the largest; each stops at its own count
        n = max(r.max_tokens for r in batch)
        sent = [0] * len(batch)

        def on_step(_t, new):
            for i, toks in new.items():
                r = batch[i]
                keep = toks[: max(0, r.max_tokens - sent[i])]
                if keep:
                    sent[i] += len(keep)
                    r.chunks += 1
                    r.q.put(("tokens", keep, max(0, r.chunks - 1)))  # verify steps so far (sglang's spec_verify_ct)

        self.running = len(batch)
        self.seed += 1
        try:
            res = self.engine.generate([r.ids for r in batch], n, [r.temperature for r in batch], seed=self.seed,
                                       on_step=on_step)
        except Exception as e:  # report to every waiting client
            with self.lock:
                self.counters["request_failure"] += len(batch)
            for r in batch:
                r.q.put(("error", repr(e), 0))
            self.running = 0
            return
        S = self.engine.params.S
        with self.lock:
            for r, out in zip(batch, res, strict=False):
                steps = len(out.accept_lengths)
                self.counters["spec_decode_num_drafts"] += steps
                self.counters["spec_decode_num_draft_tokens"] += steps * (S - 1)
                self.counters["spec_decode_num_accepted_tokens"] += sum(a - 1 for a in out.accept_lengths)
                self.counters["generation_tokens"] += min(len(out.output_ids), r.max_tokens)
                self.counters["prompt_tokens"] += len(r.ids)
                self.counters["request_success"] += 1
        for r in batch:
            r.q.put(("done", None, max(0, r.chunks - 1)))
        self.running = 0

    def metrics_text(self) -> str:
        with self.lock:
            c = dict(self.counters)
        lines = []
        for k, v in c.items():
            name = f"vllm:{k}_total"
            lines += [f"# TYPE {name} counter", f'{name}{{model_name="{MODEL_NAME}"}} {float(v)}']
        lines += ["# TYPE vllm:num_requests_running gauge",
                  f'vllm:num_requests_running{{model_name="{MODEL_NAME}"}} {float(self.running)}']
        return "\n".join(lines) + "\n"


def spec_config_of(engine, advertise: dict | None = None) -> dict:
    """What the server advertises: the engine's own tree parameters unless overridden."""
    p = engine.params
    cfg = {"algorithm": "EAGLE", "num_steps": p.tree_depth, "topk": p.node_top_k, "num_draft_tokens": p.verify_num}
    return {**cfg, **(advertise or {})}


def make_handler(worker: EngineWorker, tokenizer, dialect: str, spec: dict, max_model_len: int):
    if dialect not in ("vllm", "sglang"):
        raise ValueError(f"dialect must be 'vllm' or 'sglang', not {dialect!r}")

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):  # quiet
            pass

        def _json(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _server_info(self):
            if dialect == "vllm":  # vLLM (dev mode) returns its config as one string
                return {"vllm_config": (f"model='{MODEL_NAME}', speculative_config=SpeculativeConfig("
                                        f"method='{str(spec['algorithm']).lower()}', model='{MODEL_NAME}-draft', "
                                        f"num_spec_tokens={spec['num_steps']}), seed=0")}
            with worker.lock:
                c = dict(worker.counters)
            return {"model_path": MODEL_NAME, "tokenizer_path": MODEL_NAME, "speculative_algorithm": spec["algorithm"],
                    "speculative_num_steps": spec["num_steps"], "speculative_eagle_topk": spec["topk"],
                    "speculative_num_draft_tokens": spec["num_draft_tokens"],
                    "internal_states": [{"avg_spec_accept_length": (
                        1 + c["spec_decode_num_accepted_tokens"] / c["spec_decode_num_drafts"]
                        if c["spec_decode_num_drafts"] else None)}]}

        def do_GET(self):
            path = self.path.split("?")[0]
            if path == "/metrics" and dialect == "vllm":
                body = worker.metrics_text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif path == "/server_info" or (path == "/get_server_info" and dialect == "sglang"):
                self._json(200, self._server_info())
            elif path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": MODEL_NAME, "object": "model",
                                                             "max_model_len": max_model_len}]})
            elif path == "/health":
                self._json(200, {"status": "ok"})
            else:
                self._json(404, {"error": f"no route {self.path}"})

        def _body(self) -> dict:
            n = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(n) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("request body must be a JSON object")
            return body

        def do_POST(self):
            path = self.path.split("?")[0]
            tok_path = "/tokenize" if dialect == "vllm" else "/v1/tokenize"
            try:
                body = self._body()
                if path == tok_path:
                    ids = tokenizer.encode(str(body.get("prompt", "")), bos=bool(body.get("add_special_tokens", True)))
                    self._json(200, {"tokens": ids, "count": len(ids), "max_model_len": max_model_len})
                    return
                if path == "/v1/completions":
                    prompt = body.get("prompt", "")
                    ids = list(prompt) if isinstance(prompt, list) else tokenizer.encode(str(prompt))
                    max_tokens, temp = int(body.get("max_tokens", 16)), float(body.get("temperature", 0.0))
                elif path == "/generate" and dialect == "sglang":
                    ids = body.get("input_ids") or tokenizer.encode(str(body.get("text", "")))
                    sp = body.get("sampling_params") or {}
                    max_tokens, temp = int(sp.get("max_new_tokens", 16)), float(sp.get("temperature", 0.0))
                else:
                    self._json(404, {"error": f"no route {self.path}"})
                    return
                if max_tokens < 1 or not ids or not all(isinstance(t, int) and 0 <= t < tokenizer.vocab_size for t in ids):
                    raise ValueError("max_tokens must be >= 1 and the prompt non-empty valid token ids")
            except (ValueError, TypeError, json.JSONDecodeError) as e:
                self._json(400, {"error": str(e)})
                return
            req = _Req([int(t) for t in ids], max_tokens, temp)
            worker.submit(req)
            if path == "/generate":
                self._stream_sglang(req, bool(body.get("stream")))
            else:
                self._completions(req, body)

        def _events(self, req):
            while True:
                kind, val, verify_ct = req.q.get()
                yield kind, val, verify_ct
                if kind != "tokens":
                    return

        def _sse_start(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True

        def _chunk(self, obj):
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

        def _stream_sglang(self, req, stream: bool):
            rid = uuid.uuid4().hex
            toks: list[int] = []

            def msg(verify_ct, finish):
                return {"text": tokenizer.decode(toks), "output_ids": list(toks),
                        "meta_info": {"id": rid, "prompt_tokens": len(req.ids), "completion_tokens": len(toks),
                                      "spec_verify_ct": verify_ct, "finish_reason": finish}}

            if not stream:
                for kind, val, vc in self._events(req):
                    if kind == "tokens":
                        toks.extend(val)
                    elif kind == "error":
                        self._json(500, {"error": val})
                        return
                    else:
                        self._json(200, msg(vc, {"type": "length", "length": len(toks)}))
                return
            self._sse_start()
            try:
                for kind, val, vc in self._events(req):
                    if kind == "tokens":
                        toks.extend(val)
                        self._chunk(msg(vc, None))
                    elif kind == "error":
                        self._chunk({"error": {"message": val}})
                    else:
                        self._chunk(msg(vc, {"type": "length", "length": len(toks)}))
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _completions(self, req, body):
            rid = "cmpl-" + uuid.uuid4().hex[:16]
            created = int(time.time())
            so = body.get("stream_options") or {}
            usage_wanted, continuous = bool(so.get("include_usage")), bool(so.get("continuous_usage_stats"))
            with_ids = bool(body.get("return_token_ids"))
            n_prompt = len(req.ids)

            def choice(val, finish):
                c = {"index": 0, "text": tokenizer.decode(val), "finish_reason": finish}
                if with_ids:
                    c["token_ids"] = list(val)
                return c

            def usage(n):
                return {"prompt_tokens": n_prompt, "completion_tokens": n, "total_tokens": n_prompt + n}

            head = {"id": rid, "object": "text_completion", "created": created, "model": MODEL_NAME}
            if not body.get("stream"):
                toks = []
                for kind, val, _ in self._events(req):
                    if kind == "tokens":
                        toks += val
                    elif kind == "error":
                        self._json(500, {"error": val})
                        return
                self._json(200, {**head, "choices": [choice(toks, "length")], "usage": usage(len(toks))})
                return
            self._sse_start()
            sent = 0
            try:
                for kind, val, _ in self._events(req):
                    if kind == "tokens":
                        sent += len(val)
                        self._chunk({**head, "choices": [choice(val, None)], **({"usage": usage(sent)} if continuous else {})})
                    elif kind == "error":
                        self._chunk({"error": {"message": val}})
                    else:
                        self._chunk({**head, "choices": [choice([], "length")]})
                        if usage_wanted:
                            self._chunk({**head, "choices": [], "usage": usage(sent)})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

    return H


class EngineServer:
    """``with EngineServer(engine) as s: s.url``: serves on 127.0.0.1, ephemeral port."""

    def __init__(self, engine, host: str = "127.0.0.1", port: int = 0, max_batch: int = 128, *,
                 dialect: str = "vllm", advertise: dict | None = None):
        self.worker = EngineWorker(engine, max_batch=max_batch)
        self.dialect = dialect
        self.spec = spec_config_of(engine, advertise)
        handler = make_handler(self.worker, engine.tokenizer, dialect, self.spec,
                               engine.target.config.max_position_embeddings)
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        h, p = self.httpd.server_address[:2]
        return f"http://{h}:{p}"

    def start(self):
        self.worker.start()
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.worker.stop_flag.set()
        self.worker.join(timeout=10)
        self.thread.join(timeout=10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def serve_forever(contract, backend="ref", host="127.0.0.1", port=0, device="cpu", dialect="vllm"):
    from eagle4.workload.engine import LocalEngine

    eng = LocalEngine.from_contract(contract, backend, device=device)
    srv = EngineServer(eng, host, port, dialect=dialect).start()
    print(f"serving {MODEL_NAME} on {srv.url} ({dialect} dialect; Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()

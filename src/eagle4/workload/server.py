"""A minimal OpenAI-compatible streaming server around the local engine (stdlib ``http.server``).

Endpoints:
* ``POST /v1/completions`` (``stream`` true/false; ``prompt`` text or token ids; ``max_tokens``;
  ``temperature``; ``stream_options.include_usage``; ``return_token_ids``): each streamed chunk
  carries every token one verify step committed (so one chunk may hold several tokens) with
  ``choices[0].token_ids``, and the final usage chunk carries the token counts;
* ``GET /metrics``: Prometheus text with vLLM's counter names
  (``vllm:spec_decode_num_drafts_total``, ``vllm:spec_decode_num_draft_tokens_total``,
  ``vllm:spec_decode_num_accepted_tokens_total``, ``vllm:generation_tokens_total``,
  ``vllm:prompt_tokens_total``, ``vllm:request_success_total``);
* ``GET /get_server_info``: sglang-style info with the same cumulative counters;
* ``GET /v1/models``, ``GET /health``.

Requests that arrive while a batch runs wait for the next batch (static batching); a batch takes
every waiting request (up to ``max_batch``). Bound to 127.0.0.1 on an ephemeral port by default.
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
                    r.q.put(("tokens", keep))

        self.running = len(batch)
        self.seed += 1
        try:
            res = self.engine.generate([r.ids for r in batch], n, [r.temperature for r in batch], seed=self.seed,
                                       on_step=on_step)
        except Exception as e:  # report to every waiting client
            with self.lock:
                self.counters["request_failure"] += len(batch)
            for r in batch:
                r.q.put(("error", repr(e)))
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
            r.q.put(("done", None))
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


def make_handler(worker: EngineWorker, tokenizer):
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

        def do_GET(self):
            if self.path.startswith("/metrics"):
                body = worker.metrics_text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif self.path.startswith("/get_server_info"):
                with worker.lock:
                    c = dict(worker.counters)
                self._json(200, {"model_path": MODEL_NAME, "speculative_algorithm": "EAGLE",
                                 "internal_states": [{"spec_num_verify_ct_total": c["spec_decode_num_drafts"],
                                                      "spec_num_accepted_tokens_total": c["spec_decode_num_accepted_tokens"]}]})
            elif self.path.startswith("/v1/models"):
                self._json(200, {"object": "list", "data": [{"id": MODEL_NAME, "object": "model"}]})
            elif self.path.startswith("/health"):
                self._json(200, {"status": "ok"})
            else:
                self._json(404, {"error": f"no route {self.path}"})

        def do_POST(self):
            if not self.path.startswith("/v1/completions"):
                self._json(404, {"error": f"no route {self.path}"})
                return
            try:
                n = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(n) or b"{}")
                prompt = body.get("prompt", "")
                ids = list(prompt) if isinstance(prompt, list) else tokenizer.encode(str(prompt))
                max_tokens = int(body.get("max_tokens", 16))
                temp = float(body.get("temperature", 0.0))
                if max_tokens < 1 or not ids:
                    raise ValueError("max_tokens must be >= 1 and the prompt non-empty")
            except (ValueError, TypeError, json.JSONDecodeError) as e:
                self._json(400, {"error": str(e)})
                return
            req = _Req(ids, max_tokens, temp)
            worker.submit(req)
            rid = "cmpl-" + uuid.uuid4().hex[:16]
            created = int(time.time())
            usage_wanted = bool((body.get("stream_options") or {}).get("include_usage"))
            if not body.get("stream"):
                toks, err = [], None
                while True:
                    kind, val = req.q.get()
                    if kind == "tokens":
                        toks += val
                    elif kind == "error":
                        err = val
                        break
                    else:
                        break
                if err:
                    self._json(500, {"error": err})
                    return
                self._json(200, {"id": rid, "object": "text_completion", "created": created, "model": MODEL_NAME,
                                 "choices": [{"index": 0, "text": tokenizer.decode(toks), "token_ids": toks,
                                              "finish_reason": "length"}],
                                 "usage": {"prompt_tokens": len(ids), "completion_tokens": len(toks),
                                           "total_tokens": len(ids) + len(toks)}})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            sent = 0

            def chunk(obj):
                self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
                self.wfile.flush()

            try:
                while True:
                    kind, val = req.q.get()
                    if kind == "tokens":
                        sent += len(val)
                        chunk({"id": rid, "object": "text_completion", "created": created, "model": MODEL_NAME,
                               "choices": [{"index": 0, "text": tokenizer.decode(val), "token_ids": val,
                                            "finish_reason": None}]})
                    elif kind == "error":
                        chunk({"error": {"message": val}})
                        break
                    else:
                        chunk({"id": rid, "object": "text_completion", "created": created, "model": MODEL_NAME,
                               "choices": [{"index": 0, "text": "", "token_ids": [], "finish_reason": "length"}]})
                        if usage_wanted:
                            chunk({"id": rid, "object": "text_completion", "created": created, "model": MODEL_NAME,
                                   "choices": [], "usage": {"prompt_tokens": len(ids), "completion_tokens": sent,
                                                            "total_tokens": len(ids) + sent}})
                        break
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

    return H


class EngineServer:
    """``with EngineServer(engine) as s: s.url``: serves on 127.0.0.1, ephemeral port."""

    def __init__(self, engine, host: str = "127.0.0.1", port: int = 0, max_batch: int = 128):
        self.worker = EngineWorker(engine, max_batch=max_batch)
        self.httpd = ThreadingHTTPServer((host, port), make_handler(self.worker, engine.tokenizer))
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


def serve_forever(contract, backend="ref", host="127.0.0.1", port=0, device="cpu"):
    from eagle4.workload.engine import LocalEngine

    eng = LocalEngine.from_contract(contract, backend, device=device)
    srv = EngineServer(eng, host, port).start()
    print(f"serving {MODEL_NAME} on {srv.url} (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()

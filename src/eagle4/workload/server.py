"""A streaming server around the engine (FastAPI on uvicorn, the stack vLLM and sglang serve
through) that speaks the two serving dialects real benchmark clients call, so clients are tested
against real HTTP, real streaming and real speculative decoding. ``EngineServer(engine,
dialect="vllm" | "sglang")``.

Both dialects:
* ``POST /v1/completions`` (OpenAI; ``stream``; ``prompt`` text or token ids; ``max_tokens``;
  ``temperature``; ``stream_options.include_usage`` / ``continuous_usage_stats``; ``return_token_ids``)
  and ``POST /v1/chat/completions`` (``messages``; ``max_completion_tokens`` / ``max_tokens``; the
  message texts are joined by newlines: the embedded model has no chat template). A streamed chunk
  carries every token one verify step committed (several tokens per chunk);
* ``GET /v1/models`` (``id``, ``object``, ``created``, ``owned_by``, ``root`` = the model folder, so a
  client loads the tokenizer from it, ``parent``, ``max_model_len``), ``GET /health``, ``GET /version``.

vLLM dialect: ``POST /tokenize`` (``{"tokens", "count", "max_model_len"}``), ``POST /detokenize``
(``{"prompt"}``); ``GET /metrics`` (Prometheus, vLLM's counter names, cumulative since start);
``GET /server_info`` (``{"vllm_config": "... speculative_config=SpeculativeConfig(method='eagle',
model=..., num_spec_tokens=N)"}``, as vLLM serves it in dev mode; ``?config_format=json`` gives the
same as an object). vLLM's vocabulary has no dynamic tree: ``num_spec_tokens`` is the number of draft
tokens verified per step (``verify_num - 1``), and ``spec_decode_num_draft_tokens`` counts that many
per draft, so vLLM's acceptance rate is accepted / verified draft tokens of the tree.

sglang dialect: ``POST /generate`` (``input_ids`` or ``text``, ``sampling_params.max_new_tokens``,
``stream``): cumulative ``text`` and ``meta_info`` (``prompt_tokens``, ``completion_tokens``,
``spec_verify_ct``, ``finish_reason``) per chunk; ``POST /v1/tokenize``, ``POST /v1/detokenize``;
``GET /server_info`` and ``GET /get_server_info`` (``version`` and the server arguments
``speculative_algorithm``, ``speculative_num_steps``, ``speculative_eagle_topk``,
``speculative_num_draft_tokens`` -- sglang's own tree vocabulary -- and ``internal_states``);
``GET /get_model_info`` and ``/model_info``; ``GET|POST /flush_cache[?timeout=s]`` resets the per-run
acceptance counter (``avg_spec_accept_length``) once no request runs or waits (waiting up to ``timeout``
seconds; 400 otherwise), as sglang does, so each benchmark run reports its own.

Every server reports ``engine: "eagle4"`` and its ``version`` in its server info: a result file that
stores it says which engine was measured.

Bounds (no request can exhaust the server): a request body is at most ``max_body_bytes`` (413); the
body must arrive within ``read_timeout_s`` (408); prompt tokens + ``max_tokens`` <= ``max_model_len``
(400); temperature finite and >= 0 (400; greedy when not given); at most ``max_queue`` requests wait for the engine (503).
The engine runs in its own thread (static batching: requests that arrive while a batch runs wait for
the next), so ``/health`` answers while a generation runs; idle connections hold no thread (uvicorn's
``timeout_keep_alive`` closes them). Bound to 127.0.0.1 on an ephemeral port by default.
"""

from __future__ import annotations

import asyncio
import json
import math
import socket
import threading
import time
import uuid
from importlib import metadata

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse

MODEL_NAME = "eagle4-default"
ENGINE_NAME = "eagle4"
MAX_BODY_BYTES = 1 << 20  # ~10x the largest prompt of max_model_len tokens as text or as token ids
READ_TIMEOUT_S = 10.0
KEEP_ALIVE_S = 5


def engine_version() -> str:
    try:
        return metadata.version("eagle4-signoff")
    except metadata.PackageNotFoundError:  # a checkout that is not installed
        return "0+unknown"


class RequestError(ValueError):
    """A request the server refuses; ``status`` is its HTTP code."""

    def __init__(self, status: int, msg: str):
        super().__init__(msg)
        self.status = status


class _Req:
    """One admitted request; the engine thread posts its events onto the server's event loop."""

    def __init__(self, ids, max_tokens, temperature, loop: asyncio.AbstractEventLoop):
        self.ids, self.max_tokens, self.temperature = ids, max_tokens, temperature
        self.loop = loop
        self.q: asyncio.Queue = asyncio.Queue()
        self.chunks = 0  # streamed steps: the prefill's token, then one per verify step

    def post(self, ev):
        self.loop.call_soon_threadsafe(self.q.put_nowait, ev)


_COUNTERS = ("spec_decode_num_drafts", "spec_decode_num_draft_tokens", "spec_decode_num_accepted_tokens",
             "generation_tokens", "prompt_tokens", "request_success", "request_failure")


class EngineWorker(threading.Thread):
    """The engine's thread: takes waiting requests in static batches of at most ``max_batch``."""

    def __init__(self, engine, max_batch: int = 128, seed: int = 0, max_queue: int = 512):
        super().__init__(daemon=True, name="eagle4-engine")
        self.engine, self.max_batch, self.seed, self.max_queue = engine, max_batch, seed, max_queue
        self.cv = threading.Condition()
        self.waiting: list[_Req] = []
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.counters = dict.fromkeys(_COUNTERS, 0)  # cumulative since start (vLLM /metrics)
        self.run_counters = {"drafts": 0, "accepted": 0}  # since the last /flush_cache (sglang)
        self.running = 0
        self.draft_tokens_per_step = engine.params.verify_num - 1

    def submit(self, req: _Req):
        with self.cv:
            if len(self.waiting) >= self.max_queue:
                raise RequestError(503, f"server busy: {len(self.waiting)} requests already wait for the engine")
            self.waiting.append(req)
            self.cv.notify()

    def stop(self):
        self.stop_flag.set()
        with self.cv:
            self.cv.notify_all()

    def idle(self) -> bool:
        with self.cv:
            return not self.waiting and not self.running

    def flush(self):
        with self.lock:
            self.run_counters = {"drafts": 0, "accepted": 0}

    def run(self):
        while not self.stop_flag.is_set():
            with self.cv:
                while not self.waiting and not self.stop_flag.is_set():
                    self.cv.wait(0.5)
                if self.stop_flag.is_set():
                    return
                batch, self.waiting = self.waiting[: self.max_batch], self.waiting[self.max_batch:]
                self.running = len(batch)
            try:
                self._run_batch(batch)
            finally:
                with self.cv:
                    self.running = 0

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
                    r.post(("tokens", list(keep), max(0, r.chunks - 1)))  # verify steps so far (spec_verify_ct)

        self.seed += 1
        try:
            res = self.engine.generate([r.ids for r in batch], n, [r.temperature for r in batch], seed=self.seed,
                                       on_step=on_step)
        except Exception as e:  # report to every waiting client
            with self.lock:
                self.counters["request_failure"] += len(batch)
            for r in batch:
                r.post(("error", repr(e), 0))
            return
        with self.lock:
            for r, out, k in zip(batch, res, sent, strict=True):
                steps = len(out.accept_lengths)
                accepted = sum(a - 1 for a in out.accept_lengths)
                self.counters["spec_decode_num_drafts"] += steps
                self.counters["spec_decode_num_draft_tokens"] += steps * self.draft_tokens_per_step
                self.counters["spec_decode_num_accepted_tokens"] += accepted
                self.counters["generation_tokens"] += k
                self.counters["prompt_tokens"] += len(r.ids)
                self.counters["request_success"] += 1
                self.run_counters["drafts"] += steps
                self.run_counters["accepted"] += accepted
        for r in batch:
            r.post(("done", None, max(0, r.chunks - 1)))

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

    def avg_accept_length(self) -> float | None:
        with self.lock:
            c = dict(self.run_counters)
        return 1 + c["accepted"] / c["drafts"] if c["drafts"] else None


def spec_config_of(engine, advertise: dict | None = None) -> dict:
    """What the server advertises: the engine's own tree parameters unless overridden."""
    p = engine.params
    cfg = {"algorithm": "EAGLE", "num_steps": p.tree_depth, "topk": p.node_top_k, "num_draft_tokens": p.verify_num}
    return {**cfg, **(advertise or {})}


# ---- request parsing (pure: the bounds live here) ------------------------------------------------------
def _finite(name, v, default, *, lo=None) -> float:
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise RequestError(400, f"{name} must be a number, got {v!r}")
    v = float(v)
    if not math.isfinite(v) or (lo is not None and v < lo):
        raise RequestError(400, f"{name} must be a finite number >= {lo}, got {v!r}")
    return v


def _max_tokens(v, n_prompt: int, max_model_len: int, default: int | None) -> int:
    left = max_model_len - n_prompt
    if v is None:
        v = left if default is None else min(default, left)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise RequestError(400, f"max_tokens must be a positive integer, got {v!r}")
    if v > left:
        raise RequestError(400, f"This model's maximum context length is {max_model_len} tokens. However, you "
                                f"requested {n_prompt + v} tokens ({n_prompt} in the prompt, {v} in the completion). "
                                "Please reduce the length of the prompt or completion.")
    return v


def _check_prompt(ids, vocab: int, max_model_len: int) -> list[int]:
    if not isinstance(ids, list) or not ids:
        raise RequestError(400, "the prompt must be non-empty text or a non-empty list of token ids")
    if len(ids) >= max_model_len:
        raise RequestError(400, f"This model's maximum context length is {max_model_len} tokens. However, your "
                                f"prompt has {len(ids)} tokens (no room left for a completion).")
    if not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < vocab for t in ids):
        raise RequestError(400, f"token ids must be integers in [0, {vocab})")
    return ids


def _chat_text(messages) -> str:
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "messages must be a non-empty list")
    parts = []
    for m in messages:
        c = m.get("content") if isinstance(m, dict) else None
        if isinstance(c, list):
            c = "".join(p.get("text", "") for p in c if isinstance(p, dict) and p.get("type") == "text")
        if not isinstance(c, str):
            raise RequestError(400, "each message needs a text content")
        parts.append(c)
    return "\n".join(parts)


def build_app(worker: EngineWorker, tokenizer, dialect: str, spec: dict, max_model_len: int, *,
              model_root: str = MODEL_NAME, max_body_bytes: int = MAX_BODY_BYTES,
              read_timeout_s: float = READ_TIMEOUT_S):
    if dialect not in ("vllm", "sglang"):
        raise ValueError(f"dialect must be 'vllm' or 'sglang', not {dialect!r}")
    app = FastAPI(title=f"eagle4 workload serve ({dialect} dialect)", docs_url=None, redoc_url=None,
                  openapi_url=None)
    version = engine_version()
    created = int(time.time())
    vocab = tokenizer.vocab_size

    @app.exception_handler(RequestError)
    async def _refused(_request, e: RequestError):
        if dialect == "vllm":
            return JSONResponse({"error": {"message": str(e), "type": "BadRequestError", "code": e.status}},
                                status_code=e.status)
        return JSONResponse({"error": {"message": str(e), "code": e.status}}, status_code=e.status)

    async def body_of(request: Request) -> dict:
        n = request.headers.get("content-length")
        if n is not None and (not n.isdigit() or int(n) > max_body_bytes):
            raise RequestError(413 if n.isdigit() else 400,
                               f"request body of {n} bytes (limit {max_body_bytes})")
        buf = bytearray()

        async def read():
            async for chunk in request.stream():
                buf.extend(chunk)
                if len(buf) > max_body_bytes:
                    raise RequestError(413, f"request body over {max_body_bytes} bytes")

        try:
            await asyncio.wait_for(read(), read_timeout_s)
        except asyncio.TimeoutError:
            raise RequestError(408, f"request body not received within {read_timeout_s:g} s") from None
        try:
            body = json.loads(bytes(buf) or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise RequestError(400, f"request body is not JSON: {e}") from None
        if not isinstance(body, dict):
            raise RequestError(400, "request body must be a JSON object")
        return body

    async def encode(text, bos=True) -> list[int]:
        if not isinstance(text, str):
            raise RequestError(400, f"expected text, got {type(text).__name__}")
        return await asyncio.to_thread(tokenizer.encode, text, bos=bos)

    async def prompt_ids(prompt) -> list[int]:
        ids = prompt if isinstance(prompt, list) else await encode(prompt)
        return _check_prompt(ids, vocab, max_model_len)

    def admit(ids, max_tokens, temperature) -> _Req:
        req = _Req(list(ids), max_tokens, temperature, asyncio.get_running_loop())
        worker.submit(req)
        return req

    async def events(req):
        while True:
            kind, val, verify_ct = await req.q.get()
            yield kind, val, verify_ct
            if kind != "tokens":
                return

    def sse(obj) -> bytes:
        return b"data: " + json.dumps(obj).encode() + b"\n\n"

    # ---- both dialects ----
    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/version")
    async def version_route():
        return {"version": version}

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "created": created,
                                            "owned_by": ENGINE_NAME, "root": model_root, "parent": None,
                                            "max_model_len": max_model_len, "permission": []}]}

    def server_info(config_format: str = "text"):
        if dialect == "vllm":  # vLLM (dev mode) returns its config as one string, or as JSON on request
            n = worker.draft_tokens_per_step
            method = str(spec["algorithm"]).lower()
            if config_format == "json":
                cfg = {"model_config": {"model": model_root, "max_model_len": max_model_len},
                       "speculative_config": {"method": method, "model": f"{MODEL_NAME}-draft",
                                              "num_speculative_tokens": n}}
            else:
                cfg = (f"model='{model_root}', speculative_config=SpeculativeConfig(method='{method}', "
                       f"model='{MODEL_NAME}-draft', num_spec_tokens={n}), seed=0")
            return {"vllm_config": cfg, "engine": ENGINE_NAME, "version": version}
        return {"model_path": model_root, "tokenizer_path": model_root, "served_model_name": MODEL_NAME,
                "context_length": max_model_len, "engine": ENGINE_NAME, "version": version,
                "speculative_algorithm": spec["algorithm"], "speculative_num_steps": spec["num_steps"],
                "speculative_eagle_topk": spec["topk"], "speculative_num_draft_tokens": spec["num_draft_tokens"],
                "internal_states": [{"avg_spec_accept_length": worker.avg_accept_length()}]}

    @app.get("/server_info")
    async def server_info_route(config_format: str = "text"):
        return server_info(config_format)

    if dialect == "sglang":
        app.get("/get_server_info")(server_info_route)

        @app.api_route("/flush_cache", methods=["GET", "POST"])
        async def flush_cache(timeout: float = 0.0):
            # as sglang: wait up to ``timeout`` seconds for running and waiting requests to finish
            wait = min(timeout, 300.0) if math.isfinite(timeout) and timeout > 0 else 0.0
            deadline = time.monotonic() + wait
            while not worker.idle() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            if not worker.idle():
                return PlainTextResponse("Cache not flushed: requests are running.", status_code=400)
            worker.flush()
            return PlainTextResponse("Cache flushed.\nPlease check backend logs for more details. "
                                     "(When there are running or waiting requests, the operation will not be performed.)\n")

        @app.get("/get_model_info")
        @app.get("/model_info")
        async def model_info():
            return {"model_path": model_root, "tokenizer_path": model_root, "is_generation": True,
                    "weight_version": "default", "has_image_understanding": False, "has_audio_understanding": False,
                    "model_type": "llama", "architectures": ["LlamaForCausalLM"]}
    else:
        @app.get("/metrics")
        async def metrics():
            return PlainTextResponse(worker.metrics_text(), media_type="text/plain; version=0.0.4")

        @app.post("/reset_prefix_cache")
        async def reset_prefix_cache():
            return PlainTextResponse("")

    tok_path, detok_path = ("/tokenize", "/detokenize") if dialect == "vllm" else ("/v1/tokenize", "/v1/detokenize")

    @app.post(tok_path)
    async def tokenize(request: Request):
        body = await body_of(request)
        ids = await encode(body.get("prompt", ""), bos=bool(body.get("add_special_tokens", True)))
        return {"tokens": ids, "count": len(ids), "max_model_len": max_model_len}

    @app.post(detok_path)
    async def detokenize(request: Request):
        body = await body_of(request)
        toks = body.get("tokens")
        if not isinstance(toks, list) or not all(isinstance(t, int) and 0 <= t < vocab for t in toks):
            raise RequestError(400, f"tokens must be a list of token ids in [0, {vocab})")
        return {"prompt": tokenizer.decode(toks)}

    # ---- OpenAI completions and chat completions ----
    async def openai(body: dict, ids: list[int], chat: bool, max_tokens):
        max_tokens = _max_tokens(max_tokens, len(ids), max_model_len, None if chat else 16)
        temp = _finite("temperature", body.get("temperature"), 0.0, lo=0.0)
        req = admit(ids, max_tokens, temp)
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:16]
        so = body.get("stream_options") or {}
        usage_wanted, continuous = bool(so.get("include_usage")), bool(so.get("continuous_usage_stats"))
        with_ids = bool(body.get("return_token_ids"))
        n_prompt = len(ids)
        head = {"id": rid, "object": "chat.completion.chunk" if chat else "text_completion",
                "created": int(time.time()), "model": MODEL_NAME}

        def choice(val, finish, *, first=False, whole=False):
            text = tokenizer.decode(val)
            if chat:
                msg = {"role": "assistant", "content": text} if (first or whole) else {"content": text}
                c = {"index": 0, ("message" if whole else "delta"): msg, "finish_reason": finish}
            else:
                c = {"index": 0, "text": text, "finish_reason": finish}
            if with_ids:
                c["token_ids"] = list(val)
            return c

        def usage(n):
            return {"prompt_tokens": n_prompt, "completion_tokens": n, "total_tokens": n_prompt + n}

        if not body.get("stream"):
            toks: list[int] = []
            async for kind, val, _ in events(req):
                if kind == "tokens":
                    toks += val
                elif kind == "error":
                    return JSONResponse({"error": {"message": val, "code": 500}}, status_code=500)
            obj = "chat.completion" if chat else "text_completion"
            return {**head, "object": obj, "choices": [choice(toks, "length", whole=True)], "usage": usage(len(toks))}

        async def stream():
            sent = 0
            async for kind, val, _ in events(req):
                if kind == "tokens":
                    first = sent == 0
                    sent += len(val)
                    yield sse({**head, "choices": [choice(val, None, first=first)],
                               **({"usage": usage(sent)} if continuous else {})})
                elif kind == "error":
                    yield sse({"error": {"message": val, "code": 500}})
                else:
                    yield sse({**head, "choices": [choice([], "length")]})
                    if usage_wanted:
                        yield sse({**head, "choices": [], "usage": usage(sent)})
            yield b"data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    @app.post("/v1/completions")
    async def completions(request: Request):
        body = await body_of(request)
        ids = await prompt_ids(body.get("prompt", ""))
        return await openai(body, ids, False, body.get("max_tokens"))

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        body = await body_of(request)
        ids = await prompt_ids(_chat_text(body.get("messages")))
        mt = body.get("max_completion_tokens")
        return await openai(body, ids, True, mt if mt is not None else body.get("max_tokens"))

    # ---- sglang native ----
    if dialect == "sglang":
        @app.post("/generate")
        async def generate(request: Request):
            body = await body_of(request)
            ids = await prompt_ids(body["input_ids"] if body.get("input_ids") is not None else body.get("text", ""))
            sp = body.get("sampling_params") or {}
            if not isinstance(sp, dict):
                raise RequestError(400, "sampling_params must be an object")
            max_tokens = _max_tokens(sp.get("max_new_tokens"), len(ids), max_model_len, 128)
            temp = _finite("sampling_params.temperature", sp.get("temperature"), 0.0, lo=0.0)
            req = admit(ids, max_tokens, temp)
            rid = uuid.uuid4().hex
            toks: list[int] = []

            def msg(verify_ct, finish):
                return {"text": tokenizer.decode(toks), "output_ids": list(toks),
                        "meta_info": {"id": rid, "prompt_tokens": len(ids), "completion_tokens": len(toks),
                                      "spec_verify_ct": verify_ct, "finish_reason": finish}}

            if not body.get("stream"):
                async for kind, val, vc in events(req):
                    if kind == "tokens":
                        toks.extend(val)
                    elif kind == "error":
                        return JSONResponse({"error": {"message": val, "code": 500}}, status_code=500)
                    else:
                        return msg(vc, {"type": "length", "length": len(toks)})

            async def stream():
                async for kind, val, vc in events(req):
                    if kind == "tokens":
                        toks.extend(val)
                        yield sse(msg(vc, None))
                    elif kind == "error":
                        yield sse({"error": {"message": val}})
                    else:
                        yield sse(msg(vc, {"type": "length", "length": len(toks)}))
                yield b"data: [DONE]\n\n"

            return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    return app


class EngineServer:
    """``with EngineServer(engine) as s: s.url``: serves on 127.0.0.1, ephemeral port."""

    def __init__(self, engine, host: str = "127.0.0.1", port: int = 0, max_batch: int = 128, *,
                 dialect: str = "vllm", advertise: dict | None = None, max_body_bytes: int = MAX_BODY_BYTES,
                 read_timeout_s: float = READ_TIMEOUT_S, max_queue: int = 512):
        import uvicorn

        self.worker = EngineWorker(engine, max_batch=max_batch, max_queue=max_queue)
        self.dialect = dialect
        self.spec = spec_config_of(engine, advertise)
        root = getattr(engine, "paths", (MODEL_NAME,))[0]
        self.app = build_app(self.worker, engine.tokenizer, dialect, self.spec,
                             engine.max_model_len, model_root=str(root),
                             max_body_bytes=max_body_bytes, read_timeout_s=read_timeout_s)
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        # h11: bounded header size; keep-alive idle connections are closed after KEEP_ALIVE_S
        cfg = uvicorn.Config(self.app, log_level="warning", access_log=False, http="h11", lifespan="off",
                             timeout_keep_alive=KEEP_ALIVE_S, h11_max_incomplete_event_size=64 << 10,
                             timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(cfg)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True,
                                       name="eagle4-http")

    @property
    def url(self) -> str:
        h, p = self.sock.getsockname()[:2]
        return f"http://[{h}]:{p}" if ":" in h else f"http://{h}:{p}"

    def start(self):
        self.worker.start()
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the HTTP server did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self):
        self.server.should_exit = True
        self.worker.stop()
        self.thread.join(timeout=10)
        self.worker.join(timeout=10)
        self.sock.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def serve_forever(contract, backend="ref", host="127.0.0.1", port=0, device="cpu", dialect="vllm"):
    from eagle4.workload.engine import DeviceEngine

    eng = DeviceEngine(contract, backend, device=device)
    srv = EngineServer(eng, host, port, dialect=dialect).start()
    print(f"serving {MODEL_NAME} on {srv.url} ({dialect} dialect; Ctrl-C stops)", flush=True)
    try:
        while srv.thread.is_alive():
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()

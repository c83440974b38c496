"""sglang ``bench_serving`` JSONL (``python -m sglang.bench_serving --output-file x.jsonl``): one
JSON object appended per benchmark run.

Each line: ``backend``, ``dataset_name``, ``request_rate``, ``max_concurrency``,
``sharegpt_output_len``, ``random_input_len``, ``random_output_len``, ``random_range_ratio``,
(newer) ``tag`` and ``server_info``, then ``duration``, ``completed``, ``total_input_tokens``,
``total_output_tokens``, ``request_throughput``, ``input_throughput``, ``output_throughput``,
``{mean,median,std,p99}_{e2e_latency,ttft,tpot,itl}_ms``, ``concurrency`` and ``accept_length``
(mean tokens per verify step with speculative decoding, else null).

The random dataset's lengths are the scenario's context and decode steps only when
``random_range_ratio`` is 1 (fixed lengths); otherwise, and for the device and commit, a sidecar
supplies them. The speculative tokens are the draft tokens verified per step
(``speculative_num_draft_tokens - 1`` of the stored server info, vLLM's ``num_speculative_tokens``).

The engine measured is the one the stored ``server_info`` names (sglang's own, or a server that
names itself); ``backend`` is only the client's request format and names no engine. Failed requests:
the file has no ``failed`` field; with ``--output-details`` its ``errors`` list counts them, else the
sidecar must say (``failed_requests``). ``*_itl_ms`` are per token for the native ``/generate``
backends (the client divides a chunk's gap among its tokens) and for ``sglang-oai*`` with an accept
length (re-tokenized), else per streamed chunk: ``itl_token_ms_*`` or ``itl_chunk_ms_*``.
"""

from __future__ import annotations

from typing import Any

from eagle4.engines.rows import ResultFormatError, get, number
from eagle4.engines.serving import engine_of_server_info, first_error, serving_metrics

FORMAT = "sglang-bench-serving"
_PER_TOKEN_ITL = ("sglang", "sglang-native")
_RETOKENIZED_ITL = ("sglang-oai", "sglang-oai-chat")


def itl_kind(backend: str, accept_length) -> str:
    """What the file's ``*_itl_ms`` measure, by sglang ``bench_serving``'s own rule."""
    if backend in _PER_TOKEN_ITL:
        return "token"
    if backend in _RETOKENIZED_ITL and isinstance(accept_length, (int, float)) and accept_length > 0:
        return "token"
    return "chunk"


def matches(obj: Any) -> bool:
    return isinstance(obj, dict) and "output_throughput" in obj and "dataset_name" in obj and "model_id" not in obj


def parse(obj: dict, where: str) -> dict[str, Any]:
    backend = str(get(where, obj, "backend"))
    m = serving_metrics(obj, where, {"ttft": "ttft", "tpot": "tpot", "e2el": "e2e_latency"},
                        itl_kind=itl_kind(backend, obj.get("accept_length")))
    if m["completed_requests"] and obj.get("accept_length") is not None:
        m["mean_acceptance_length"] = number(where, "accept_length", obj["accept_length"])
    server = obj.get("server_info") or {}
    if not isinstance(server, dict):
        raise ResultFormatError(f"{where}: field 'server_info': expected an object")
    engine, version = engine_of_server_info(server)
    fixed = obj.get("random_range_ratio") is not None and \
        number(where, "random_range_ratio", obj["random_range_ratio"]) == 1.0 and \
        str(obj.get("dataset_name", "")).startswith("random")
    spec_tokens = None
    if "speculative_algorithm" in server and server["speculative_algorithm"] in (None, "", "NONE"):
        spec_tokens = 0
    elif server.get("speculative_num_draft_tokens") is not None:  # verified per step, the root included
        spec_tokens = number(where, "server_info.speculative_num_draft_tokens",
                             server["speculative_num_draft_tokens"], integer=True) - 1
    return {
        "engine": engine,
        "engine_version": version,
        "device": None,
        "commit": None,
        "context": number(where, "random_input_len", obj["random_input_len"], integer=True) if fixed else None,
        "batch": number(where, "max_concurrency", obj["max_concurrency"], integer=True)
        if obj.get("max_concurrency") is not None else None,
        "spec_tokens": spec_tokens,
        "decode_steps": number(where, "random_output_len", obj["random_output_len"], integer=True) if fixed else None,
        "label": str(obj.get("tag") or ""),
        "runs": 1,
        "timestamp": "",
        "metrics": m,
        "extra": {"dataset_name": obj.get("dataset_name"), "request_rate": obj.get("request_rate"), "backend": backend,
                  "first_error": first_error(obj)},
    }

"""sglang ``bench_serving`` JSONL (``python -m sglang.bench_serving --output-file x.jsonl``): one
JSON object appended per benchmark run.

Each line: ``backend``, ``dataset_name``, ``request_rate``, ``max_concurrency``,
``sharegpt_output_len``, ``random_input_len``, ``random_output_len``, ``random_range_ratio``,
(newer) ``tag`` and ``server_info``, then ``duration``, ``completed``, ``total_input_tokens``,
``total_output_tokens``, ``request_throughput``, ``input_throughput``, ``output_throughput``,
``{mean,median,std,p99}_{e2e_latency,ttft,tpot,itl}_ms``, ``concurrency`` and ``accept_length``
(mean tokens per verify step with speculative decoding, else null).

The random dataset's lengths are the scenario's context and decode steps only when
``random_range_ratio`` is 1 (fixed lengths); otherwise, and for the device, commit and speculative
tokens, a sidecar supplies them. ``backend`` names the engine that was benchmarked.
"""

from __future__ import annotations

from typing import Any

from eagle4.engines.rows import ResultFormatError, get, number, serving_metrics

FORMAT = "sglang-bench-serving"
_ENGINES = {"sglang": "sglang", "sglang-native": "sglang", "sglang-oai": "sglang", "sglang-oai-chat": "sglang",
            "vllm": "vllm", "vllm-chat": "vllm", "lmdeploy": "lmdeploy", "lmdeploy-chat": "lmdeploy",
            "trt": "tensorrt-llm"}


def matches(obj: Any) -> bool:
    return isinstance(obj, dict) and "output_throughput" in obj and "dataset_name" in obj and "model_id" not in obj


def parse(obj: dict, where: str) -> dict[str, Any]:
    m = serving_metrics(obj, where, {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e_latency"})
    if obj.get("accept_length") is not None:
        m["mean_acceptance_length"] = number(where, "accept_length", obj["accept_length"])
    backend = str(get(where, obj, "backend"))
    server = obj.get("server_info") or {}
    if not isinstance(server, dict):
        raise ResultFormatError(f"{where}: field 'server_info': expected an object")
    fixed = obj.get("random_range_ratio") is not None and \
        number(where, "random_range_ratio", obj["random_range_ratio"]) == 1.0 and \
        str(obj.get("dataset_name", "")).startswith("random")
    spec_tokens = None
    if "speculative_algorithm" in server and server["speculative_algorithm"] in (None, "", "NONE"):
        spec_tokens = 0
    return {
        "engine": _ENGINES.get(backend, backend),
        "engine_version": server.get("version"),
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
        "extra": {"dataset_name": obj.get("dataset_name"), "request_rate": obj.get("request_rate")},
    }

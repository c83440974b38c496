"""vLLM's serving benchmark JSON (``vllm bench serve --save-result``, formerly
``benchmarks/benchmark_serving.py``).

Top level: ``date``, ``backend``/``endpoint_type``, ``label``, ``model_id``, ``tokenizer_id``,
``num_prompts``, every ``--metadata KEY=VALUE`` pair (strings), ``request_rate``, ``burstiness``,
``max_concurrency``, then the results: ``duration``, ``completed``, ``failed``,
``total_input_tokens``, ``total_output_tokens``, ``request_throughput``, ``output_throughput``,
``total_token_throughput``, ``{mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms`` and, with
speculative decoding, ``spec_decode_acceptance_rate`` (percent), ``spec_decode_acceptance_length``,
``spec_decode_num_drafts``, ``spec_decode_draft_tokens``, ``spec_decode_accepted_tokens``.

The file does not say which engine it measured (``backend`` is the client's request format: the
vLLM client measures sglang or any OpenAI-compatible server as well), nor the device, commit or
scenario: pass them as metadata (``--metadata engine=vllm engine_version=0.11.0 device=H100
commit=abc123 context=32768 spec_tokens=3 decode_steps=512``) or in a sidecar. ``max_concurrency`` is
the batch. vLLM's ``*_itl_ms`` are per streamed chunk (``itl_chunk_ms_*``).
"""

from __future__ import annotations

from typing import Any

from eagle4.engines.rows import ResultFormatError, get, number
from eagle4.engines.serving import engine_of_server_info, first_error, serving_metrics

FORMAT = "vllm-serve"


def matches(obj: Any) -> bool:
    return isinstance(obj, dict) and "request_throughput" in obj and "model_id" in obj


def parse(obj: dict, where: str) -> dict[str, Any]:
    m = serving_metrics(obj, where, {lat: lat for lat in ("ttft", "tpot", "e2el")}, itl_kind="chunk")
    if m["completed_requests"] and obj.get("spec_decode_acceptance_length") is not None:
        m["mean_acceptance_length"] = number(where, "spec_decode_acceptance_length", obj["spec_decode_acceptance_length"])
        rate = number(where, "spec_decode_acceptance_rate", get(where, obj, "spec_decode_acceptance_rate"))
        if not 0.0 <= rate <= 100.0:
            raise ResultFormatError(f"{where}: field 'spec_decode_acceptance_rate': {rate} is not a percentage")
        m["mean_acceptance_rate"] = rate / 100.0  # vLLM writes percent; rows hold fractions
        for k, fld in (("accepted_tokens_total", "spec_decode_accepted_tokens"),
                       ("draft_tokens_total", "spec_decode_draft_tokens"), ("num_drafts", "spec_decode_num_drafts")):
            if obj.get(fld) is not None:
                m[k] = number(where, fld, obj[fld], integer=True)

    def meta(*keys):
        for k in keys:
            if obj.get(k) not in (None, ""):
                return obj[k]
        return None

    def opt_int(fld, *keys):
        v = meta(*keys)
        return None if v is None else number(where, fld, v, integer=True)

    engine, version = engine_of_server_info(obj.get("server_info"))
    return {
        "engine": meta("engine") or engine,
        "engine_version": meta("engine_version", "version") or version,
        "device": meta("device", "gpu"),
        "commit": meta("commit"),
        "context": opt_int("context", "context", "input_len"),
        "batch": opt_int("max_concurrency", "batch", "max_concurrency"),
        "spec_tokens": opt_int("spec_tokens", "spec_tokens", "num_speculative_tokens"),
        "decode_steps": opt_int("decode_steps", "decode_steps", "output_len"),
        "label": str(meta("scenario", "label") or ""),
        "runs": 1,
        "timestamp": str(obj.get("date", "")),
        "metrics": m,
        "extra": {"model_id": obj.get("model_id"), "num_prompts": obj.get("num_prompts"), "backend": obj.get("backend"),
                  "first_error": first_error(obj)},
    }

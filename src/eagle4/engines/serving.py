"""What the two serving-benchmark summaries share (vLLM ``bench serve``, sglang ``bench_serving``):
requests completed and failed, throughputs, latency percentiles, and the engine the file says it
measured.

* Request failures are carried, never assumed: ``failed`` when the file has it, else the count of
  non-empty entries of its per-request ``errors`` (saved with details); a file that says neither
  leaves ``failed_requests`` unknown (``None``) and the importer asks the sidecar.
* A run in which no request completed is kept as a row (completed 0, failed N, the first error): its
  scenario is INVALID with that reason; throughputs and latencies over no request are not figures.
* Inter-token latency is two quantities: per streamed chunk (a chunk carries every token of one
  verify step) and per token (a chunk's gap divided among its tokens). They get distinct names,
  ``itl_chunk_ms_*`` and ``itl_token_ms_*``; the format module says which one its file holds.
"""

from __future__ import annotations

from typing import Any

from eagle4.engines.rows import ResultFormatError, get, number

ITL_KINDS = ("chunk", "token")


def failed_requests(obj: dict, where: str) -> int | None:
    if obj.get("failed") is not None:
        return number(where, "failed", obj["failed"], integer=True)
    errs = obj.get("errors")
    if isinstance(errs, list):
        return sum(1 for e in errs if e)
    return None


def first_error(obj: dict) -> str:
    errs = obj.get("errors")
    if isinstance(errs, list):
        for e in errs:
            if e:
                return " ".join(str(e).split())[:200]
    return ""


def serving_metrics(obj: dict, where: str, latencies: dict[str, str], itl_kind: str) -> dict[str, Any]:
    """Metrics of one summary; ``latencies`` maps ``ttft``/``tpot``/``e2el`` to the file's key stem,
    ``itl_kind`` names what the file's ``*_itl_ms`` measure (``chunk`` or ``token``)."""
    if itl_kind not in ITL_KINDS:
        raise ValueError(f"itl_kind must be one of {ITL_KINDS}")
    completed = number(where, "completed", get(where, obj, "completed"), integer=True)
    if completed < 0:
        raise ResultFormatError(f"{where}: field 'completed': negative ({completed})")
    m: dict[str, Any] = {"completed_requests": completed, "failed_requests": failed_requests(obj, where)}
    if completed == 0:  # nothing was measured: no throughput, no latency
        return m
    m["output_tokens_per_s"] = number(where, "output_throughput", get(where, obj, "output_throughput"))
    m["request_throughput"] = number(where, "request_throughput", get(where, obj, "request_throughput"))
    for lat, key in {**latencies, f"itl_{itl_kind}": "itl"}.items():
        for stat in ("mean", "median", "p99"):
            k = f"{stat}_{key}_ms"
            if obj.get(k) is not None:
                m[f"{lat}_ms_{stat}"] = number(where, k, obj[k])
    return m


def engine_of_server_info(info: Any) -> tuple[str | None, str | None]:
    """(engine, version) the file's stored server info names, ``(None, None)`` when it has none. A
    server that names itself (``engine``) is believed; sglang's server arguments mean sglang; vLLM's
    dev-mode ``vllm_config`` means vLLM."""
    if not isinstance(info, dict) or not info:
        return None, None
    if isinstance(info.get("decode"), list) and info["decode"] and isinstance(info["decode"][0], dict):
        info = info["decode"][0]  # sglang's disaggregated servers report per decode worker
    version = info.get("version")
    version = None if version in (None, "") else str(version)
    if info.get("engine"):
        return str(info["engine"]), version
    if "vllm_config" in info:
        return "vllm", version
    if any(k in info for k in ("speculative_algorithm", "model_path", "tp_size", "internal_states")):
        return "sglang", version
    return None, version

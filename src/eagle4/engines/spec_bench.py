"""The speculative benchmark JSON (LMDeploy/TurboMind ``benchmark_speculative.py`` shape).

One file per scenario: ``throughput_tokens_per_sec`` / ``latency_ms_per_token`` / ``memory_gb``
summaries over ``total_runs`` measured repetitions, a ``scenario`` block (name, batch_size,
context_length, max_new_tokens, use_speculation, num_spec_tokens, micro_run), a ``system`` block
(gpu_name, timestamp, turbomind_build_id) and, for speculative runs, an ``eagle_speculation``
summary (mean_acceptance_rate as a fraction, mean_acceptance_length counting the bonus token,
total_accepted_tokens, fraction_steps_accept_ge2, ...).
"""

from __future__ import annotations

from typing import Any

from eagle4.engines.rows import ResultFormatError, get, number

FORMAT = "spec-bench"


def matches(obj: Any) -> bool:
    return isinstance(obj, dict) and "throughput_tokens_per_sec" in obj


def parse(obj: dict, where: str) -> dict[str, Any]:
    runs = number(where, "total_runs", get(where, obj, "total_runs"), integer=True)
    if runs < 1:
        # the script writes an all-zero stub when the baseline is skipped: no measurement behind it
        raise ResultFormatError(f"{where}: field 'total_runs': {runs} measured runs (a stub, not a measurement)")
    m = {
        "output_tokens_per_s": number(where, "throughput_tokens_per_sec.mean", get(where, obj, "throughput_tokens_per_sec.mean"),
                                      positive=True),
        "latency_ms_per_token": number(where, "latency_ms_per_token.mean", get(where, obj, "latency_ms_per_token.mean"),
                                       positive=True),
    }
    for key, fld in (("memory_gb_mean", "memory_gb.mean"), ("memory_gb_max", "memory_gb.max")):
        v = get(where, obj, fld, required=False)
        if v is not None:
            m[key] = number(where, fld, v, nonnegative=True)
    sc = get(where, obj, "scenario")
    use_spec = get(where, sc, "use_speculation", required=False)
    spec_tokens = number(where, "scenario.num_spec_tokens", get(where, sc, "num_spec_tokens"), integer=True)
    if use_spec is False:
        spec_tokens = 0
    spec = obj.get("eagle_speculation")
    if spec is not None:
        if not isinstance(spec, dict):
            raise ResultFormatError(f"{where}: field 'eagle_speculation': expected an object")
        if spec_tokens == 0:
            raise ResultFormatError(f"{where}: field 'eagle_speculation': present in a run without speculation "
                                    "(scenario.use_speculation false / num_spec_tokens 0)")
        for key, fld, req in (("mean_acceptance_rate", "mean_acceptance_rate", True),
                              ("mean_acceptance_length", "mean_acceptance_length", True),
                              ("accepted_tokens_total", "total_accepted_tokens", True),
                              ("fraction_steps_accept_ge2", "fraction_steps_accept_ge2", False),
                              ("draft_tokens_total", "total_draft_tokens", False),
                              ("num_drafts", "num_drafts", False)):
            v = get(where, obj, f"eagle_speculation.{fld}", required=req)
            if v is not None or req:
                m[key] = number(where, f"eagle_speculation.{fld}", v, nonnegative=True)
        acc = m["mean_acceptance_length"]
        if not 1 <= acc <= spec_tokens + 1:  # tokens committed per verify step, the bonus token included
            raise ResultFormatError(f"{where}: field 'eagle_speculation.mean_acceptance_length': {acc!r} is outside "
                                    f"[1, num_spec_tokens + 1 = {spec_tokens + 1}]")
        if not 0.0 <= m["mean_acceptance_rate"] <= 1.0:
            raise ResultFormatError(f"{where}: field 'eagle_speculation.mean_acceptance_rate': "
                                    f"{m['mean_acceptance_rate']} is not a fraction in [0, 1]")
        n = spec.get("num_spec_tokens")
        if n is not None and number(where, "eagle_speculation.num_spec_tokens", n, integer=True) != spec_tokens:
            raise ResultFormatError(f"{where}: field 'eagle_speculation.num_spec_tokens': {n} != "
                                    f"scenario.num_spec_tokens {spec_tokens}")
    system = obj.get("system") or {}
    if not isinstance(system, dict):
        raise ResultFormatError(f"{where}: field 'system': expected an object")
    build = system.get("turbomind_build_id")
    return {
        "engine": system.get("engine") or ("turbomind" if build else None),
        "engine_version": system.get("engine_version") or build,
        "device": system.get("gpu_name") if system.get("gpu_name") not in (None, "", "No GPU") else None,
        "commit": system.get("commit"),
        "context": number(where, "scenario.context_length", get(where, sc, "context_length"), integer=True),
        "batch": number(where, "scenario.batch_size", get(where, sc, "batch_size"), integer=True),
        "spec_tokens": spec_tokens,
        "decode_steps": number(where, "scenario.max_new_tokens", get(where, sc, "max_new_tokens"), integer=True),
        "label": str(sc.get("name", "")),
        "runs": runs,
        "timestamp": str(system.get("timestamp", "")),
        "metrics": m,
        "extra": {"micro_run": sc.get("micro_run"), "perf_mode": sc.get("perf_mode")},
    }

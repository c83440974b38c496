"""Render a Contract to markdown (reports/benchmark_contract.md)."""

from __future__ import annotations

import json
from pathlib import Path

from eagle4.report import atomic


def _table(rows: list[tuple[str, object, str]]) -> list[str]:
    out = ["| field | value | meaning |", "|---|---|---|"]
    for k, v, doc in rows:
        out.append(f"| `{k}` | {v} | {doc} |")
    return out


def _render_engine(c) -> str:
    """An engine contract: the results it reads, its scenarios, log invariants and gates."""
    e = c.engine
    L = [f"# Engine contract `{c.contract.name}` v{c.contract.version}", ""]
    if c.contract.description:
        L += [c.contract.description, ""]
    L += [f"* contract sha256: `{c.sha256}` (the gate ledger counts green runs per contract hash)",
          f"* source: `{c.source_path}`",
          f"* result files (under `--results`): {', '.join(f'`{g}`' for g in e.results)}",
          f"* a run of at most {e.micro_max_decode_steps} decode steps per request is a micro run; longer runs are full",
          "", "## Scenarios", "", "| name | context | batch | speculative tokens | stage | engine |", "|---|---|---|---|---|---|"]
    L += [f"| {s.name} | {s.context} | {s.batch} | {s.spec_tokens} | {s.stage} | {s.engine or 'any'} |" for s in c.scenarios]
    L += ["", "## Gates", "", "| gate | stage | checks | waits for |", "|---|---|---|---|"]
    for g in c.gates:
        checks = []
        if g.metric:
            what = f"{g.metric}({g.scenario})" + (f" / {g.metric}({g.baseline})" if g.comparison == "ratio" else "")
            checks.append(f"{what} {g.op} {g.threshold:g}")
        if g.logs is not None:
            checks.append(f"logs `{g.logs}`" if isinstance(g.logs, str) else "logs (inline)")
        if g.parity is not None:
            checks.append("parity " + ", ".join(t.name for t in g.parity.stages))
        wait = ", ".join(g.after) or ("every micro gate" if g.stage == "full" else "-")
        L.append(f"| {g.name} | {g.stage} | {'; '.join(checks)} | {wait} ({g.after_consecutive}x) |"
                 if g.stage == "full" else f"| {g.name} | {g.stage} | {'; '.join(checks)} | - |")
    canon = c.canonical()
    for k in ("log_invariants",):
        if k in canon:
            L += ["", f"## `{k}` (as written)", "", "```json", json.dumps(canon[k], indent=2, sort_keys=True), "```"]
    return "\n".join(L).rstrip() + "\n"


def render_markdown(c) -> str:
    if c.kind == "engine":
        return _render_engine(c)
    d = c.decode
    L = [f"# Benchmark contract `{c.contract.name}` v{c.contract.version}", ""]
    if c.contract.description:
        L += [c.contract.description, ""]
    L += [f"* contract sha256: `{c.sha256}` (stored in every result row; results under another hash are not compared)",
          f"* source: `{c.source_path}`"]
    if c.baseline is not None:
        L.append(f"* GPU figures judged on: {c.baseline.card} (`[baseline] card`; not hashed: "
                 "its record is `reports/cards/<card>/<contract>/`)")
    L += ["", "## Model pair", ""]
    m = c.model
    rows = [("model.load", m.load, "local model folders, or dummy weights of a declared architecture from a seed")]
    if m.load == "local":
        rows += [("model.target", f"`{m.target}`", "target model directory (config.json + safetensors)"),
                 ("model.draft", f"`{m.draft}`", "EAGLE-style draft head directory")]
    else:
        rows += [("model.seed", m.seed, "seed of the generated weights")]
        rows += [(f"model.target_arch.{k}", v, "") for k, v in m.target_arch.model_dump().items()]
        rows += [(f"model.draft_arch.{k}", v, "") for k, v in m.draft_arch.model_dump().items()]
    rows += [("model.dtype", m.dtype, "compute dtype of both models"),
             ("model.embedded", m.embedded, "the committed default pair")]
    L += _table(rows)
    a = c.acceptance
    L += ["", "## Acceptance", "", f"* source: `{a.source}`"]
    if a.source == "trace":
        L += [f"* trace: `{a.trace}` (sha256 `{a.sha256}`), measured on: {a.measured_on}",
              "* K6/K7 are driven to reproduce the trace's accepted lengths; rows say "
              "`time: measured at deployment shape; acceptance: <trace>`"]
    L += ["", "## Decode parameters", ""]
    rows = []
    for name, f in type(d).model_fields.items():
        rows.append((f"decode.{name}", getattr(d, name), f.description or ""))
    rows.append(("S (derived)", d.S, "accept row length = tree_depth + 1"))
    L += _table(rows)
    L += ["", "## Prompt set", "",
          f"* prompt length: {c.prompts.prompt_tokens} tokens (BOS included; truncated when longer)",
          f"* output length: {c.prompts.output_tokens} tokens per request", "",
          "| file | sha256 |", "|---|---|"]
    L += [f"| `{f.path}` | `{f.sha256}` |" for f in c.prompts.files]
    L += ["", "## Batch profile", "", f"* mode: `{c.batch_profile.mode}`"]
    if c.batch_profile.mode == "static":
        L.append("* every request of an operating point starts at t = 0 and runs to its output length")
    for i, p in enumerate(c.batch_profile.phases):
        L.append(f"* phase {i}: {p.duration_s} s at concurrency {p.concurrency}")
    L += ["", "## Operating points", "", "| name | batch | request rate (1/s) |", "|---|---|---|"]
    L += [f"| {p.name} | {p.batch} | {p.request_rate if p.request_rate is not None else '-'} |"
          for p in c.operating_points]
    r = c.runs
    L += ["", "## Runs", "",
          f"* warm-up runs per point: {r.warmup}",
          f"* measured runs per point: {r.runs} (independent processes)",
          f"* seeds: {r.seeds}",
          f"* max CoV of tokens/s: {r.cov_max:.0%}",
          f"* minimum measured duration per run: {r.min_duration_s} s"]
    if c.slo is not None:
        L += ["", "## SLO (goodput)", "", f"* TTFT <= {c.slo.ttft_ms} ms and TPOT <= {c.slo.tpot_ms} ms per request"]
    L += ["", "## Measurement rules", ""]
    L += _table([(f"measurement.{k}", getattr(c.measurement, k), f.description or "")
                 for k, f in type(c.measurement).model_fields.items()])
    canon = c.canonical()
    extra = {k: canon[k] for k in ("fpga", "trace", "gates") if k in canon} | c.extra_sections
    if extra:
        L += ["", "## FPGA accounting, trace, gates and other tools' sections (as written)", ""]
        for k, v in extra.items():
            L += [f"### `{k}`", "", "```json", json.dumps(v, indent=2, sort_keys=True, default=str), "```", ""]
    return "\n".join(L).rstrip() + "\n"


def write_markdown(c, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(p, render_markdown(c))
    return p

"""FPGA-vs-H100 comparison on the same workload (the benchmark contract), like for like.

What is compared, and what is refused:

* **Baseline points.** Only H100 points that pass the contract's run rule count: at least
  ``[runs] runs`` (>= 5) independent runs and CoV of tokens/s <= ``[runs] cov_max``. A point that fails
  is listed as excluded and cannot sign off.
* **Same contract** on both sides (contract hash of every row).
* **Same approximations** on both sides. Each side declares what its draft LM head and drafter
  use (``approximations`` column: ``exact`` or a ``+``-joined subset of ``hot_vocab``, ``int8_lm_head``,
  ``int8_drafter``; an H100 may use the hot vocabulary too, sglang's FR-spec). H100 rows without the
  column ran the exact draft; measured FPGA rows must say; the modelled FPGA design is ``[fpga.fused]``
  of the contract. A point whose sides differ is not compared.
* **Same model.** The modelled FPGA figure (budget model of ``eagle4.budget`` at ``[fpga.model]``, the
  deployment shape) is combined with an H100 figure only when the H100 ran that shape too
  (``model_hidden_size`` / ``model_vocab_size`` columns, else the contract's local target config). A
  toy-model H100 number and a deployment-shape model are never combined.

Three legs, never mixed:
1. **Correctness (csim)**: the contract's workload (a few prompts, short outputs) runs with the
   kernels on the ``csim`` backend (kernels csim lacks fall back to ref and are named) and must give
   token-for-token the same output as the ref kernels.
2. **Modelled comparison** (provenance ``model``): FPGA kernel latency per decode cycle from the
   budget sheet (fused backend, public-estimate clock, K1-K7 stages and glue, the draft LM head
   excluded), substituted for the H100's measured kernel and host-glue time inside the loop:
   ``ITL_model = ITL_h100 * (1 - share_h100(K*, host_*)) + T_fpga_per_cycle / tokens_per_cycle``.
   Reported, never used for sign-off.
3. **Competition gate** (sign-off): accepts only FPGA rows with provenance ``measured`` under the
   same contract hash and approximations. Pass when the FPGA's ITL p99 is below the H100's, or its
   tokens/s is higher at the same acceptance length (within 2 %). When short (or when no measured
   FPGA rows exist), a gap report names the top-2 bottlenecks.

Writes ``fpga_vs_h100_raw.csv`` and ``fpga_vs_h100_summary.md`` (atomically).
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np

from eagle4 import stats
from eagle4.contract import ContractMismatch, ensure_same_contract
from eagle4.report import atomic

RAW_FIELDS = ["contract_sha256", "point", "batch", "side", "metric", "value", "unit", "provenance", "device",
              "approximations", "source"]
ACCEPT_TOL = 0.02
APPROXIMATIONS = ("hot_vocab", "int8_lm_head", "int4_lm_head", "int8_drafter")


def approximations_label(parts) -> str:
    """Canonical label of a set of draft approximations (``exact`` when none)."""
    parts = sorted(set(parts))
    unknown = [x for x in parts if x not in APPROXIMATIONS]
    if unknown:
        raise ValueError(f"unknown approximation(s) {unknown}; known: {list(APPROXIMATIONS)}")
    return "+".join(parts) or "exact"


def parse_approximations(label: str) -> str:
    label = (label or "").strip()
    if label in ("", "exact"):
        return "exact"
    return approximations_label(label.split("+"))


def fused_approximations(contract) -> str:
    """The approximations of the fused FPGA design (``[fpga.fused]``)."""
    from eagle4.contract import fpga_section

    f = fpga_section(contract).fused
    return approximations_label([n for n, on in (("hot_vocab", f.lm_head_vocab == "hot"),
                                                 ("int8_lm_head", f.lm_head_dtype == "int8"),
                                                 ("int4_lm_head", f.lm_head_dtype == "int4"),
                                                 ("int8_drafter", f.drafter_dtype == "int8")) if on])


def _side_approximations(rows: list[dict], side: str, default: str | None) -> str:
    labels = {parse_approximations(r["approximations"]) for r in rows if r.get("approximations") not in (None, "")}
    if any(r.get("approximations") in (None, "") for r in rows):
        if default is None:
            raise ValueError(f"{side} rows do not say which approximations they ran (column 'approximations')")
        labels.add(default)
    if len(labels) != 1:
        raise ValueError(f"{side} rows mix approximations {sorted(labels)}")
    return labels.pop()


def baseline_validity(contract, raw: list[dict], runs: list[dict] | None, point: str) -> tuple[bool, str]:
    """The contract's run rule (:mod:`eagle4.validity`) on one H100 point, from its per-run rows (or the
    per-request rows grouped by run)."""
    from eagle4.validity import RunRule, summarize_runs

    if runs:
        per_run = [r for r in runs if r["point"] == point]
    else:
        by_run: dict = {}
        for r in raw:
            if r["point"] == point:
                by_run.setdefault(r["run_index"], []).append(r)
        per_run = [{"tokens_per_s": sum(float(x["output_tokens"]) for x in v) / max(float(x["e2e_s"]) for x in v),
                    "provenance": v[0].get("provenance", ""), "contract_sha256": v[0].get("contract_sha256")}
                   for v in by_run.values()]
    s = summarize_runs(per_run, value="tokens_per_s", metric=f"tokens/s at {point}", rule=RunRule.from_contract(contract),
                       duration="wall_s" if per_run and "wall_s" in per_run[0] else None,
                       contract_sha256=contract.sha256)
    return s.valid, ("; ".join(s.reasons) if s.reasons else f"{s.n_runs} runs, CoV {s.cov:.1%}")


def _model_leg_refusal(shape, deploy, h_approx: str, model_approx: str) -> str:
    """Why the modelled FPGA figure may not be combined with this H100 baseline ("" when it may)."""
    if shape is None:
        return "the H100 model shape is unknown (no model_hidden_size/model_vocab_size columns, no local target)"
    if tuple(shape) != tuple(deploy):
        return (f"the H100 ran a model of hidden {shape[0]}, vocab {shape[1]}; the budget model describes "
                f"[fpga.model] (hidden {deploy[0]}, vocab {deploy[1]}): a modelled FPGA figure is never combined "
                "with a toy-model H100 number")
    if h_approx != model_approx:
        return f"approximations differ: H100 {h_approx}, modelled fused design {model_approx}"
    return ""


def h100_model_shape(contract, raw: list[dict]) -> tuple[int, int] | None:
    """(hidden, vocab) of the model the H100 ran: the rows' columns, else the contract's model (a dummy
    load's architecture or the local target's config.json)."""
    import json

    cols = {(r.get("model_hidden_size"), r.get("model_vocab_size")) for r in raw}
    if all(h not in (None, "") and v not in (None, "") for h, v in cols) and len(cols) == 1:
        h, v = cols.pop()
        return int(h), int(v)
    if contract.model.load == "dummy":  # deployment shape generated on the device
        a = contract.model.target_arch
        return a.hidden_size, a.vocab_size
    cfg = contract.resolve(contract.model.target) / "config.json"
    if cfg.is_file():
        d = json.loads(cfg.read_text())
        return int(d["hidden_size"]), int(d["vocab_size"])
    return None


def _read(path) -> list[dict]:
    with (gzip.open(path, "rt", newline="") if str(path).endswith(".gz") else open(path, newline="")) as f:
        return list(csv.DictReader(f))


def _point_stats(raw: list[dict], runs: list[dict] | None, point: str) -> dict:
    rr = [r for r in raw if r["point"] == point]
    if not rr:
        return {}
    itl = [float(x) for r in rr for x in str(r.get("itl_s", "")).split(";") if x]
    if not itl:
        itl = [float(r["itl_p99_s"]) for r in rr]
    ttft = [float(r["ttft_s"]) for r in rr]
    if runs:
        ru = [r for r in runs if r["point"] == point]
        tps = float(np.mean([float(r["tokens_per_s"]) for r in ru])) if ru else float("nan")
        acc = float(np.mean([float(r["mean_acceptance_length"]) for r in ru])) if ru else float("nan")
    else:
        by_run: dict = {}
        for r in rr:
            by_run.setdefault(r["run_index"], []).append(r)
        tps = float(np.mean([sum(float(x["output_tokens"]) for x in v) / max(float(x["e2e_s"]) for x in v)
                             for v in by_run.values()]))
        acc = float(np.mean([float(r["acceptance_length"]) for r in rr]))
    return {"batch": int(rr[0]["batch"]), "itl_p50_s": stats.percentile(itl, 50),
            "itl_p99_s": stats.percentile(itl, 99), "ttft_p50_s": stats.percentile(ttft, 50),
            "tokens_per_s": tps, "acceptance_length": acc, "device": rr[0].get("model_device") or rr[0].get("device", ""),
            "provenance": rr[0].get("provenance", "")}


def _profile_shares(profile: list[dict], point: str) -> dict[str, float]:
    pr = [r for r in profile if r["point"] == point]
    if not pr:
        return {}
    step = sum({r["run_index"]: float(r["step_seconds"]) for r in pr}.values()) or 1.0
    out: dict[str, float] = {}
    for r in pr:
        out[r["region"]] = out.get(r["region"], 0.0) + float(r["seconds"]) / step
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def csim_parity(contract, *, n_prompts: int = 2, tokens: int = 12) -> dict:
    """Correctness leg: csim kernels vs ref kernels on the contract's workload (small case)."""
    from eagle4.backends import get_backend
    from eagle4.workload.engine import DeviceEngine

    be = get_backend("csim")
    ok, why = be.available()
    if not ok:
        return {"status": "unavailable", "detail": why}
    prompts = [p["text"] for p in contract.load_prompts()][:n_prompts]
    ref = DeviceEngine(contract, "ref")
    ids = ref.encode_prompts(prompts, contract.prompts.prompt_tokens)
    a = ref.generate(ids, tokens, contract.decode.temperatures, seed=1)
    cs = DeviceEngine(contract, "csim+ref")
    try:
        b = cs.generate(ids, tokens, contract.decode.temperatures, seed=1)
    except Exception as e:  # a csim failure is a correctness failure, reported with its message
        return {"status": "fail", "detail": f"{type(e).__name__}: {e}", "used": dict(cs.backend.used)}
    same = [x.output_ids == y.output_ids and x.accept_lengths == y.accept_lengths for x, y in zip(a, b, strict=False)]
    return {"status": "pass" if all(same) else "fail", "used": dict(cs.backend.used),
            "detail": f"{sum(same)}/{len(same)} requests identical ({tokens} tokens each)"}


def budget_model(contract, sheet_path: Path) -> dict:
    """FPGA kernel time per decode cycle by batch (fused backend, public-estimate clock), from the
    budget sheet of eagle4.budget; {} with a reason when unavailable."""
    if not sheet_path.exists():
        return {"_reason": f"{sheet_path} not found (run the budget model: eagle4.budget.run_budget)"}
    try:
        from eagle4.budget.model import DRAFT_STAGES, VERIFY_STAGES, step_latency
        from eagle4.contract import fpga_section
    except ImportError as e:
        return {"_reason": f"eagle4.budget is not importable: {e}"}
    rows = _read(sheet_path)
    try:
        ensure_same_contract(rows, expected=contract.sha256)
    except ContractMismatch as e:
        return {"_reason": f"budget sheet: {e}"}
    fclk = fpga_section(contract).fclk_public_estimate_mhz
    out = {}
    for B in sorted({int(r["batch"]) for r in rows}):
        # the kernels and their host glue; the draft LM head is a model forward on the H100 side
        stages = tuple(st for st in DRAFT_STAGES + VERIFY_STAGES if st != "draft_lm_head")
        us = step_latency(rows, "fused", B, round(fclk, 2), stages)
        if us > 0:
            out[B] = us * 1e-6
    out["_fclk_mhz"] = fclk
    return out


def compare(contract, h100_csv, out_dir="reports", *, fpga_measured=None, points=None, budget_sheet=None,
            run_csim: bool = True) -> dict:
    from eagle4.contract import fpga_section

    if contract.model.load == "dummy":
        # its csim leg needs prompts and a local pair; the dummy load has neither
        raise ValueError(f"{contract.source_path}: model.load = 'dummy': compare-fpga runs the contract's workload "
                         "on the csim kernels (prompts, a local pair); the FPGA-vs-H100 step comparison of a "
                         f"dummy-load contract is `eagle4 budget --contract {contract.source_path} --reports DIR` "
                         "(fusion_design_v1.md, beside the H100's graph-mode step)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    h100_csv = Path(h100_csv)
    if not h100_csv.exists():
        raise FileNotFoundError(f"no H100 baseline at {h100_csv}: run scripts/bench_h100_e2e.sh on the H100 first")
    h_raw = _read(h100_csv)
    ensure_same_contract(h_raw, expected=contract.sha256)
    base = str(h100_csv).removesuffix(".gz").removesuffix("_raw.csv")
    h_runs = _read(base + "_runs.csv") if Path(base + "_runs.csv").exists() else None
    if h_runs:
        ensure_same_contract(h_runs, expected=contract.sha256)
    h_prof = _read(base + "_profile.csv") if Path(base + "_profile.csv").exists() else []
    h_approx = _side_approximations(h_raw, f"H100 baseline {h100_csv}", default="exact")
    f_rows, f_approx, dropped = [], None, 0
    if fpga_measured:
        f_all = _read(fpga_measured)
        f_rows = [r for r in f_all if r.get("provenance") == "measured"]
        dropped = len(f_all) - len(f_rows)
        if f_rows:
            ensure_same_contract(f_rows + h_raw)
            f_approx = _side_approximations(f_rows, f"measured FPGA rows {fpga_measured}", default=None)
    model_approx = fused_approximations(contract)
    fm = fpga_section(contract).model
    shape = h100_model_shape(contract, h_raw)
    model_why = _model_leg_refusal(shape, (fm.hidden_size, fm.vocab_size), h_approx, model_approx)
    model_ok = not model_why
    pts = points or list(dict.fromkeys(r["point"] for r in h_raw))
    sheet = budget_model(contract, Path(budget_sheet) if budget_sheet else out / "budget_sheet.csv") if model_ok else {}
    csim = csim_parity(contract) if run_csim else {"status": "not run", "detail": "run_csim=False"}
    raw: list[dict] = []
    lines = ["# FPGA vs H100 on the same workload", "", f"* contract sha256: `{contract.sha256}`",
             f"* H100 baseline: `{h100_csv}` (approximations: {h_approx}; model "
             f"{f'hidden {shape[0]}, vocab {shape[1]}' if shape else 'unknown'})",
             f"* csim correctness: **{csim['status']}** ({csim.get('detail', '')})"]
    if csim.get("used"):
        lines.append("  * kernels per backend: " + ", ".join(f"{k}={v}" for k, v in sorted(csim["used"].items())))
    lines += [f"* measured FPGA rows: {len(f_rows)}" + (f" (approximations: {f_approx})" if f_rows else "")
              + (f" ({dropped} non-measured rows ignored for sign-off)" if dropped else ""), ""]
    verdicts, excluded = [], []
    gate_rows = ["| point | H100 ITL p99 (ms) | FPGA ITL p99 (ms) | H100 tok/s | FPGA tok/s | H100 acc | FPGA acc | result |",
                 "|---|---|---|---|---|---|---|---|"]
    model_rows = ["| point | H100 ITL p50 (ms) | H100 kernel+glue share | FPGA kernels+glue / cycle (us, model) | ITL p50 with FPGA kernels (ms, model) |",
                  "|---|---|---|---|---|"]
    gaps = []
    for p in pts:
        h = _point_stats(h_raw, h_runs, p)
        if not h:
            continue
        valid, why = baseline_validity(contract, h_raw, h_runs, p)
        if not valid:
            excluded.append(f"* {p}: {why}: not a baseline point (the contract's run rule)")
            verdicts.append(False)
            continue
        common = {"contract_sha256": contract.sha256, "point": p, "batch": h["batch"]}
        for m, unit in (("itl_p50_s", "s"), ("itl_p99_s", "s"), ("ttft_p50_s", "s"), ("tokens_per_s", "tok/s"),
                        ("acceptance_length", "tokens/step")):
            raw.append({**common, "side": "h100", "metric": m, "value": h[m], "unit": unit, "provenance": "measured",
                        "device": h["device"], "approximations": h_approx, "source": str(h100_csv)})
        shares = _profile_shares(h_prof, p)
        kshare = sum(v for k, v in shares.items() if k.startswith(("K", "host_")))
        # modelled leg: only like for like (same model shape, same approximations)
        t_cyc = sheet.get(h["batch"])
        if model_ok and t_cyc is not None and shares:
            tok_per_cycle = h["acceptance_length"]  # per request; the cycle serves the batch in parallel
            itl_model = h["itl_p50_s"] * (1 - kshare) + t_cyc / max(tok_per_cycle, 1e-9)
            raw.append({**common, "side": "fpga", "metric": "itl_p50_s", "value": itl_model, "unit": "s",
                        "provenance": "model", "device": f"budget model @ {sheet['_fclk_mhz']} MHz",
                        "approximations": model_approx, "source": "budget_sheet.csv"})
            model_rows.append(f"| {p} | {h['itl_p50_s'] * 1e3:.3f} | {kshare:.1%} | {t_cyc * 1e6:.1f} | {itl_model * 1e3:.3f} |")
        else:
            why = model_why or sheet.get("_reason") or (f"no budget row for batch {h['batch']}" if shares
                                                        else "no H100 profile CSV")
            model_rows.append(f"| {p} | {h['itl_p50_s'] * 1e3:.3f} | {kshare:.1%} | n/a | n/a ({why}) |")
        # sign-off leg: measured FPGA only, same approximations
        fr = [r for r in f_rows if r["point"] == p]
        if fr and f_approx != h_approx:
            gate_rows.append(f"| {p} | {h['itl_p99_s'] * 1e3:.3f} | - | {h['tokens_per_s']:.1f} | - | "
                             f"{h['acceptance_length']:.3f} | - | NOT COMPARABLE (approximations: H100 {h_approx}, "
                             f"FPGA {f_approx}) |")
            verdicts.append(False)
            gaps.append((p, shares))
        elif fr:
            f = _point_stats(fr, None, p)
            for m, unit in (("itl_p99_s", "s"), ("tokens_per_s", "tok/s"), ("acceptance_length", "tokens/step")):
                raw.append({**common, "batch": f["batch"], "side": "fpga", "metric": m, "value": f[m], "unit": unit,
                            "provenance": "measured", "device": f["device"], "approximations": f_approx,
                            "source": str(fpga_measured)})
            same_acc = abs(f["acceptance_length"] - h["acceptance_length"]) <= ACCEPT_TOL * h["acceptance_length"]
            win = f["itl_p99_s"] < h["itl_p99_s"] or (f["tokens_per_s"] > h["tokens_per_s"] and same_acc)
            res = "PASS" if win else "SHORT"
            gate_rows.append(f"| {p} | {h['itl_p99_s'] * 1e3:.3f} | {f['itl_p99_s'] * 1e3:.3f} | {h['tokens_per_s']:.1f} | "
                             f"{f['tokens_per_s']:.1f} | {h['acceptance_length']:.3f} | {f['acceptance_length']:.3f} | {res} |")
            verdicts.append(win)
            if not win:
                gaps.append((p, shares))
        else:
            gate_rows.append(f"| {p} | {h['itl_p99_s'] * 1e3:.3f} | - | {h['tokens_per_s']:.1f} | - | "
                             f"{h['acceptance_length']:.3f} | - | NO MEASURED FPGA DATA |")
            verdicts.append(False)
            gaps.append((p, shares))
    if not raw:
        raise RuntimeError("refusing to write an empty comparison: no H100 point of the requested ones passes the "
                           "contract's run rule" + (f" ({'; '.join(x[2:] for x in excluded)})" if excluded else ""))
    signed = bool(verdicts) and all(verdicts) and csim["status"] == "pass"
    reasons = []
    if csim["status"] != "pass":
        reasons.append("csim correctness did not pass")
    if excluded:
        reasons.append(f"{len(excluded)} H100 point(s) fail the run rule")
    if not f_rows:
        reasons.append("no measured FPGA numbers (modelled numbers never sign off)")
    elif f_approx != h_approx:
        reasons.append(f"the sides ran different approximations (H100 {h_approx}, FPGA {f_approx})")
    elif not signed:
        reasons.append("the measured FPGA is short of the H100 at some point")
    verdict = ("SIGN-OFF: the FPGA beats the H100 at every point (measured)" if signed else
               "NO SIGN-OFF: " + "; ".join(reasons))
    if excluded:
        lines += ["## Excluded baseline points", "", *excluded, ""]
    lines += ["## Competition gate (sign-off: measured FPGA only)", "", *gate_rows, "", f"**{verdict}**", "",
              "## Modelled comparison (provenance model, not for sign-off)", "", *model_rows, ""]
    if gaps:
        lines += ["## Gap report (top-2 bottlenecks)", ""]
        for p, shares in gaps:
            top = list(shares.items())[:2]
            if top:
                lines.append(f"* {p}: " + "; ".join(f"{k} {v:.1%} of the H100 step" for k, v in top))
            else:
                lines.append(f"* {p}: no per-region profile available")
        if sheet and not sheet.get("_reason"):
            try:
                rows = _read(Path(budget_sheet) if budget_sheet else out / "budget_sheet.csv")
                fclk = round(float(sheet["_fclk_mhz"]), 2)
                st = sorted((r for r in rows if r["backend"] == "fused" and abs(float(r["fclk_mhz"]) - fclk) < 0.01),
                            key=lambda r: -float(r["T_us"]))
                seen = []
                for r in st:
                    if r["stage"] not in seen:
                        seen.append(r["stage"])
                lines.append("* FPGA model, slowest fused stages: " + ", ".join(seen[:2]))
            except (OSError, KeyError, ValueError):
                pass
        lines.append("")
    paths = {"raw": out / "fpga_vs_h100_raw.csv", "summary": out / "fpga_vs_h100_summary.md"}
    with atomic.atomic_open(paths["raw"], "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=RAW_FIELDS)
        w.writeheader()
        w.writerows(raw)
    atomic.write_text(paths["summary"], "\n".join(lines).rstrip() + "\n")
    return {"verdict": verdict, "signed_off": signed, "paths": paths, "csim": csim, "raw": raw, "excluded": excluded}

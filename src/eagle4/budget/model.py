"""Cycle budget model per kernel (unfused) and per fused stage, and the roofline plot.

For every stage and batch size of the trace (per decode cycle):

* ``B_in``, ``B_out``: HBM bytes read / written, from the C-sim port counters (scaled, see
  :mod:`eagle4.budget.bytes`); ``B_onchip``: bytes of on-chip buffers the stage uses at that shape;
* ``N_ops``: elementary operations (MAC = 2, compare/select/exp/div = 1), from the trace shape;
* ``II``, ``fclk``: from a parsed synthesis report (``eagle4.report.synth_report.parse_report``) of
  the stage when one exists under ``[fpga].synth_reports_dir``, else the contract's declared targets
  (provenance ``model``);
* ``C_mem_in = B_in / (BW_eff / fclk)``, ``C_mem_out`` likewise, ``C_comp = N_ops * II / lanes``,
  ``C_ctrl = ctrl_cycles_per_call * calls``, ``C_total = max(C_mem_in + C_mem_out, C_comp) + C_ctrl``,
  ``T_us = C_total / fclk``.

Clocks: the declared sweep (100/200/300 MHz) plus the public-estimate clock (9.27 ns, ~108 MHz).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from eagle4.budget.bytes import BytesResult
from eagle4.budget.config import DTYPE_BYTES
from eagle4.report import atomic

SHEET_COLUMNS = ("contract_sha256", "backend", "stage", "batch", "fclk_mhz", "fclk_source", "B_in", "B_out",
                 "B_onchip", "N_ops", "II", "ii_source", "calls", "C_mem_in", "C_mem_out", "C_comp", "C_ctrl",
                 "C_total", "T_us", "bound", "bytes_provenance", "provenance")

# fused components share stage names with the unfused kernels: one row per stage
STAGE_OF_COMPONENT = {
    "draft_lm_head_weights": "draft_lm_head", "draft_lm_head_logits_topk": "draft_lm_head",
    "draft_draft_tree_score": "K1 draft_tree_score", "draft_update_draft_state": "K2 update_draft_state",
    "draft_work_deltas": "K3 work_deltas", "draft_tree_mask": "K4 tree_mask (draft)", "draft_host_glue": "draft glue",
    "verify_tree_mask": "K4 tree_mask (verify)", "verify_logits_to_probas": "K5 logits_to_probas",
    "verify_reject_sample": "K6 reject_sample", "verify_host_glue": "verify glue", "verify_update_verify": "K7 update_verify",
}
DRAFT_STAGES = ("draft_lm_head", "K1 draft_tree_score", "K2 update_draft_state", "K3 work_deltas",
                "K4 tree_mask (draft)", "draft glue", "draft step (code-derived)")
VERIFY_STAGES = ("K4 tree_mask (verify)", "K5 logits_to_probas", "K6 reject_sample", "verify glue", "K7 update_verify",
                 "verify step (code-derived)")
# the fused designs' rows: one per step, from the code-derived cycle model (eagle4.budget.cycles)
FUSED_STEP_STAGE = {"fused_draft_lm_head": "draft_lm_head", "fused_draft": "draft step (code-derived)",
                    "fused_verify": "verify step (code-derived)"}


@dataclass
class StageShape:
    n_ops: float
    onchip: float
    calls_unfused: int
    calls_fused: int


def stage_shapes(r: BytesResult, B: int, backend: str = "fused") -> dict[str, StageShape]:
    """N_ops and on-chip bytes of every stage for one decode cycle at batch B (full model sizes)."""
    f, dec, m = r.fpga, r.trace.decode, r.fpga.model
    K, widths, N, M, Q, S, L = dec["K"], dec["widths"], dec["N"], dec["M"], dec["Q"], dec["S"], r.trace.prefix_len
    H, V = m.hidden_size, m.vocab_size
    D = len(widths)
    out = {}
    lm_ops = k1 = k2 = k3 = k4 = 0.0
    T = 0
    for d, W in enumerate(widths):
        R, C = B * W, W * K
        Vt_u = m.hot_vocab_size if getattr(f, backend).lm_head_vocab == "hot" else V
        lm_ops += 2.0 * R * Vt_u * H + 6.0 * R * Vt_u
        k1 += B * (C * C + 2 * C) + B * K * H
        k2 += B * (6 * C + K * (1 + T) + min(M, 1 + C * (d + 1)))
        k3 += B * (min(M, dec["Vn"]) + K)
        Wn = widths[d + 1] if d + 1 < D else 0
        T += Wn
        if Wn:
            k4 += B * Wn * (L + T) + B * (L + T)
    Eh = DTYPE_BYTES[m.hidden_dtype]
    tile_rows = min(B * max(widths), 256)
    out["draft_lm_head"] = StageShape(lm_ops, 4.0 * tile_rows * m.hot_vocab_size + Eh * tile_rows * H, D, D)
    out["K1 draft_tree_score"] = StageShape(k1, 64 * 4 * 6 * B, D, D)
    out["K2 update_draft_state"] = StageShape(k2, 44.0 * B * N + 4.0 * B * (2 * M + K) + B * K * (dec["I"] + 1), D, D)
    out["K3 work_deltas"] = StageShape(k3, 4.0 * B * (M + K), D, D)
    out["K4 tree_mask (draft)"] = StageShape(k4, 8.0 * B * dec["I"], D - 1, D - 1)
    out["draft glue"] = StageShape(B * (min(N, 1 + K * sum(widths)) * 4 + Q * Q), 48.0 * B * Q, D + 1, 1)
    out["K4 tree_mask (verify)"] = StageShape(B * Q * (L + Q) + B * (L + Q), 8.0 * B * Q, 1, 1)
    rows_k5 = B * Q if backend == "unfused" else B * (r.trace.mean_accept + 1)  # fused: visited rows only
    out["K5 logits_to_probas"] = StageShape(5.0 * rows_k5 * V, 4.0 * V + 16.0, 1, 1)
    temps = r.trace.cycles[0].temperatures if r.trace.cycles else [1.0]
    samp = sum(1 for b in range(B) if temps[b % len(temps)] >= 1e-6)  # greedy requests never touch a row
    out["K6 reject_sample"] = StageShape(B * 4 * Q + samp * 4.0 * V, 4.0 * V + 40.0 * Q, 1, 1)
    out["verify glue"] = StageShape(B * S, 4.0 * B * S, 1, 1)
    n_acc = B * (r.trace.mean_accept + 1)
    out["K7 update_verify"] = StageShape(n_acc * H + 4 * B * Q, 4.0 * B * (S + Q), 1, 1)
    return out


def _synth(r: BytesResult, stage: str, root: Path):
    """(fclk_mhz, II/cycles, source) from a synthesis report of this stage, or None."""
    d = root / r.fpga.synth_reports_dir
    if not d.is_dir():
        return None
    try:
        from eagle4.report.synth_report import parse_report
    except Exception:  # noqa: BLE001 - the parser is a colleague's module; absent -> model
        return None
    key = stage.split()[-1] if " " in stage else stage
    key = key.strip("()")
    for p in sorted(d.rglob("*")):
        if p.is_file() and key in p.name and p.suffix in (".xml", ".rpt"):
            try:
                rep = parse_report(p)
            except Exception:  # noqa: BLE001
                continue
            if rep.get("clock_estimated_ns"):
                return 1000.0 / rep["clock_estimated_ns"], rep.get("interval_min"), f"synthesis:{p.name}"
    return None


def budget_rows(r: BytesResult, *, root=None) -> list[dict]:
    f = r.fpga
    root = Path(root or Path(__file__).resolve().parents[3])
    clocks = [(c, "declared sweep") for c in f.fclk_sweep_mhz] + [(f.fclk_public_estimate_mhz,
                                                                   "public V80 estimate 9.27 ns")]
    rows = _fused_step_rows(r, clocks, root)
    for backend in ("unfused",):  # the fused designs: _fused_step_rows (derived from the code, not declared)
        for B in sorted(r.unfused.cycles_by_batch):
            shapes = stage_shapes(r, B, backend)
            agg: dict[str, dict] = {}
            for (bk, b, comp), pc in r.per_call.items():
                if bk != backend or b != B:
                    continue
                st = STAGE_OF_COMPONENT.get(comp, comp)
                a = agg.setdefault(st, {"B_in": 0.0, "B_out": 0.0})
                a["B_in"] += pc["B_in"]
                a["B_out"] += pc["B_out"]
            for st in DRAFT_STAGES + VERIFY_STAGES:
                if st.endswith("(code-derived)"):  # fused-only rows
                    continue
                a = agg.get(st, {"B_in": 0.0, "B_out": 0.0})
                sh = shapes[st]
                syn = _synth(r, st, root)
                for fclk, fsrc in clocks:
                    ii, iisrc = f.ii_target, "model (declared [fpga].ii_target)"
                    fclk_src = fsrc + " (model)"
                    lanes = 2 * f.lm_head_macs_per_cycle if st == "draft_lm_head" else f.lanes
                    c_comp = sh.n_ops * ii / lanes
                    if syn is not None:
                        fclk, fclk_src = syn[0], syn[2]
                        if syn[1]:
                            c_comp, iisrc = float(syn[1]), syn[2]
                    bpc = min(f.hbm_peak_gbps * 1e9 * f.hbm_efficiency / (fclk * 1e6), f.axi_bytes_per_cycle)
                    c_in, c_out = a["B_in"] / bpc, a["B_out"] / bpc
                    calls = sh.calls_unfused if backend == "unfused" else sh.calls_fused
                    c_ctrl = f.ctrl_cycles_per_call * calls
                    c_tot = max(c_in + c_out, c_comp) + c_ctrl
                    rows.append({
                        "contract_sha256": r.trace.contract_sha256, "backend": backend, "stage": st, "batch": B,
                        "fclk_mhz": round(fclk, 2), "fclk_source": fclk_src, "B_in": round(a["B_in"]),
                        "B_out": round(a["B_out"]), "B_onchip": round(sh.onchip) if backend == "fused" else 0,
                        "N_ops": round(sh.n_ops), "II": ii, "ii_source": iisrc, "calls": calls,
                        "C_mem_in": round(c_in), "C_mem_out": round(c_out), "C_comp": round(c_comp),
                        "C_ctrl": c_ctrl, "C_total": round(c_tot), "T_us": round(c_tot / fclk, 3),
                        "bound": "memory" if c_in + c_out >= c_comp else "compute",
                        "bytes_provenance": "csim", "provenance": "model"})
    return rows


def _fused_step_rows(r: BytesResult, clocks, root: Path) -> list[dict]:
    from eagle4.budget.cycles import step_cycles

    f = r.fpga
    clocks = clocks + ([(f.fclk_target_mhz, "declared target")] if all(abs(c - f.fclk_target_mhz) > 0.01
                                                                    for c, _ in clocks) else [])
    rows = []
    for sc in step_cycles(r, reports_dir=root / f.synth_reports_dir):
        def mine(comp: str, sc=sc) -> bool:
            if sc.design == "fused_verify":
                return comp.startswith("verify_")
            lm = STAGE_OF_COMPONENT.get(comp) == "draft_lm_head"
            return comp.startswith("draft_") and lm == (sc.design == "fused_draft_lm_head")

        b_in = sum(pc["B_in"] for (bk, b, comp), pc in r.per_call.items() if bk == "fused" and b == sc.batch
                   and mine(comp))
        b_out = sum(pc["B_out"] for (bk, b, comp), pc in r.per_call.items() if bk == "fused" and b == sc.batch
                    and mine(comp))
        for fclk, fsrc in clocks:
            if sc.synth:
                fclk, fsrc = 1000.0 / sc.synth["clock_estimated_ns"], sc.source
            rows.append({
                "contract_sha256": r.trace.contract_sha256, "backend": "fused", "stage": FUSED_STEP_STAGE[sc.design],
                "batch": sc.batch, "fclk_mhz": round(fclk, 2), "fclk_source": fsrc + ("" if sc.synth else " (model)"),
                "B_in": round(b_in), "B_out": round(b_out), "B_onchip": 0, "N_ops": round(sc.c_loops),
                "II": "per loop", "ii_source": sc.source, "calls": 1, "C_mem_in": round(sc.c_ports), "C_mem_out": 0,
                "C_comp": round(sc.c_loops), "C_ctrl": 0, "C_total": round(sc.cycles),
                "T_us": round(sc.cycles / fclk, 3), "bound": f"ports ({sc.busiest_bundle})"
                if sc.c_ports >= sc.c_loops else "loops", "bytes_provenance": "csim", "provenance": sc.provenance})
    return rows


def step_latency(rows: list[dict], backend: str, batch: int, fclk: float, stages) -> float:
    """Conservative step latency: the stages' T_us summed (no dataflow overlap credited)."""
    return float(sum(float(x["T_us"]) for x in rows if x["backend"] == backend and int(x["batch"]) == batch
                     and abs(float(x["fclk_mhz"]) - fclk) < 0.01 and x["stage"] in stages))


def write_sheet(rows: list[dict], csv_path, md_path, r: BytesResult) -> None:
    csv_path, md_path = Path(csv_path), Path(md_path)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with atomic.atomic_open(csv_path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=SHEET_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    f = r.fpga
    clocks = sorted({float(x["fclk_mhz"]) for x in rows})
    batches = sorted({int(x["batch"]) for x in rows})
    L = ["# Budget sheet (cycle model)", "",
         f"Generated by `eagle4 budget` from the measurements; contract `{r.trace.contract_sha256[:12]}`; device {f.device}.",
         "",
         "**Fused designs** (`draft step` / `verify step (code-derived)`): derived from the code "
         "(`eagle4.budget.cycles`): the II and lanes of every counted loop are the constants of "
         "`hls/fused/common/e4f_perf.h` that its pragmas name, times the loop trips the C-sim counts (scaled to "
         "the model's H and V like the bytes); loops declared ping-pong (E4F_PINGPONG) overlap their consumers but "
         "for the first tile; an m_axi bundle moves a 512-bit beat per cycle where its pragma widens the port "
         "(max_widen_bitwidth), else one element; cycles = max(loops, busiest bundle), a lower bound (no control "
         "overhead or stalls; K6 sampling and the K1-K4 cores' loops are not counted). A synthesis report of a design "
         "replaces it (provenance `synthesis`).",
         "",
         f"**Unfused kernels**: the declared model of the contract (HBM {f.hbm_peak_gbps:g} GB/s x efficiency "
         f"{f.hbm_efficiency:g}, at most {f.axi_bytes_per_cycle} B/cycle per stage; lanes {f.lanes} (LM head: "
         f"{f.lm_head_macs_per_cycle} MACs/cycle); II {f.ii_target}; control {f.ctrl_cycles_per_call} cycles/call), "
         "**declared, not derived from the code**. Bytes: C-sim counted (64-B beats, scaled in H, V; "
         "bytes_per_token.csv). Clocks: the declared sweep, the declared target and the public V80 estimate "
         "(9.27 ns ~ 108 MHz) of a comparable CostDraftTree orchestrator.",
         "", "Unfused: `C_total = max(C_mem_in + C_mem_out, C_comp) + C_ctrl`; step latency = sum of its stages "
         "(conservative: no dataflow overlap credited).", "",
         "## Step latency per decode cycle (us, model)", "",
         "| backend | batch | " + " | ".join(f"draft @{c:g} MHz | verify @{c:g} MHz" for c in clocks) + " |",
         "|---|---|" + "---|---|" * len(clocks)]
    for backend in ("unfused", "fused"):
        for B in batches:
            cells = []
            for c in clocks:
                cells.append(f"{step_latency(rows, backend, B, c, DRAFT_STAGES):.1f}")
                cells.append(f"{step_latency(rows, backend, B, c, VERIFY_STAGES):.1f}")
            L.append(f"| {backend} | {B} | " + " | ".join(cells) + " |")
    fpub = f.fclk_public_estimate_mhz
    for B in (batches[0], batches[-1]):
        L += ["", f"## Per stage, batch {B}, fclk {fpub:g} MHz (public-estimate clock)", "",
              "| backend | stage | B_in | B_out | B_onchip | N_ops | C_mem_in | C_mem_out | C_comp | C_ctrl | C_total | T_us | bound |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for x in rows:
            if int(x["batch"]) == B and abs(float(x["fclk_mhz"]) - fpub) < 0.01:
                L.append(f"| {x['backend']} | {x['stage']} | {_h(x['B_in'])} | {_h(x['B_out'])} | {_h(x['B_onchip'])} | "
                         f"{x['N_ops']:.3g} | {x['C_mem_in']} | {x['C_mem_out']} | {x['C_comp']} | {x['C_ctrl']} | "
                         f"{x['C_total']} | {x['T_us']} | {x['bound']} |")
    atomic.write_text(md_path, "\n".join(L) + "\n")


def _h(x) -> str:
    x = float(x)
    for u in ("B", "KiB", "MiB", "GiB"):
        if abs(x) < 1024:
            return f"{x:.0f} {u}" if u == "B" else f"{x:.1f} {u}"
        x /= 1024
    return f"{x:.2f} TiB"


def roofline_png(rows: list[dict], path, r: BytesResult) -> Path:
    from matplotlib.figure import Figure  # the Figure API: no pyplot state, no backend switch

    f = r.fpga
    fclk = f.fclk_public_estimate_mhz
    B = max(int(x["batch"]) for x in rows)
    pts = [x for x in rows if int(x["batch"]) == B and abs(float(x["fclk_mhz"]) - fclk) < 0.01]
    fig = Figure(figsize=(8, 5.5))
    ax = fig.subplots()
    bw = min(f.hbm_peak_gbps * 1e9 * f.hbm_efficiency, f.axi_bytes_per_cycle * fclk * 1e6)
    peak = f.lanes / f.ii_target * fclk * 1e6
    oi = [10 ** (i / 10) for i in range(-30, 41)]
    ax.loglog(oi, [min(peak, bw * o) for o in oi], "k-", lw=1.5,
              label=f"roof: {bw / 1e9:.0f} GB/s per stage, {f.lanes} lanes @ {fclk:g} MHz (model)")
    lm_peak = 2 * f.lm_head_macs_per_cycle / f.ii_target * fclk * 1e6
    ax.loglog(oi, [min(lm_peak, bw * o) for o in oi], "k--", lw=1,
              label=f"LM-head roof: {f.lm_head_macs_per_cycle} MACs/cycle (model)")
    for x in pts:
        nb = float(x["B_in"]) + float(x["B_out"])
        if nb <= 0 or float(x["N_ops"]) <= 0:
            continue
        o = float(x["N_ops"]) / nb
        perf = float(x["N_ops"]) / (float(x["T_us"]) * 1e-6)
        mk = "o" if x["backend"] == "unfused" else "s"
        col = "tab:red" if x["backend"] == "unfused" else "tab:blue"
        ax.loglog([o], [perf], mk, color=col, ms=7)
        ax.annotate(f"{x['stage'].split()[0]}", (o, perf), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.plot([], [], "o", color="tab:red", label="unfused kernels")
    ax.plot([], [], "s", color="tab:blue", label="fused stages")
    ax.set_xlabel("operational intensity (ops / HBM byte)")
    ax.set_ylabel("attained ops/s (model)")
    ax.set_title(f"Per-kernel roofline, batch {B}, {fclk:g} MHz (bytes: C-sim; time: cycle model)")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    with atomic.atomic_open(path, "wb") as fh:
        fig.savefig(fh, dpi=120, format=path.suffix.lstrip(".") or "png")
    return path


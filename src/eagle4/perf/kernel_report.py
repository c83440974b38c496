"""Summaries of the kernel bench's raw rows: per point ours, the best anchor, the HBM roofline.

* ``cuda_kernel_times.csv``: per (contract, point, impl, mode) the median over runs, the CoV and
  the contract's run rule (``valid``), the byte model's roofline at the HBM peak of the card the raw rows
  name (``eagle4.perf.card``; raw rows of more than one card are refused); on our graph rows also the
  fastest same-computation anchor, ``ours_over_anchor`` and ``ours_over_roofline``;
* ``kernel_anchors.md``: the same as one table per contract;
* ``cuda_bytes_per_token.csv``: model bytes per call / cycle / token, and ncu-measured DRAM bytes
  with ``ncu_over_model`` where a profile exists;
* ``hotspots_ranked.md``: kernels by time and by bytes per decode cycle, and every kernel whose
  measured bytes exceed 1.2x its model bytes, with the reason.
"""

from __future__ import annotations

from pathlib import Path

from eagle4.perf.card import bench_card
from eagle4.perf.points import ACCEPTED, BenchShape, model_bytes, operating_points, roofline_us
from eagle4.perf.rows import RAW_FIELDS, write_csv
from eagle4.report import atomic
from eagle4.validity import RunRule, summarize_runs

SUMMARY_FIELDS = ["contract", "kernel", "label", "impl", "mode", "same_computation", "point", "B", "W", "K", "H",
                  "Q", "T", "V", "L", "S", "dtype", "n_runs", "median_us", "cov", "valid", "min_run_us", "max_run_us",
                  "bytes_model", "roofline_us", "ours_over_roofline", "anchor_impl", "anchor_us", "ours_over_anchor",
                  "slower_than_anchor", "softmax_only_us", "copy_us", "ours_over_copy", "device", "driver", "torch", "cuda", "git_commit",
                  "contract_sha256", "provenance", "invalid_reasons"]
BPT_FIELDS = ["contract", "kernel", "label", "point", "B", "calls_per_cycle", "tokens_per_cycle", "bytes_model",
              "bytes_ncu", "ncu_over_model", "bytes_per_cycle_model", "bytes_per_token_model", "bytes_per_token_ncu",
              "provenance_model", "provenance_ncu"]
MAX_BYTES_RATIO = 1.2

# Why a kernel moves more DRAM bytes than the byte model (which counts each input read once and
# each output written once, at byte granularity). Measured floor: after ncu's cache flush every launch
# fetches its code and constant banks from DRAM, ~20 KB (K3's 100-byte call moves 19.7 KB).
_FLOOR = "per-launch floor of ~20 KB (code and constant banks fetched from DRAM after ncu's cache flush)"
BYTES_REASONS = {
    "draft_tree_score": _FLOOR + " on a call of a few kB",
    "update_draft_state": _FLOOR + "; scattered 8-byte state writes cost whole 32-byte sectors",
    "work_deltas": _FLOOR + " on a call of a few hundred bytes",
    "tree_mask": _FLOOR + "; kv-index gathers and partial-sector writes of the packed mask",
    "logits_to_probas": _FLOOR + " on rows of V = 260",
    "reject_sample": _FLOOR + "; the tested probabilities are single 4-byte reads (one 32-byte sector each)",
    "update_verify": _FLOOR + "; scattered KV-slot and bookkeeping writes cost whole sectors",
}


def _rules(shapes: list[BenchShape]) -> dict[str, tuple[RunRule, str]]:
    """Per contract name: its run rule (runs, CoV limit; a kernel run has no minimum duration) and hash."""
    return {Path(s.contract_path).stem: (RunRule(s.runs, s.cov_max), s.contract_hash) for s in shapes}


def summarize(raw: list[dict], shapes: list[BenchShape]) -> list[dict]:
    bps = bench_card(raw).hbm_bps
    pts = {(Path(s.contract_path).stem, p.pid): p for s in shapes for p in operating_points(s)}
    rules = _rules(shapes)
    groups: dict[tuple, list[dict]] = {}
    for r in raw:
        groups.setdefault((r["contract"], r["point"], r["impl"], r["mode"]), []).append(r)
    out = []
    for (contract, pid, _impl, _mode), rs in sorted(groups.items()):
        meds = [float(r["median_us"]) for r in rs]
        labels = sorted({r.get("label", "") for r in rs})
        if len(labels) > 1:  # e.g. a draft step timed as one launch in some runs and three in others
            raise ValueError(f"raw rows of {contract} {pid} {_impl} {_mode} mix labels {labels}: one form per summary")
        s = {k: rs[0].get(k, "") for k in SUMMARY_FIELDS}
        if contract not in rules:
            raise ValueError(f"raw rows of contract {contract!r}, which was not given (--contract)")
        rule, sha = rules[contract]
        ps = summarize_runs(rs, value="median_us", rule=rule, metric=f"{contract} {pid}", contract_sha256=sha,
                            require_hash=True)
        med = ps.median
        s.update(n_runs=ps.n_runs, median_us=f"{med:.4f}", cov=f"{ps.cov:.6f}", valid=str(ps.valid).lower(),
                 invalid_reasons="; ".join(ps.reasons), min_run_us=f"{min(meds):.4f}", max_run_us=f"{max(meds):.4f}")
        p = pts.get((contract, pid))
        if p is not None:
            bi, bo = model_bytes(p)
            s["bytes_model"] = bi + bo
            roof = roofline_us(p, bps)
            s["roofline_us"] = f"{roof:.4f}"
            s["ours_over_roofline"] = f"{med / roof:.4f}"
        out.append(s)
    by_point: dict[tuple, list[dict]] = {}
    for s in out:
        if s["mode"] == "graph":
            by_point.setdefault((s["contract"], s["point"]), []).append(s)
    for rows in by_point.values():
        ours = [s for s in rows if s["impl"] == "cuda"]
        anchors = [s for s in rows if s["impl"] != "cuda" and s["same_computation"] == "true"]
        bound = [s for s in rows if s["impl"] == "torch_softmax_only"]
        copy = [s for s in rows if s["impl"] == "torch_copy_same_bytes"]
        if not ours or not anchors:
            continue
        o = ours[0]
        best = min(anchors, key=lambda s: float(s["median_us"]))
        ratio = float(o["median_us"]) / float(best["median_us"])
        o.update(anchor_impl=best["impl"], anchor_us=best["median_us"], ours_over_anchor=f"{ratio:.4f}",
                 slower_than_anchor=str(ratio > 1.0).lower(), softmax_only_us=bound[0]["median_us"] if bound else "",
                 copy_us=copy[0]["median_us"] if copy else "",
                 ours_over_copy=f"{float(o['median_us']) / float(copy[0]['median_us']):.4f}" if copy else "")
    return out


def anchors_md(summary: list[dict]) -> str:
    card = bench_card(summary)
    lines = [f"# {card.name} kernels against their PyTorch anchors (graph replay, same process, same timer)", "",
             "Written by `scripts/bench_h100_kernels.sh` (`python -m eagle4.perf.kernel_bench summarize`). Per point: "
             "our op (median over independent runs), the fastest PyTorch anchor of the same computation "
             f"(`src/eagle4/perf/anchors.py`, graph-captured), the HBM roofline of the byte model at {card.describe()}, "
             "and both ratios (< 1 beats the anchor; >= 1 against the roofline). K5 also lists one `torch.softmax` "
             "launch without temperature or argmax (a lower bound, not the same computation) and one copy of its "
             "bytes (`Tensor.copy_` of the logits into a buffer of the probas' size: what the card takes to read "
             "and write them at all) with ours / copy. Every timed call reads the same input buffers, so inputs "
             "that fit in the card's L2 are read from it, ours and the anchors alike (as in a decode step, "
             "where each kernel reads what the kernel before it has just written): at points of fewer bytes the "
             "roofline ratio compares an L2-warm time with the HBM floor. The points of K5's roofline bar "
             "(>= 32 MB) are all over 65 MB.", ""]
    rows = [s for s in summary if s["impl"] == "cuda" and s["mode"] == "graph"]
    by_impl = {(s["contract"], s["point"], s["impl"]): s for s in summary if s["mode"] == "graph"}
    for contract in sorted({s["contract"] for s in rows}):
        mine = [s for s in rows if s["contract"] == contract]
        lines += [f"## contract `{contract}` ({mine[0]['contract_sha256'][:12]})", "",
                  "| point | ours us | anchor | anchor us | ours/anchor | roofline us | ours/roofline | CoV | valid |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for s in sorted(mine, key=lambda s: (int(s["B"]), s["label"], s["point"])):
            flag = " **slower**" if s.get("slower_than_anchor") == "true" else ""
            extra = f" (softmax only {float(s['softmax_only_us']):.1f})" if s.get("softmax_only_us") else ""
            if s.get("copy_us"):
                extra += f" (copy {float(s['copy_us']):.1f}, ours/copy {float(s['ours_over_copy']):.3g})"
            anchor = by_impl.get((s["contract"], s["point"], s.get("anchor_impl", "")))
            if anchor is not None and anchor.get("valid") not in (None, "true"):  # its ratio rests on that row
                extra += f" (anchor row outside the run rule: {anchor.get('invalid_reasons') or 'invalid'})"
            form = s["label"].partition(" (")[2].rstrip(")")  # the draft step's form, e.g. "one launch"
            lines.append(f"| {s['point']}{f' ({form})' if form else ''} | {float(s['median_us']):.2f} | {s.get('anchor_impl', '')}{extra} | "
                         f"{float(s['anchor_us']) if s.get('anchor_us') else float('nan'):.2f} | "
                         f"{s.get('ours_over_anchor', '')}{flag} | {float(s['roofline_us']):.3g} | "
                         f"{float(s['ours_over_roofline']):.3g} | {float(s['cov']):.4f} | {s['valid']} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def bytes_rows(shapes: list[BenchShape], ncu: dict[tuple[str, str], float]) -> list[dict]:
    """Per point: model bytes per call/cycle/token, ncu DRAM bytes and their ratio where measured.
    One decode cycle = D draft layers (K1, K2, K3, K4-draft, K5-draft each) + one verify step."""
    rows = []
    for sh in shapes:
        c = Path(sh.contract_path).stem
        for p in operating_points(sh):
            if p.kernel == "draft_step":
                continue
            calls = sh.D if p.per_cycle else 1
            tokens = p.params["B"] * (min(ACCEPTED, sh.D) + 1)
            bi, bo = model_bytes(p)
            m = ncu.get((c, p.pid))
            rows.append({"contract": c, "kernel": p.kernel, "label": p.label, "point": p.pid, "B": p.params["B"],
                         "calls_per_cycle": calls, "tokens_per_cycle": tokens, "bytes_model": bi + bo,
                         "bytes_ncu": "" if m is None else int(m),
                         "ncu_over_model": "" if m is None else f"{m / (bi + bo):.3f}",
                         "bytes_per_cycle_model": calls * (bi + bo),
                         "bytes_per_token_model": f"{calls * (bi + bo) / tokens:.1f}",
                         "bytes_per_token_ncu": "" if m is None else f"{calls * m / tokens:.1f}",
                         "provenance_model": "model", "provenance_ncu": "" if m is None else "measured"})
    return rows


def hotspots_md(summary: list[dict], bpt: list[dict], shapes: list[BenchShape]) -> str:
    lines = [f"# {bench_card(summary).name} kernel hotspots (CUDA baseline)", "",
             "From each contract's `cuda_kernel_times.csv` in the card's record (`reports/cards/<card>/<contract>/`: "
             "measured, graph replay, medians over independent runs) and "
             "`cuda_bytes_per_token.csv` (byte model of KERNELS.md §10; ncu DRAM bytes where profiled). "
             "One decode cycle = D draft layers (K1, K2, K3, K4-draft, K5-draft each) + one verify step "
             "(K4, K5, K6, K7 at Q = Vn).", ""]
    pts = {(Path(s.contract_path).stem, p.pid): p for s in shapes for p in operating_points(s)}
    D = {Path(s.contract_path).stem: s.D for s in shapes}
    for contract in sorted({s["contract"] for s in summary}):
        batches = sorted({int(s["B"]) for s in summary if s["contract"] == contract})
        lines += [f"## contract `{contract}`", ""]
        for B in batches:
            per_t: dict[str, float] = {}
            for s in summary:
                if s["contract"] != contract or s["impl"] != "cuda" or s["mode"] != "graph" or int(s["B"]) != B:
                    continue
                p = pts.get((contract, s["point"]))
                if p is None or p.kernel == "draft_step":
                    continue
                name = f"{p.label} {p.kernel}" + (" (draft)" if p.params.get("variant") == "draft" else "")
                per_t[name] = per_t.get(name, 0.0) + (D[contract] if p.per_cycle else 1) * float(s["median_us"])
            per_b: dict[str, float] = {}
            for r in bpt:
                if r["contract"] != contract or int(r["B"]) != B:
                    continue
                name = f"{r['label']} {r['kernel']}" + (" (draft)" if "/draft/" in r["point"] else "")
                per_b[name] = per_b.get(name, 0.0) + float(r["bytes_per_cycle_model"])
            tt, tb = sum(per_t.values()) or 1.0, sum(per_b.values()) or 1.0
            lines += [f"### B = {B}", "", f"Kernel time per decode cycle: {tt:.1f} us; kernel HBM bytes per cycle "
                      f"(model): {tb / 2**20:.2f} MiB.", "",
                      "| rank | by time | us per cycle | share | by bytes | MiB per cycle | share |",
                      "|---|---|---|---|---|---|---|"]
            bt, bb = sorted(per_t.items(), key=lambda x: -x[1]), sorted(per_b.items(), key=lambda x: -x[1])
            for i in range(3):
                a = bt[i] if i < len(bt) else ("", 0.0)
                b = bb[i] if i < len(bb) else ("", 0.0)
                lines.append(f"| {i + 1} | {a[0]} | {a[1]:.1f} | {100 * a[1] / tt:.1f}% | {b[0]} | "
                             f"{b[1] / 2**20:.3f} | {100 * b[1] / tb:.1f}% |")
            lines.append("")
    over = [r for r in bpt if r["ncu_over_model"] and float(r["ncu_over_model"]) > MAX_BYTES_RATIO]
    lines += ["## Kernels moving more than 1.2x their model bytes (ncu DRAM read + write, one launch, caches "
              "flushed)", ""]
    if not any(r["ncu_over_model"] for r in bpt):
        lines += ["No ncu profile was given to this summary: no measured bytes.", ""]
    elif not over:
        lines += ["None.", ""]
    else:
        lines += ["| contract | point | model bytes | ncu bytes | ratio | reason |", "|---|---|---|---|---|---|"]
        for r in over:
            lines.append(f"| {r['contract']} | {r['point']} | {r['bytes_model']} | {r['bytes_ncu']} | "
                         f"{r['ncu_over_model']} | {BYTES_REASONS.get(r['kernel']) or 'not analysed'} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def write_reports(shapes: list[BenchShape], raw: list[dict], reports: Path, ncu_csv: Path | None,
                  ncu_points: str = "B1") -> int:
    from eagle4.perf.ncu import parse_ncu_csv

    raw.sort(key=lambda r: (r["contract"], r["point"], r["impl"], r["mode"], int(r["run_index"])))
    summary = summarize(raw, shapes)  # before any write: rows it refuses (two cards, mixed forms) change no file
    write_csv(reports / "cuda_kernel_times_raw.csv", raw, RAW_FIELDS)
    write_csv(reports / "cuda_kernel_times.csv", summary, SUMMARY_FIELDS)
    ncu = {}
    if ncu_csv and ncu_csv.is_file():
        ncu = parse_ncu_csv(ncu_csv, [(Path(s.contract_path).stem, operating_points(s, ncu_points)) for s in shapes])
    bpt = bytes_rows(shapes, ncu)
    write_csv(reports / "cuda_bytes_per_token.csv", bpt, BPT_FIELDS)
    atomic.write_text(reports / "hotspots_ranked.md", hotspots_md(summary, bpt, shapes))
    atomic.write_text(reports / "kernel_anchors.md", anchors_md(summary))
    bad = [s for s in summary if s["valid"] != "true" and s["mode"] == "graph"]
    slow = [s for s in summary if s.get("slower_than_anchor") == "true"]
    print(f"summarized {len(raw)} raw rows into {len(summary)} rows; {len(bad)} graph row(s) outside the run rule; "
          f"{len(slow)} point(s) where ours is slower than the best anchor")
    for s in bad:
        print(f"  invalid: {s['contract']} {s['point']} {s['impl']} CoV {float(s['cov']):.4f} n={s['n_runs']}")
    for s in slow:
        print(f"  slower than {s['anchor_impl']}: {s['contract']} {s['point']} x{float(s['ours_over_anchor']):.2f}")
    return 0

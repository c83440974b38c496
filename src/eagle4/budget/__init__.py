"""Byte accounting (C-sim counted + computed), cycle budget model and roofline of the FPGA backends.

``run_budget(contract, reports_dir)`` runs the whole chain on the contract's workload trace and
writes ``bytes_per_token.csv``, ``hw_counters.csv``, ``onchip_budget.csv``, ``budget_sheet.csv/.md``,
``roofline.png`` and ``fusion_design_v1.md`` (all generated from the measurements).
"""

from __future__ import annotations

from pathlib import Path

from eagle4.budget.config import FpgaSection, fpga_section

REPORT_FILES = ("bytes_per_token.csv", "hw_counters.csv", "onchip_budget.csv", "budget_sheet.csv", "budget_sheet.md",
                "roofline.png", "fusion_design_v1.md")


def run_budget(contract, reports_dir="reports", *, root=None, progress=None):
    """Count, model and write the budget artifacts; returns (BytesResult, sheet rows)."""
    from eagle4.budget import bytes as bb
    from eagle4.budget import design_report, onchip
    from eagle4.budget import model as bm
    from eagle4.contract import ContractError
    from eagle4.perf import records

    reports = Path(reports_dir)
    reports.mkdir(parents=True, exist_ok=True)
    res = bb.count_trace(contract, root=root, progress=progress)
    bb.write_bytes_csv(res, reports / "bytes_per_token.csv")
    bb.write_hw_counters_csv(res, reports / "hw_counters.csv")
    rows = bm.budget_rows(res, root=root)
    bm.write_sheet(rows, reports / "budget_sheet.csv", reports / "budget_sheet.md", res)
    bm.roofline_png(rows, reports / "roofline.png", res)
    storage = onchip.measure(contract)
    pair = onchip.combined([p for p in storage if p.design in ("fused_draft", "fused_verify")],
                           "fused_draft+fused_verify")
    onchip.write_csv([*storage, pair], res.trace.contract_sha256, reports / "onchip_budget.csv")
    res.onchip = (storage, pair)
    try:  # the GPU step profile of the contract's [baseline] card, where its record has one
        dirs = [reports, records.baseline_dir(contract)]
    except ContractError:
        dirs = [reports]
    gpu = design_report.gpu_graph_steps(res.trace.contract_sha256, dirs)
    text = design_report.render(res, rows, storage, pair, gpu)
    design_report.write(reports / "fusion_design_v1.md", text)
    return res, rows


__all__ = ["run_budget", "fpga_section", "FpgaSection", "REPORT_FILES"]

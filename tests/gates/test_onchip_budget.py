"""On-chip budget gate: the two fused designs, resident together, must fit the contract's device
(``[fpga].bram_mb`` + ``[fpga].uram_mb``) with margin (<= 70% of the on-chip memory, each pool within
its capacity). Measured from the synthesis-mode build of each design (eagle4.budget.onchip); the
largest arrays are named when it fails."""

from __future__ import annotations

import pytest

from eagle4.budget import onchip


@pytest.mark.gate
def test_fused_designs_fit_the_device_on_chip_memory(contract_file):
    from eagle4.backends import csim_build
    from eagle4.contract import load_contract

    if csim_build.tools_missing():
        pytest.fail(f"on-chip budget not evaluated: {csim_build.tools_missing()}", pytrace=False)
    c = load_contract(contract_file)
    pair = onchip.combined(onchip.measure(c, ["fused_draft", "fused_verify"]), "fused_draft+fused_verify")
    line = onchip.summary_line(pair)
    print("\n" + line)
    if not pair.fits or pair.utilization > onchip.UTILIZATION_GOAL:
        top = sorted(pair.placements, key=lambda x: -x.physical_bytes)[:3]
        pytest.fail(f"on-chip budget: {line}; largest arrays: " + "; ".join(
            f"{x.array.name} {x.array.elems} x {x.array.elem_bits} bit -> {x.physical_bytes / 1e6:.1f} MB {x.pool}"
            for x in top), pytrace=False)

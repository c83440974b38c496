"""The reference against its frozen outputs: any change of a reference kernel's EXACT outputs on
any catalog case is caught here. Refreeze deliberately with `eagle4 freeze-reference` and review
the diff of tests/parity/frozen_reference.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle4.cases.catalog import all_cases
from eagle4.parity import exact_output_hash, reference_outcome

FROZEN = Path(__file__).with_name("frozen_reference.json")


def _frozen() -> dict:
    if not FROZEN.is_file():
        return {}
    return json.loads(FROZEN.read_text())["cases"]


@pytest.mark.parity
@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.case_id)
def test_reference_matches_frozen_outputs(case, parity_record):
    frozen = _frozen()
    want = frozen.get(case.case_id)
    got = exact_output_hash(case, reference_outcome(case))
    if want is None:
        parity_record(case.kernel, case.case_id, "ref-frozen", "fail", "no frozen output for this case")
        pytest.fail(f"{case.case_id} has no frozen reference output in {FROZEN.name}: run "
                    "`eagle4 freeze-reference`, review the new entries, and commit them", pytrace=False)
    ok = want == got
    parity_record(case.kernel, case.case_id, "ref-frozen", "pass" if ok else "fail",
                  "" if ok else f"frozen {want[:16]}..., now {got[:16]}...")
    assert ok, f"{case.case_id}: reference outputs changed (frozen {want}, now {got})"

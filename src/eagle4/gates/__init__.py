"""Gates: thresholds declared in the contract's ``[[gates]]``, evaluated on raw CSV artifacts with
provenance, recorded in ``reports/gate_ledger.csv``, summarised VALID/INVALID per gate, and one
sign-off verdict (:mod:`eagle4.gates.verdict`: SIGNED OFF / NOT SIGNED OFF with every reason).

``evaluate_all(contract, reports_dir) -> list[GateResult]``; CLI ``eagle4 gates --contract ...``;
sign-off ``pytest tests/gates --hw=fpga``.
"""

from eagle4.contract import GateError, GateSpec, load_gates
from eagle4.gates.evaluate import GateResult, consecutive_green, evaluate_all, ledger_rows, record, summary
from eagle4.gates.verdict import Verdict, decide

__all__ = ["evaluate_all", "GateResult", "GateSpec", "GateError", "load_gates", "summary", "record",
           "consecutive_green", "ledger_rows", "Verdict", "decide"]

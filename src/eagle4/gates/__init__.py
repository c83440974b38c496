"""Gates: thresholds declared in the contract's ``[[gates]]``, evaluated on raw CSV artifacts with
provenance, recorded in ``reports/gate_ledger.csv``, summarised VALID/INVALID (MLPerf style).

``evaluate_all(contract, reports_dir) -> list[GateResult]``; CLI ``eagle4 gates --contract ...``;
sign-off ``pytest tests/gates --hw=fpga``.
"""

from eagle4.gates.evaluate import GateResult, consecutive_green, evaluate_all, ledger_rows, record, summary
from eagle4.gates.schema import GateError, GateSpec, load_gates

__all__ = ["evaluate_all", "GateResult", "GateSpec", "GateError", "load_gates", "summary", "record",
           "consecutive_green", "ledger_rows"]

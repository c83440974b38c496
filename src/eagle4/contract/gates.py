"""Schema of the contract's ``[[gates]]`` array (validated by the contract loader; evaluated by
:mod:`eagle4.gates`).

A gate: ``name``, ``metric`` (a name from :data:`eagle4.gates.metrics.METRICS`), a ``comparison``
(``absolute``: ``value op threshold``; ``ratio``: ``metric(run) / metric(baseline) op threshold`` for
two named runs), the ``provenance`` values it accepts (``signoff_provenance`` replaces that list under
``--hw=fpga``), the raw ``artifacts`` that must be attached, ``kind`` (``gate`` fails the suite;
``report`` is only printed, e.g. a stretch target with a ``report_band``), the hardware modes it is
evaluated in (``hw``), and ordering rules: ``after`` names gates that must have been green
``after_consecutive`` times in a row (recorded in ``reports/gate_ledger.csv``) before this one may run.

Example (other programs): throughput(spec) >= 2.0x throughput(baseline) and mean acceptance >= 3.0::

    [[gates]]
    name = "spec_throughput"
    metric = "throughput"
    comparison = "ratio"
    run = "spec"
    baseline = "baseline"
    op = ">="
    threshold = 2.0
    provenance = ["measured"]
    artifacts = ["reports/throughput.csv"]

    [[gates]]
    name = "acceptance"
    metric = "mean_acceptance_length"
    op = ">="
    threshold = 3.0
    provenance = ["measured"]
    artifacts = ["reports/acceptance_lengths.csv"]
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationError, model_validator

from eagle4.contract.base import ContractError, Section
from eagle4.log_invariants import LogInvariants
from eagle4.stage_parity import StageParity

ProvenanceName = Literal["declared", "computed", "model", "csim", "measured"]  # eagle4.provenance.ORDER but "double"


class GateError(ContractError):
    """The [[gates]] section is invalid; the message names the gate and field."""


class GateSpec(Section):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    metric: str | None = Field(None, description="what is compared (absent: a gate of log invariants / parity only)")
    comparison: Literal["absolute", "ratio"] = "absolute"
    op: Literal[">=", ">", "<=", "<", "=="] = ">="
    threshold: float | None = Field(None, allow_inf_nan=False, description="finite: NaN/inf never compare honestly")
    run: str | None = Field(None, description="ratio: the run in the numerator (default 'spec')")
    baseline: str | None = Field(None, description="ratio: the named baseline run (engine contracts: scenario)")
    scenario: str | None = Field(None, description="engine contracts: the [[scenarios]] entry the metric is read from")
    logs: LogInvariants | str | None = Field(None, description="engine contracts: log invariants, inline or the "
                                                              "name of a [log_invariants.<name>] table")
    parity: StageParity | None = Field(None, description="engine contracts: stagewise parity of two stage dumps")
    provenance: list[ProvenanceName] = Field(
        default_factory=lambda: ["measured"], min_length=1)
    signoff_provenance: list[ProvenanceName] | None = Field(
        None, description="accepted provenance under --hw=fpga (default: only 'measured')")
    artifacts: list[str] = Field(default_factory=list, description="raw CSVs that must exist and carry provenance")
    kind: Literal["gate", "report"] = "gate"
    report_band: list[Annotated[float, Field(allow_inf_nan=False)]] | None = Field(None, min_length=2, max_length=2)
    stage: Literal["micro", "full"] = "micro"
    hw: list[Literal["cpu", "cuda", "fpga"]] = Field(default_factory=lambda: ["cpu", "fpga"], min_length=1)
    after: list[str] = Field(default_factory=list)
    after_consecutive: int = Field(3, ge=1, le=100)
    batch: int | None = Field(None, ge=1, description="operating point (batch size) of per-batch metrics")
    description: str = ""

    @model_validator(mode="after")
    def _ratio(self):
        if (self.metric is None) != (self.threshold is None):
            raise ValueError("'metric' and 'threshold' go together")
        if self.metric is None and self.logs is None and self.parity is None:
            raise ValueError("a gate needs a metric (with threshold), logs or parity")
        if self.comparison == "ratio" and not self.baseline:
            raise ValueError("comparison = 'ratio' needs 'baseline' (the named baseline run)")
        if self.comparison == "absolute" and self.baseline:
            raise ValueError("'baseline' is only meaningful with comparison = 'ratio'")
        return self

    def accepted(self, mode: str) -> list[str]:
        if mode == "fpga":
            return list(self.signoff_provenance or ["measured"])
        return list(self.provenance)


def validate_gates(raw) -> list[GateSpec]:
    """Validate a raw ``[[gates]]`` list (each entry, then names and ordering rules); GateError names
    the gate and the field."""
    if not isinstance(raw, list):
        raise GateError(f"gates: expected an array of tables ([[gates]]), got {type(raw).__name__}")
    gates = []
    for i, g in enumerate(raw):
        try:
            gates.append(GateSpec.model_validate(g))
        except ValidationError as e:
            name = g.get("name", f"#{i}") if isinstance(g, dict) else f"#{i}"
            msgs = "; ".join(f"{'.'.join(str(x) for x in err['loc']) or '(gate)'}: {err['msg']}" for err in e.errors())
            raise GateError(f"gates[{i}] ({name}): {msgs}") from None
    check_gate_names(gates)
    return gates


def check_gate_names(gates: list[GateSpec]) -> None:
    """Names are unique and every ``after`` names another declared gate."""
    names = [g.name for g in gates]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise GateError(f"gates: duplicate name(s) {dup}")
    for g in gates:
        unknown = [a for a in g.after if a not in names]
        if unknown:
            raise GateError(f"gate {g.name}: 'after' names unknown gate(s) {unknown}")
        if g.name in g.after:
            raise GateError(f"gate {g.name}: 'after' names the gate itself")

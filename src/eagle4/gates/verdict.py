"""The one sign-off verdict: SIGNED OFF or NOT SIGNED OFF, with every reason.

A run signs off only when it was evaluated as a sign-off (``--hw=fpga``, every gate judged on the
weakest provenance against ``signoff_provenance``), every declared gate (``kind = "gate"``) was
evaluated and PASSed, and the caller's own steps all ran (``extra_reasons``). A gate that was not
evaluated (deselected on this hardware, blocked by its ordering rule, missing evidence) counts
against sign-off. Report-only gates never sign off and never block; a report-only miss is shown as
a miss.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

SIGNOFF_HW = "fpga"


@dataclass
class Verdict:
    signed_off: bool
    reasons: list[str] = field(default_factory=list)  # why not (empty when signed off)
    report_misses: list[str] = field(default_factory=list)  # shown, never blocking

    @property
    def word(self) -> str:
        return "SIGNED OFF" if self.signed_off else "NOT SIGNED OFF"

    def lines(self) -> list[str]:
        out = [f"VERDICT: {self.word}" + ("" if self.signed_off else f" ({len(self.reasons)} reason(s))")]
        out += [f"  - {r}" for r in self.reasons]
        out += [f"  report-only miss: {m}" for m in self.report_misses]
        return out


def decide(results: Iterable, *, hw: str, extra_reasons: Iterable[str] = (), engine: bool = False) -> Verdict:
    """The verdict of evaluated gates (:class:`eagle4.gates.evaluate.GateResult`) under ``hw``.
    ``engine``: an engine contract, judged on the imported measured results whatever ``hw`` is."""
    results = list(results)
    reasons = list(extra_reasons)
    misses = []
    if hw != SIGNOFF_HW and not engine:
        reasons.append(f"evaluated under --hw={hw}: sign-off is judged under --hw={SIGNOFF_HW} "
                       "(measured board numbers, weakest provenance against signoff_provenance)")
    if not any(r.kind == "gate" for r in results):
        reasons.append("the contract declares no sign-off gate ([[gates]] with kind = 'gate')")
    shared: dict[tuple[str, str], list[str]] = {}  # one line per shared reason, naming every gate it holds
    for r in results:
        why = "; ".join(r.reasons) or "no reason recorded"
        if r.kind == "report":
            if r.status == "REPORT":
                if r.report_miss:
                    misses.append(f"{r.name}: {why}")
            else:
                misses.append(f"{r.name}: not evaluated ({r.status}): {why}")
            continue
        if r.status == "PASS":
            continue
        if r.status == "DESELECTED":
            reasons.append(f"gate {r.name} not evaluated on --hw={hw} ({why})")
            continue
        label = {"BLOCKED": "not evaluated (blocked)", "FAIL": "FAILED"}.get(r.status, r.status)
        shared.setdefault((label, why), []).append(r.name)
    for (label, why), names in shared.items():
        reasons.append(f"gate{'s' if len(names) > 1 else ''} {', '.join(names)} {label}: {why}")
    return Verdict(not reasons, reasons, misses)

"""Running a backend against the reference on one case: the unit every parity test is built of."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from eagle4 import dtypes as dt
from eagle4.backends import Backend, get_backend
from eagle4.cases import Case
from eagle4.compare import ParityResult, compare_array, compare_outputs
from eagle4.kernels import PreconditionError
from eagle4.spec import kernel_spec


@dataclass
class Outcome:
    outputs: dict[str, np.ndarray] | None
    error: str | None  # "PreconditionError: ..." when the kernel refused the case


def requested_outputs(case: Case) -> frozenset[str]:
    """Optional outputs the case holds an expectation for: the backend must be asked to produce them."""
    spec = kernel_spec(case.kernel)
    return frozenset(a.name for a in spec.outputs if a.optional and a.name in (case.expected or {})
                     and a.name not in case.inputs)


def run_case(backend: Backend, case: Case) -> Outcome:
    want = requested_outputs(case)
    try:
        # ``want`` only when there is something to ask: wrappers that never see optional outputs keep (kernel, inputs, params)
        return Outcome(backend.run(case.kernel, case.inputs, case.params, **({"want": want} if want else {})), None)
    except PreconditionError as e:
        return Outcome(None, f"PreconditionError: {e}")


_REFERENCE: dict[int, tuple[Case, Outcome]] = {}


def reference_outcome(case: Case) -> Outcome:
    """The reference's outcome for a case, computed once per process (cases are catalog singletons)."""
    hit = _REFERENCE.get(id(case))
    if hit is None or hit[0] is not case:
        hit = (case, run_case(get_backend("ref"), case))
        _REFERENCE[id(case)] = hit
    return hit[1]


@dataclass
class Verdict:
    ok: bool
    report: str
    result: ParityResult | None = None


def judge(case: Case, expected: Outcome, actual: Outcome, *, require_all: bool = False) -> Verdict:
    """Both refused the case, or both produced matching outputs (``require_all``: the expectation must
    cover every non-optional output, as a stored dump's must)."""
    if expected.error or actual.error:
        if expected.error and actual.error:
            return Verdict(True, f"both refused: {expected.error} | {actual.error}")
        return Verdict(False, f"{case.case_id}: reference {'refused: ' + expected.error if expected.error else 'ran'}"
                              f", backend {'refused: ' + actual.error if actual.error else 'ran'}")
    res = compare_outputs(case.kernel, expected.outputs, actual.outputs, case.inputs, case.params, case.case_id,
                          require_all=require_all)
    return Verdict(res.ok, res.report(), res)


def self_consistency(case: Case, first: Outcome, second: Outcome) -> Verdict:
    """Nondeterminism check: two runs of one backend must agree bitwise on every output."""
    if (first.error is None) != (second.error is None):
        return Verdict(False, f"{case.case_id}: one run refused the case and the other did not")
    if first.error:
        return Verdict(first.error == second.error, f"refusals differ: {first.error} / {second.error}")
    bad = []
    for name, a in first.outputs.items():
        d = compare_array(name, a, second.outputs.get(name), "EXACT")
        if not d.ok:
            bad.append(f"  {name}: {d.mismatches} element(s) differ between two runs; first at {d.first[:3]}")
    return Verdict(not bad, "\n".join([f"{case.case_id}: NONDETERMINISTIC"] + bad) if bad else "")


def exact_output_hash(case: Case, outcome: Outcome) -> str:
    """Hash of a case's EXACT-class outputs (TOL outputs vary with the platform's exp; they are
    checked by tolerance elsewhere). A refusal hashes its exception type only."""
    if outcome.error:
        return "refused:" + outcome.error.split(":", 1)[0]
    spec = kernel_spec(case.kernel)
    h = hashlib.sha256()
    for a in spec.outputs:
        if a.name in outcome.outputs and a.parity == "EXACT":
            arr = np.ascontiguousarray(outcome.outputs[a.name])
            h.update(f"{a.name}|{dt.logical_dtype(arr)}|{arr.shape}|".encode())
            h.update(dt.storage_view(arr).tobytes())
    h.update(json.dumps(case.params, sort_keys=True).encode())
    return h.hexdigest()


def check_against_reference(backend: Backend, kernel: str, inputs: dict, params: dict,
                            case_id: str = "") -> Outcome:
    """Run an ad-hoc input (fuzzing) on the reference and ``backend``; AssertionError with the
    mismatch report unless they agree (both refusing counts as agreement). Returns the reference's outcome."""
    case = Case(kernel, case_id or f"{kernel}/adhoc", params, inputs)
    ref = run_case(get_backend("ref"), case)
    verdict = judge(case, ref, run_case(backend, case))
    assert verdict.ok, f"{params}\n{verdict.report}"
    return ref

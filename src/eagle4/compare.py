"""Parity comparator: EXACT (bitwise; any NaN equals any NaN) and TOL, per KERNELS.md §0.3.

Kernel-specific rules that the per-output class cannot express live in ``_HOOKS``:
K5 greedy rows are EXACT and sampling rows must sum to 1 within 1e-4; K7's ``next_hidden``
rows past ``N_unf`` are neither written nor compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eagle4 import dtypes as dt
from eagle4.spec import KernelSpec, kernel_spec

MAX_REPORTED = 8


@dataclass
class OutputDiff:
    name: str
    parity: str
    total: int
    mismatches: int
    first: list[tuple] = field(default_factory=list)  # [(index tuple, expected, actual)]
    max_abs_err: float = 0.0
    max_ulp: int = 0
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.mismatches == 0 and not self.message


@dataclass
class ParityResult:
    kernel: str
    case_id: str
    outputs: list[OutputDiff]
    not_compared: list[str] = field(default_factory=list)  # outputs the backend produced with no expectation
    unexpected_missing: list[str] = field(default_factory=list)  # required outputs with no expectation

    @property
    def ok(self) -> bool:
        # nothing passes vacuously: no compared output, or a required one without expectation, is a FAIL
        return bool(self.outputs) and not self.unexpected_missing and all(o.ok for o in self.outputs)

    def report(self) -> str:
        lines = [f"{self.kernel} {self.case_id}: {'PASS' if self.ok else 'FAIL'}"]
        if not self.outputs:
            lines.append("  no output was compared (the expectation holds none)")
        if self.unexpected_missing:
            lines.append(f"  no expectation for required output(s) {self.unexpected_missing}: not compared")
        if self.not_compared:
            lines.append(f"  not compared (no expectation): {self.not_compared}")
        for o in self.outputs:
            if o.ok:
                continue
            lines.append(f"  {o.name} [{o.parity}]: {o.mismatches}/{o.total} mismatching elements"
                         f"; max abs err {o.max_abs_err:.6g}; max ULP distance {o.max_ulp}"
                         + (f"; {o.message}" if o.message else ""))
            for idx, e, a in o.first:
                lines.append(f"    at {idx}: expected {e!r}, got {a!r}")
        return "\n".join(lines)


def _ulp_distance(e: np.ndarray, a: np.ndarray) -> np.ndarray:
    """ULP distance between floats of one width via the ordered-integer mapping."""
    ib = {2: np.int16, 4: np.int32, 8: np.int64}[e.dtype.itemsize]
    def ordered(x):
        i = x.view(ib).astype(np.int64)
        return np.where(i < 0, np.iinfo(ib).min - i, i)
    return np.abs(ordered(e) - ordered(a))


def _mismatch_mask(e: np.ndarray, a: np.ndarray, parity: str, rtol: float, atol: float) -> np.ndarray:
    if e.dtype.kind == "f" or e.dtype == dt.BF16:
        with np.errstate(invalid="ignore"):  # NaN payloads of f16/bf16 warn on the upcast; they stay NaN
            ef, af = e.astype(np.float64), a.astype(np.float64)
        both_nan = np.isnan(ef) & np.isnan(af)
        if parity == "EXACT":
            return ~(both_nan | (dt.bits(e) == dt.bits(a)))
        finite = np.isfinite(ef)
        tol_ok = np.abs(af - ef) <= atol + rtol * np.abs(ef)
        nonfinite_ok = both_nan | (~np.isnan(ef) & (ef == af))  # same infinity
        return ~np.where(finite, tol_ok & np.isfinite(af), nonfinite_ok)
    return dt.bits(e) != dt.bits(a)


def compare_array(name: str, e: np.ndarray, a: np.ndarray, parity: str = "EXACT",
                  rtol: float = 0.0, atol: float = 0.0, region: np.ndarray | None = None) -> OutputDiff:
    """Compare one output; ``region`` (bool mask, same shape) limits the compared elements."""
    if a is None:
        return OutputDiff(name, parity, int(e.size), int(e.size), message="output missing from the backend")
    if e.shape != a.shape or dt.logical_dtype(e) != dt.logical_dtype(a):
        return OutputDiff(name, parity, int(e.size), int(e.size),
                          message=f"shape/dtype differ: expected {e.shape} {dt.logical_dtype(e)}, "
                                  f"got {a.shape} {dt.logical_dtype(a)}")
    bad = _mismatch_mask(e, a, parity, rtol, atol)
    if region is not None:
        bad &= region
    total = int(e.size if region is None else region.sum())
    n = int(bad.sum())
    diff = OutputDiff(name, parity, total, n)
    if n:
        idx = np.argwhere(bad)[:MAX_REPORTED]
        diff.first = [(tuple(int(i) for i in ix), e[tuple(ix)].item(), a[tuple(ix)].item()) for ix in idx]
        if e.dtype.kind == "f" or e.dtype == dt.BF16:
            with np.errstate(invalid="ignore"):
                ef, af = e[bad].astype(np.float64), a[bad].astype(np.float64)
                err = np.abs(ef - af)
            diff.max_abs_err = float(np.nanmax(err)) if np.isfinite(err).any() else float("inf")
            diff.max_ulp = int(_ulp_distance(e[bad], a[bad]).max())
        elif e.dtype.kind in "iub":
            diff.max_abs_err = float(np.abs(e[bad].astype(np.float64) - a[bad].astype(np.float64)).max())
    return diff


def _k5_hook(spec, expected, actual, inputs, params, diffs):
    """Greedy rows of probas EXACT; sampling rows sum to 1 within 1e-4 (§5.5)."""
    if "probas" not in expected or actual.get("probas") is None:
        return
    e, a = expected["probas"], actual["probas"]
    if e.shape != a.shape:
        return
    temps = inputs["temperatures"].astype(np.float32)
    greedy = temps < np.float32(1e-6)
    G = int(params["rows_per_req"])
    row_greedy = np.repeat(greedy, G)
    if not params.get("write_probas", True):
        row_greedy[:] = True  # untouched buffer: EXACT against its prior contents
    exact = compare_array("probas", e, a, "EXACT", region=np.broadcast_to(row_greedy[:, None], e.shape))
    d = next(x for x in diffs if x.name == "probas")
    if exact.mismatches:
        d.mismatches += exact.mismatches
        d.first = (exact.first + d.first)[:MAX_REPORTED]
        d.message = (d.message + "; " if d.message else "") + "greedy/untouched rows must be EXACT"
    if params.get("write_probas", True):
        sampling = ~row_greedy
        rows = a[sampling].astype(np.float64)
        finite_rows = np.isfinite(rows).all(axis=1) if rows.size else np.zeros(0, bool)
        sums = rows[finite_rows].sum(axis=1)
        bad_rows = np.abs(sums - 1.0) > 1e-4
        if bad_rows.any():
            d.mismatches += int(bad_rows.sum())
            d.message = (d.message + "; " if d.message else "") + \
                f"{int(bad_rows.sum())} sampling row(s) sum off 1 by > 1e-4 (worst {np.abs(sums - 1).max():.3g})"


def _k7_region(spec, expected, params):
    """next_hidden: only rows < N_unf = next_indptr[U] are compared."""
    if "next_hidden" not in expected:
        return {}
    U = int(expected["unfinished_count"][0])
    n_unf = int(expected["next_indptr"][U])
    region = np.zeros(expected["next_hidden"].shape, bool)
    region[:n_unf] = True
    return {"next_hidden": region}


_REGIONS = {"update_verify": _k7_region}
_HOOKS = {"logits_to_probas": _k5_hook}


def missing_expectations(kernel: str | KernelSpec, expected: dict) -> list[str]:
    """Non-optional outputs of the kernel that ``expected`` holds no array for."""
    spec = kernel if isinstance(kernel, KernelSpec) else kernel_spec(kernel)
    return [a.name for a in spec.outputs if not a.optional and a.name not in expected]


def compare_outputs(kernel: str | KernelSpec, expected: dict[str, np.ndarray], actual: dict[str, np.ndarray],
                    inputs: dict[str, np.ndarray], params: dict, case_id: str = "", *,
                    require_all: bool = False) -> ParityResult:
    """Compare every output that ``expected`` holds, by the spec's parity class of each.

    The result names the outputs ``actual`` holds that were not compared; with ``require_all`` (a dump
    check) a non-optional output without expectation fails the comparison.
    """
    spec = kernel if isinstance(kernel, KernelSpec) else kernel_spec(kernel)
    regions = _REGIONS.get(spec.key, lambda *_: {})(spec, expected, params)
    diffs = []
    for a in spec.outputs:
        if a.name not in expected:
            continue
        e = expected[a.name]
        if a.parity == "TOL" and spec.key == "logits_to_probas":
            diffs.append(compare_array(a.name, e, actual.get(a.name), "TOL", a.rtol, a.atol))
        else:
            diffs.append(compare_array(a.name, e, actual.get(a.name), "EXACT", region=regions.get(a.name)))
    hook = _HOOKS.get(spec.key)
    if hook:
        hook(spec, expected, actual, inputs, params, diffs)
    not_compared = sorted(k for k, v in (actual or {}).items() if k not in expected and v is not None)
    return ParityResult(spec.key, case_id, diffs, not_compared,
                        missing_expectations(spec, expected) if require_all else [])

"""The system step model of the FPGA offload: what the GPU+FPGA system gives per operating point, against the GPU
alone at the same acceptance (the work order's WP6 competition gate is on the system, not kernel against kernel).

The target model stays on the GPU. The whole draft phase (the drafter's forwards, its LM head, the tree kernels
K1-K4) moves to the FPGA; each step the verify's outputs (K7's ``next_*``: the accepted tokens' hidden states) cross
PCIe to the FPGA and the draft tree (K6's candidates and retrieve arrays, K4's tree parents) comes back. Three
schedules per point of batch B, each step time built from parts:

* (a) GPU alone: the measured step ``step_a``;
* (b) offload in series: ``step_b = other + verify + pcie(B) + fpga_draft(B)`` where ``other = step - draft -
  verify`` (the GPU's host glue and sampling, measured by difference);
* (c) two micro-batches of ``m = ceil(B/2)`` overlapped (the FPGA drafts one while the GPU verifies the other): a
  closed two-station cycle of two jobs, period ``P = 2 * max(g, h)`` with ``g = verify(m) + other(m)`` (GPU) and
  ``h = pcie(m) + fpga_draft(m)`` (link + FPGA); each micro-batch advances one step per period. Times at ``m`` are
  interpolated linearly in batch between the measured (GPU) or modelled (FPGA) batches, so a part at ``m`` is a
  ``model`` part; B=1 cannot be split.

Tokens/s of a schedule: the GPU's measured tokens/s times ``step_a / step``; ITL p50/p99: the GPU's measured ITL
percentiles shifted by ``step - step_a`` (an ITL is one step here; the step delta of a schedule is deterministic, so
the measured distribution is shifted, not reshaped). Acceptance is the same on both sides (the same drafter and
tree; the FPGA design's approximations are the contract's ``[fpga.fused]``).

Break-even (what the FPGA team needs): the FPGA draft-step latency at which (b), and (c), match (a): ``draft(B) -
pcie(B)`` at batch B for (b); ``step_a / 2 - pcie(m)`` at batch m for (c), none where the GPU's own share of two
half batches already exceeds ``step_a``. Beside them the design's current figure and each FPGA stage against its own
HBM roofline (bytes at ``[fpga] hbm_peak_gbps`` against modelled cycles at the design clock).

Every part carries provenance and the card/contract it came from; a figure carries the weakest provenance of its
parts (:func:`eagle4.provenance.weakest`). A part that is missing, or from another card or contract, is refused
with one line (:class:`OffloadRefused`); nothing is guessed (the GPU's draft/verify split is read, never inferred).
The model makes the plan; the competition gate passes only on measured parts.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from eagle4 import provenance as pv
from eagle4.report import atomic

# columns of the baseline record's per-point summary that the model reads, by name
GPU_COLUMNS = ("draft_s_median", "verify_s_median", "step_s_median", "itl_p50_s", "itl_p99_s", "tokens_per_s_mean",
               "acceptance_length", "point", "batch", "device", "card", "contract_sha256", "provenance")
POINTS_FILES = ("e2e_points.csv", "h100_e2e_points.csv")  # the record's per-point summary (yardstick's, the H100's)
DRAFT_STAGES = ("draft_lm_head", "draft step (code-derived)")  # the fused draft pipeline of the budget sheet
VERIFY_STAGES = ("verify step (code-derived)",)  # the fused verify pipeline: reported, not in the schedules
DRAFTER_STAGE = "drafter fc + layers (HBM floor; not in hls/fused)"
# the ABI arrays that cross the link each step (eagle4.spec): GPU -> FPGA, then FPGA -> GPU
TO_FPGA = (("update_verify", "next_hidden"), ("update_verify", "next_verified_id"),
           ("update_verify", "next_positions"), ("update_verify", "next_seq_lens"))
TO_GPU = (("reject_sample", "candidates"), ("reject_sample", "retrive_index"),
          ("reject_sample", "retrive_next_token"), ("reject_sample", "retrive_next_sibling"),
          ("tree_mask", "tree_parent"))
_ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "fp8": 1, "int8": 1, "int4": 0.5, "int32": 4, "int64": 8,
             "uint8": 1, "bool": 1}


class OffloadRefused(ValueError):
    """A part of the system model is missing or comes from another card or contract (one line, naming it)."""


@dataclass(frozen=True)
class Part:
    name: str
    value: float  # seconds, bytes or bytes/s as ``unit`` says
    unit: str
    provenance: str
    source: str  # where it comes from (file, formula)
    card: str = ""  # the device the part describes ("" for the FPGA and the link: [fpga] device)
    contract_sha256: str = ""


def weakest(parts) -> str:
    return pv.weakest([p.provenance for p in parts]) or "declared"


@dataclass
class GpuPoint:
    point: str
    batch: int
    parts: dict[str, Part]

    def __getitem__(self, k: str) -> float:
        return self.parts[k].value


# -- inputs ------------------------------------------------------------------------------------------------------

def points_file(record: Path) -> Path:
    for name in POINTS_FILES:
        for p in (Path(record) / name, Path(record) / f"{name}.gz"):
            if p.is_file():
                return p
    raise OffloadRefused(f"{record}: no per-point GPU record ({' or '.join(POINTS_FILES)}): the system model needs "
                         "the GPU's measured step, draft and verify times of the contract's card")


def record_card(contract, record: Path):
    """The card a record describes: its folder's under ``reports/cards/<card slug>/<contract>/``, else the
    contract's ``[baseline] card``. Every GPU row must be that card's."""
    from eagle4.cards import UnknownCard, card_of_slug
    from eagle4.contract import baseline_card

    try:
        return card_of_slug(Path(record).resolve().parent.name)
    except UnknownCard:
        return baseline_card(contract)


def read_gpu_points(contract, record: Path, points=None) -> dict[str, GpuPoint]:
    """The GPU parts of every operating point (``points``: names, default every point of the contract), from the
    record's per-point summary; OffloadRefused when a column or a point is missing, or a row is another card's or
    another contract's."""
    from eagle4.cards import UnknownCard, card_of
    from eagle4.perf.records import read_csv

    path = points_file(record)
    rows = read_csv(path)
    missing = [c for c in GPU_COLUMNS if not rows or c not in rows[0]]
    if missing:
        raise OffloadRefused(f"{path}: no column {', '.join(missing)}: the system model reads the GPU's draft/verify "
                             "split and its card and provenance, it does not guess them")
    card = record_card(contract, record)
    want = list(points) if points else [p.name for p in contract.operating_points]
    out: dict[str, GpuPoint] = {}
    for name in want:
        rr = [r for r in rows if r["point"] == name]
        if len(rr) != 1:
            raise OffloadRefused(f"{path}: {len(rr)} rows for point {name!r} (one expected)")
        r = rr[0]
        if r["contract_sha256"] != contract.sha256:
            raise OffloadRefused(f"{path}: point {name}: contract_sha256 {r['contract_sha256'][:12]} is not this "
                                 f"contract's ({contract.sha256[:12]}): parts of another contract are never combined")
        if r["card"] not in (card.name, card.slug):
            raise OffloadRefused(f"{path}: point {name}: card {r['card']!r} is not the record's card {card.name!r}")
        try:
            dev_card = card_of(r["device"])
        except UnknownCard as e:
            raise OffloadRefused(f"{path}: point {name}: {e}") from None
        if dev_card != card:
            raise OffloadRefused(f"{path}: point {name}: device {r['device']!r} is a {dev_card.name}, not the "
                                 f"record's card {card.name!r}")
        prov = pv.weakest(r["provenance"]) or ""
        if not prov:
            raise OffloadRefused(f"{path}: point {name}: empty provenance")
        parts = {}
        for k in ("step_s_median", "draft_s_median", "verify_s_median", "itl_p50_s", "itl_p99_s", "tokens_per_s_mean",
                  "acceptance_length"):
            try:
                v = float(r[k])
            except ValueError:
                v = float("nan")
            if not math.isfinite(v) or v < 0:
                raise OffloadRefused(f"{path}: point {name}: {k} = {r[k]!r} is not a non-negative number")
            unit = {"tokens_per_s_mean": "tokens/s", "acceptance_length": "tokens/step"}.get(k, "s")
            parts[k] = Part(f"GPU {k}", v, unit, prov, str(path), card.name, r["contract_sha256"])
        if parts["draft_s_median"].value + parts["verify_s_median"].value > parts["step_s_median"].value * (1 + 1e-9):
            raise OffloadRefused(f"{path}: point {name}: draft + verify ({parts['draft_s_median'].value:.6g} + "
                                 f"{parts['verify_s_median'].value:.6g} s) exceed the step "
                                 f"({parts['step_s_median'].value:.6g} s)")
        out[name] = GpuPoint(name, int(r["batch"]), parts)
    return out


@dataclass
class FpgaStage:
    stage: str
    batch: int
    cycles: float
    bytes_hbm: float
    provenance: str


def read_fpga_stages(contract, sheet: Path) -> dict[int, dict[str, FpgaStage]]:
    """{batch: {stage: FpgaStage}} of the fused designs from the budget sheet of ``eagle4 budget`` (cycles do not
    depend on the clock; HBM bytes are the stage's B_in + B_out); OffloadRefused when missing or another contract's."""
    from eagle4.perf.records import read_csv

    sheet = Path(sheet)
    if not sheet.is_file():
        raise OffloadRefused(f"{sheet}: no budget sheet (run `eagle4 budget --contract {contract.source_path} "
                             f"--reports {sheet.parent}`)")
    rows = [r for r in read_csv(sheet) if r.get("backend") == "fused"]
    other = {r["contract_sha256"] for r in rows} - {contract.sha256}
    if other:
        raise OffloadRefused(f"{sheet}: rows of contract {sorted(x[:12] for x in other)}, not this contract's "
                             f"({contract.sha256[:12]})")
    out: dict[int, dict[str, FpgaStage]] = {}
    for r in rows:
        b = int(r["batch"])
        out.setdefault(b, {})[r["stage"]] = FpgaStage(r["stage"], b, float(r["C_total"]),
                                                      float(r["B_in"]) + float(r["B_out"]),
                                                      pv.weakest(r["provenance"]) or "model")
    for b, st in out.items():
        lack = [s for s in DRAFT_STAGES if s not in st]
        if lack:
            raise OffloadRefused(f"{sheet}: batch {b}: no fused stage {', '.join(lack)}")
    if not out:
        raise OffloadRefused(f"{sheet}: no fused rows")
    return out


def _interp(xs: list[float], ys: list[float], x: float) -> float:
    """Linear interpolation in batch between known points (never extrapolated)."""
    if x < xs[0] or x > xs[-1]:
        raise OffloadRefused(f"batch {x:g} is outside the known batches {xs[0]:g}..{xs[-1]:g}")
    for (x0, y0), (x1, y1) in zip(zip(xs, ys, strict=True), zip(xs[1:], ys[1:], strict=True), strict=True):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return ys[-1]


# -- the link ----------------------------------------------------------------------------------------------------

def link_bytes(contract, batch: int) -> tuple[float, float]:
    """(GPU -> FPGA, FPGA -> GPU) bytes of one step at ``batch``: the ABI arrays of :data:`TO_FPGA` / :data:`TO_GPU`
    at the contract's shapes (S = tree depth + 1, Q = T = verify tokens, H = [fpga.model] hidden); the EAGLE-3
    drafter takes ``drafter_fc_in`` hidden states per accepted token, so ``next_hidden`` counts that many times."""
    from eagle4.contract import fpga_section
    from eagle4.spec import kernel_spec, shape_of

    m = fpga_section(contract).model
    d = contract.decode
    env = {"B": batch, "S": d.tree_depth + 1, "Q": d.verify_num, "T": d.verify_num, "H": m.hidden_size}

    def nbytes(pairs) -> float:
        tot = 0.0
        for k, a in pairs:
            arg = kernel_spec(k).arg(a)
            dtype = m.hidden_dtype if arg.dtype == "hidden" else arg.dtype
            n = math.prod(shape_of(arg, env)) * _ITEMSIZE[dtype]
            tot += n * (max(1, m.drafter_fc_in) if a == "next_hidden" else 1)
        return tot

    return nbytes(TO_FPGA), nbytes(TO_GPU)


def link_parts(contract, batch: float) -> tuple[Part, Part]:
    """(bytes of one step at ``batch``, their transfer time at the declared link): bytes ``computed`` from the ABI,
    time ``declared`` (bandwidth and per-direction latency of ``[fpga]``)."""
    from eagle4.contract import fpga_section

    f = fpga_section(contract)
    lo, hi = math.floor(batch), math.ceil(batch)
    up_lo, dn_lo = link_bytes(contract, max(1, lo))
    up_hi, dn_hi = link_bytes(contract, max(1, hi))
    w = batch - lo if hi != lo else 0.0
    b = (up_lo + dn_lo) * (1 - w) + (up_hi + dn_hi) * w
    t = b / (f.pcie_gbps * 1e9) + 2 * f.pcie_latency_us * 1e-6
    return (Part("PCIe bytes per step", b, "B", "computed", "eagle4.spec ABI x contract shapes"),
            Part("PCIe transfer per step", t, "s", "declared",
                 f"[fpga] pcie_gbps = {f.pcie_gbps:g}, pcie_latency_us = {f.pcie_latency_us:g} x 2 directions"))


# -- FPGA draft --------------------------------------------------------------------------------------------------

def drafter_floor_bytes(contract) -> float:
    """HBM bytes of the drafter's own forwards per step (fc once, its decoder layers once per tree level), at the
    fused design's drafter dtype: the part of the draft ``hls/fused`` does not implement, counted at its floor."""
    from eagle4.contract import fpga_section

    f = fpga_section(contract)
    m = f.model
    fc = m.drafter_fc_in * m.hidden_size * m.hidden_size
    layers = m.drafter_params - fc
    return (fc + contract.decode.tree_depth * layers) * _ITEMSIZE[f.fused.drafter_dtype]


def fpga_draft_parts(contract, stages: dict[int, dict[str, FpgaStage]], batch: float) -> list[Part]:
    """The FPGA draft step at ``batch`` by part: each fused draft stage (cycles at the design clock, interpolated in
    batch between the sheet's batches: then ``model`` at best) and the drafter's forwards at their HBM floor."""
    from eagle4.contract import fpga_section

    f = fpga_section(contract)
    fclk = f.fclk_target_mhz * 1e6
    bs = sorted(stages)
    out = []
    for s in DRAFT_STAGES:
        c = _interp([float(b) for b in bs], [stages[b][s].cycles for b in bs], float(batch))
        prov = pv.weakest([stages[b][s].provenance for b in bs if b in (math.floor(batch), math.ceil(batch))]
                          + ([] if batch in stages else ["model"]))
        out.append(Part(f"FPGA {s}", c / fclk, "s", prov, f"budget sheet, {f.fclk_target_mhz:g} MHz",
                        f.device, ""))
    out.append(Part(f"FPGA {DRAFTER_STAGE}", drafter_floor_bytes(contract) / (f.hbm_peak_gbps * 1e9), "s",
                    "computed", f"[fpga.model] drafter at {f.fused.drafter_dtype}, {f.hbm_peak_gbps:g} GB/s",
                    f.device, ""))
    return out


# -- schedules ---------------------------------------------------------------------------------------------------

@dataclass
class Schedule:
    name: str
    step_s: float
    tokens_per_s: float
    itl_p50_s: float
    itl_p99_s: float
    provenance: str
    terms: dict[str, float] = field(default_factory=dict)  # the step's named contributions (s)
    note: str = ""


def _shifted(name, gp: GpuPoint, step: float, prov: str, terms, note="") -> Schedule:
    a = gp["step_s_median"]
    return Schedule(name, step, gp["tokens_per_s_mean"] * a / step, gp["itl_p50_s"] + step - a,
                    gp["itl_p99_s"] + step - a, prov, terms, note)


def series_step(other: float, verify: float, pcie: float, fpga_draft: float) -> float:
    return other + verify + pcie + fpga_draft


def overlapped_period(gpu_mb: float, fpga_mb: float) -> float:
    """Period of two micro-batches alternating between the GPU (``gpu_mb`` each) and link + FPGA (``fpga_mb``):
    max(gpu + fpga, 2 gpu, 2 fpga) = 2 max(gpu, fpga)."""
    return 2.0 * max(gpu_mb, fpga_mb)


@dataclass
class PointModel:
    point: str
    batch: int
    acceptance: float
    schedules: dict[str, Schedule]
    break_even_b_s: float | None  # FPGA draft step at batch B for (b) == (a); None: no such latency
    break_even_c_s: float | None  # FPGA draft step at the micro-batch for (c) == (a)
    micro_batch: int | None
    fpga_draft_b_s: float  # the design's current figure at B
    fpga_draft_c_s: float | None  # ... at the micro-batch
    parts: list[Part]
    roofline: list[dict]
    bottlenecks: list[str]
    gate: str
    gate_provenance: str


def _gpu_at(gps: dict[str, GpuPoint], key: str, batch: float) -> float:
    pts = sorted(gps.values(), key=lambda g: g.batch)
    return _interp([float(g.batch) for g in pts], [g[key] for g in pts], batch)


def model_point(contract, gp: GpuPoint, gps: dict[str, GpuPoint], stages) -> PointModel:
    B = gp.batch
    step_a, draft, verify = gp["step_s_median"], gp["draft_s_median"], gp["verify_s_median"]
    other = step_a - draft - verify
    gpu_parts = [gp.parts[k] for k in ("step_s_median", "draft_s_median", "verify_s_median", "itl_p50_s",
                                       "itl_p99_s", "tokens_per_s_mean", "acceptance_length")]
    a = Schedule("(a) GPU alone", step_a, gp["tokens_per_s_mean"], gp["itl_p50_s"], gp["itl_p99_s"],
                 weakest(gpu_parts), {"GPU draft": draft, "GPU verify": verify, "GPU other": other})
    nbytes, pcie = link_parts(contract, B)
    fparts = fpga_draft_parts(contract, stages, B)
    fdraft = sum(p.value for p in fparts)
    b_parts = [*gpu_parts, nbytes, pcie, *fparts]
    b = _shifted("(b) offload, series", gp, series_step(other, verify, pcie.value, fdraft), weakest(b_parts),
                 {"GPU verify": verify, "GPU other": other, "PCIe": pcie.value, **{p.name: p.value for p in fparts}})
    be_b = draft - pcie.value
    scheds = {"a": a, "b": b}
    all_parts = list(b_parts)
    mb = math.ceil(B / 2) if B >= 2 else None
    be_c = fdraft_c = None
    if mb is not None:
        try:
            g = _gpu_at(gps, "verify_s_median", mb) + (_gpu_at(gps, "step_s_median", mb) - _gpu_at(gps, "draft_s_median", mb)
                                                       - _gpu_at(gps, "verify_s_median", mb))
            _, pcie_m = link_parts(contract, mb)
            fp_m = fpga_draft_parts(contract, stages, mb)
        except OffloadRefused as e:
            scheds["c"] = Schedule("(c) offload, 2 micro-batches overlapped", float("nan"), float("nan"),
                                   float("nan"), float("nan"), "", note=f"not modelled: micro-batch {mb}: {e}")
        else:
            fdraft_c = sum(p.value for p in fp_m)
            h = pcie_m.value + fdraft_c
            interp = [] if any(x.batch == mb for x in gps.values()) else [
                Part(f"GPU times at batch {mb} (interpolated)", g, "s", "model", "linear in batch")]
            c_parts = [*gpu_parts, *interp, pcie_m, *fp_m]
            all_parts += [*interp, *fp_m]
            scheds["c"] = _shifted("(c) offload, 2 micro-batches overlapped", gp, overlapped_period(g, h),
                                   weakest(c_parts), {f"GPU verify+other x2 (micro-batch {mb})": 2 * g,
                                                      f"PCIe + FPGA draft x2 (micro-batch {mb})": 2 * h},
                                   note=f"micro-batch {mb}")
            be_c = step_a / 2 - pcie_m.value if 2 * g <= step_a else None
    else:
        scheds["c"] = Schedule("(c) offload, 2 micro-batches overlapped", float("nan"), float("nan"), float("nan"),
                               float("nan"), "", note="batch 1 cannot be split into two micro-batches")
    roof = roofline(contract, stages, B)
    # the offload-side terms of the best schedule, largest first: what the FPGA team must shrink
    off = {"PCIe transfer": pcie.value, **{p.name: p.value for p in fparts}}
    bottlenecks = [f"{k} {v * 1e3:.3f} ms" for k, v in sorted(off.items(), key=lambda kv: -kv[1])[:2]]
    best = min((s for s in (b, scheds["c"]) if math.isfinite(s.step_s)), key=lambda s: s.step_s)
    win = best.itl_p99_s < a.itl_p99_s or best.tokens_per_s > a.tokens_per_s
    gprov = pv.weakest([best.provenance, a.provenance]) or "declared"
    if win and gprov == "measured":
        gate = f"PASS ({best.name})"
    elif win:
        gate = f"plan: {best.name} would win; not a sign-off (weakest part {gprov})"
    else:
        gate = f"SHORT: best {best.name} step {best.step_s * 1e3:.3f} ms vs GPU {step_a * 1e3:.3f} ms"
    return PointModel(gp.point, B, gp["acceptance_length"], scheds, be_b if be_b > 0 else None, be_c, mb, fdraft,
                      fdraft_c, all_parts, roof, bottlenecks, gate, gprov)


def roofline(contract, stages, batch: int) -> list[dict]:
    """Each fused stage at ``batch`` against its own HBM floor (its B_in + B_out at ``[fpga] hbm_peak_gbps``), the
    modelled time at the design clock; empty where the sheet has no such batch."""
    from eagle4.contract import fpga_section

    f = fpga_section(contract)
    out = []
    for s, st in sorted((stages.get(batch) or {}).items()):
        if s not in DRAFT_STAGES + VERIFY_STAGES:
            continue
        floor = st.bytes_hbm / (f.hbm_peak_gbps * 1e9)
        t = st.cycles / (f.fclk_target_mhz * 1e6)
        out.append({"stage": s, "bytes": st.bytes_hbm, "floor_s": floor, "model_s": t,
                    "ratio": t / floor if floor > 0 else float("inf"), "provenance": st.provenance})
    return out


# -- the report --------------------------------------------------------------------------------------------------

CSV_FIELDS = ["contract_sha256", "card", "point", "batch", "schedule", "step_s", "tokens_per_s", "itl_p50_s",
              "itl_p99_s", "acceptance_length", "provenance", "note"]


def _ms(x) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x * 1e3:.3f}"


def system_model(contract, record: Path, budget_sheet: Path, points=None) -> list[PointModel]:
    gps = read_gpu_points(contract, record, points)
    stages = read_fpga_stages(contract, budget_sheet)
    if points:  # interpolation for micro-batches may use every point of the record the contract names
        try:
            gps_all = read_gpu_points(contract, record)
        except OffloadRefused:
            gps_all = gps
    else:
        gps_all = gps
    return [model_point(contract, gp, gps_all, stages) for gp in gps.values()]


def render(contract, models: list[PointModel], record: Path, budget_sheet: Path) -> str:
    from eagle4.contract import baseline_card, fpga_section

    f = fpga_section(contract)
    card = record_card(contract, record)
    base = baseline_card(contract)
    aside = "" if card == base else f"; not the contract's [baseline] card {base.name}"
    overall = pv.weakest([m.gate_provenance for m in models]) or "declared"
    L = ["# FPGA offload: the system step model (GPU + FPGA against the GPU alone)", "",
         f"Contract `{contract.contract.name}` (`{contract.sha256[:12]}`), GPU card **{card.name}** (record "
         f"`{record}`{aside}), FPGA {f.device} at {f.fclk_target_mhz:g} MHz (design clock, model), link "
         f"{f.pcie_gbps:g} GB/s + {f.pcie_latency_us:g} us per direction (declared), budget sheet `{budget_sheet}`. "
         f"Generated by `eagle4.workload.offload_model` (see its docstring for the schedules); weakest provenance of "
         f"the figures: **{overall}**. The model makes the plan; only measured parts sign off.", "",
         "## Schedules per operating point", "",
         "| point | batch | acceptance | schedule | step (ms) | tokens/s | ITL p50 (ms) | ITL p99 (ms) | provenance | note |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for m in models:
        for s in m.schedules.values():
            tps = "-" if not math.isfinite(s.tokens_per_s) else f"{s.tokens_per_s:.1f}"
            L.append(f"| {m.point} | {m.batch} | {m.acceptance:.3f} | {s.name} | {_ms(s.step_s)} | {tps} | "
                     f"{_ms(s.itl_p50_s)} | {_ms(s.itl_p99_s)} | {s.provenance or '-'} | {s.note} |")
    L += ["", "## Break-even FPGA draft step (the latency the FPGA must reach for the schedule to match the GPU alone)",
          "", "| point | GPU draft (ms) | PCIe per step (ms) | (b) at batch B (ms) | FPGA draft now at B (ms) | "
          "(c) at micro-batch (ms) | micro-batch | FPGA draft now at micro-batch (ms) |", "|---|---|---|---|---|---|---|---|"]
    for m in models:
        bb = _ms(m.break_even_b_s) if m.break_even_b_s is not None else "none (the link alone exceeds the GPU draft)"
        bc = ("n/a" if m.micro_batch is None else _ms(m.break_even_c_s) if m.break_even_c_s is not None
              else "none (the GPU's two half batches exceed its step)")
        L.append(f"| {m.point} | {_ms(m.schedules['a'].terms['GPU draft'])} | {_ms(m.schedules['b'].terms['PCIe'])} | "
                 f"{bb} | {_ms(m.fpga_draft_b_s)} | {bc} | {m.micro_batch or '-'} | "
                 f"{_ms(m.fpga_draft_c_s)} |")
    L += ["", f"## FPGA stages against their own HBM roofline ({f.hbm_peak_gbps:g} GB/s, B_in + B_out of the budget "
          f"sheet, modelled cycles at {f.fclk_target_mhz:g} MHz)", "",
          "| point | stage | HBM bytes | floor (ms) | model (ms) | model / floor | provenance |",
          "|---|---|---|---|---|---|---|"]
    for m in models:
        for r in m.roofline:
            L.append(f"| {m.point} | {r['stage']} | {r['bytes']:.4g} | {r['floor_s'] * 1e3:.4g} | {_ms(r['model_s'])} | "
                     f"{r['ratio']:.3g}x | {r['provenance']} |")
        if m.roofline:
            far = max(m.roofline, key=lambda r: r["ratio"])
            gap = max(m.roofline, key=lambda r: r["model_s"] - r["floor_s"])
            L.append(f"| {m.point} | furthest from its limit: **{far['stage']}** ({far['ratio']:.3g}x); most time "
                     f"above its floor: **{gap['stage']}** (+{_ms(gap['model_s'] - gap['floor_s'])} ms) | | | | | |")
    L += ["", "## Competition gate (WP6) on the system figure, at the same acceptance", "",
          "| point | verdict | weakest provenance | top-2 offload bottlenecks |", "|---|---|---|---|"]
    for m in models:
        L.append(f"| {m.point} | {m.gate} | {m.gate_provenance} | {'; '.join(m.bottlenecks)} |")
    signed = bool(models) and all(m.gate.startswith("PASS") for m in models)
    L += ["", "**" + ("SYSTEM GATE: PASS at every point (measured parts)" if signed else
                      f"SYSTEM GATE: NO SIGN-OFF (weakest part {overall}; the model is a plan)") + "**", "",
          "## Notes", "",
          "* GPU parts: the record's measured medians (step, draft, verify) and ITL percentiles; `other` = step - "
          "draft - verify stays on the GPU. Micro-batch GPU times are interpolated linearly in batch between measured "
          "points (provenance `model`).",
          "* FPGA draft = the fused draft pipeline's modelled stages (`draft_lm_head`, `draft step (code-derived)`) "
          f"plus the drafter's fc and {contract.decode.tree_depth} layer forwards, which `hls/fused` does not "
          "implement, at their HBM floor (`computed`): a lower bound.",
          "* The fused verify pipeline is shown against its roofline but kept on the GPU in the schedules: moving "
          "K5-K7 would carry the target's logits over the link.",
          "* PCIe bytes per step: K7's `next_*` outputs to the FPGA (the hidden states x the drafter's fc inputs), "
          "K6's candidates/retrieve arrays and K4's tree parents back (eagle4.spec at the contract's shapes)."]
    return "\n".join(L) + "\n"


def write(contract, out_dir, *, record=None, budget_sheet=None, points=None) -> dict:
    """Model every point and write ``fpga_system_offload.md`` / ``.csv`` in ``out_dir``; OffloadRefused (one
    line) when a part is missing or another card's or contract's."""
    from eagle4.perf.records import baseline_dir

    out = Path(out_dir)
    record = Path(record) if record else baseline_dir(contract)
    sheet = Path(budget_sheet) if budget_sheet else out / "budget_sheet.csv"
    models = system_model(contract, record, sheet, points)
    out.mkdir(parents=True, exist_ok=True)
    card = record_card(contract, record).name
    paths = {"summary": out / "fpga_system_offload.md", "raw": out / "fpga_system_offload.csv"}
    with atomic.atomic_open(paths["raw"], "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        w.writeheader()
        for m in models:
            for s in m.schedules.values():
                w.writerow({"contract_sha256": contract.sha256, "card": card, "point": m.point, "batch": m.batch,
                            "schedule": s.name, "step_s": s.step_s, "tokens_per_s": s.tokens_per_s,
                            "itl_p50_s": s.itl_p50_s, "itl_p99_s": s.itl_p99_s, "acceptance_length": m.acceptance,
                            "provenance": s.provenance, "note": s.note})
    atomic.write_text(paths["summary"], render(contract, models, record, sheet))
    return {"models": models, "paths": paths}


def summary_lines(models: list[PointModel]) -> list[str]:
    """One line per point for a console or a step's notes."""
    out = []
    for m in models:
        s = m.schedules
        out.append(f"system {m.point}: GPU {_ms(s['a'].step_s)} ms, series {_ms(s['b'].step_s)} ms, overlapped "
                   f"{_ms(s['c'].step_s)} ms; break-even FPGA draft {_ms(m.break_even_b_s)} ms (now "
                   f"{_ms(m.fpga_draft_b_s)}); {m.gate}")
    return out


def one_line(models: list[PointModel], path) -> str:
    """The system gate in one line: each point's verdict word and the weakest provenance, and where the report is."""
    prov = pv.weakest([m.gate_provenance for m in models]) or "declared"
    return (f"system model ({path.name}, weakest part {prov}; a plan, never the verdict): "
            + ", ".join(f"{m.point} {_word(m.gate)}" for m in models))


def _word(gate: str) -> str:
    return "PASS" if gate.startswith("PASS") else "would win (plan)" if gate.startswith("plan") else "SHORT"

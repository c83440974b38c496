"""A cycle model of the fused designs derived from the code, not declared.

* The lanes and II of every counted loop are the named constants of ``hls/fused/common/e4f_perf.h``, the
  very constants its ``#pragma HLS PIPELINE II = E4F_II_<ID>`` (and ``UNROLL factor = E4F_LANES_<ID>``)
  lines name; :func:`check_pragmas` fails when a pragma and its constant disagree.
* Loops declared ``E4F_PINGPONG(X) X(producer, consumer)`` run side by side (double-buffered tiles): the
  model charges ``max(producer - its exposed trips, sum of its consumers) + its exposed trips`` (the
  exposed trips are the first tile's, counted in C-sim with ``E4F_EXPOSED``); every other loop adds up.
* The trip counts are counted by the C-sim (``E4F_TRIPS``) on trace-shaped inputs and scaled to the
  model's H and V exactly as the port bytes are (affine in H and V, bilinear for the LM head, checked on a
  5th point): ``C_loops = sum over loops of trips x II / lanes`` (ping-pong pairs as above).
* An m_axi bundle moves one element per cycle, or a full beat (``max_widen_bitwidth``/8 bytes) for a
  port its pragma widens: ``C_ports = the busiest bundle's accesses`` (bundles and widths from the
  synthesis top's INTERFACE pragmas, bytes from the port counters).
* ``cycles = max(C_loops, C_ports)``: a lower bound (no control overhead, no stalls; K6's sampling passes
  and the K1-K4 cores' loops are not counted, nor a row's tail past its last full beat; their port accesses
  are).

Where a synthesis report of a design exists (``<[fpga].synth_reports_dir>/<design>/csynth.xml``), its
latency and estimated clock replace the model and the provenance says ``synthesis``.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from pathlib import Path

from eagle4.backends import csim_build

FUSED_DIR = csim_build.HLS_DIR / "fused"
PERF_H = FUSED_DIR / "common" / "e4f_perf.h"
SYNTH_TOP = {"fused_draft": FUSED_DIR / "draft_pipeline" / "draft_pipeline_synth.cpp",
             "fused_verify": FUSED_DIR / "verify_pipeline" / "verify_pipeline_synth.cpp"}

_PRAGMA_PIPE = re.compile(r"^\s*#pragma\s+HLS\s+PIPELINE\b(.*)$", re.I)
_TRIPS = re.compile(r"\bE4F_TRIPS\(\s*(\w+)\s*,")


def loop_constants(perf_h: Path = PERF_H) -> dict[str, tuple[int, int]]:
    """{loop id: (II, lanes)} as e4f_perf.h defines them."""
    text = perf_h.read_text()
    ids = re.findall(r"X\((\w+)\)", text[text.index("#define E4F_LOOPS"):])
    out = {}
    for i in ids:
        ii = re.search(rf"#define E4F_II_{i}\s+(\d+)", text)
        lanes = re.search(rf"#define E4F_LANES_{i}\s+(\d+)", text)
        if not ii or not lanes:
            raise ValueError(f"{perf_h}: loop {i} lacks E4F_II_{i} or E4F_LANES_{i}")
        out[i] = (int(ii.group(1)), int(lanes.group(1)))
    return out


def pingpong_pairs(perf_h: Path = PERF_H) -> dict[str, tuple[str, ...]]:
    """{producer loop: (its consumer loops)} of e4f_perf.h's E4F_PINGPONG."""
    text = perf_h.read_text()
    m = re.search(r"#define\s+E4F_PINGPONG\(X\)([^\n]*)", text)
    out: dict[str, tuple[str, ...]] = {}
    for prod, cons in re.findall(r"X\(\s*(\w+)\s*,\s*(\w+)\s*\)", m.group(1) if m else ""):
        out[prod] = (*out.get(prod, ()), cons)
    return out


def check_pragmas(root: Path = FUSED_DIR, perf_h: Path = PERF_H) -> list[str]:
    """Every way the pragmas and the model's constants can disagree, one line each ('' list: they agree):
    a counted loop whose PIPELINE pragma is missing or names another II (a literal included), a PIPELINE
    pragma on no counted loop, a loop id never counted, lanes > 1 without its UNROLL pragma."""
    consts = loop_constants(perf_h)
    problems, counted, unrolls = [], set(), set()
    for f in sorted(p for p in Path(root).rglob("*") if p.suffix in (".cpp", ".hpp", ".h")):
        lines = f.read_text().splitlines()
        for n, line in enumerate(lines):
            where = f"{f.relative_to(root.parent)}:{n + 1}"
            m = _TRIPS.search(line)
            if m and "#define" not in line and not line.lstrip().startswith("//"):
                lid = m.group(1)
                counted.add(lid)
                prev = lines[n - 1] if n else ""
                pm = _PRAGMA_PIPE.match(prev)
                if lid not in consts:
                    problems.append(f"{where}: E4F_TRIPS({lid}) counts a loop e4f_perf.h does not declare")
                elif not pm:
                    problems.append(f"{where}: loop {lid} is counted but the line before is not its "
                                    f"'#pragma HLS PIPELINE II = E4F_II_{lid}'")
                elif not re.search(rf"\bII\s*=\s*E4F_II_{lid}\b", pm.group(1)):
                    problems.append(f"{where}: loop {lid}: the pragma says '{prev.strip()}', the model uses "
                                    f"E4F_II_{lid} = {consts[lid][0]}")
            pm = _PRAGMA_PIPE.match(line)
            if pm and not (n + 1 < len(lines) and _TRIPS.search(lines[n + 1])):
                problems.append(f"{where}: '{line.strip()}' pipelines a loop the cycle model does not count "
                                "(add E4F_TRIPS and an e4f_perf.h constant)")
            um = re.search(r"#pragma\s+HLS\s+UNROLL\b.*factor\s*=\s*E4F_LANES_(\w+)", line)
            if um:
                unrolls.add(um.group(1))
    for prod, cons in pingpong_pairs(perf_h).items():
        for lid in (prod, *cons):
            if lid not in consts:
                problems.append(f"{perf_h.name}: E4F_PINGPONG names {lid}, which is no loop of E4F_LOOPS")
    for lid, (_, lanes) in consts.items():
        if lid not in counted:
            problems.append(f"{perf_h.name}: loop {lid} is declared but no E4F_TRIPS({lid}) counts it")
        if lanes > 1 and lid not in unrolls:
            problems.append(f"{perf_h.name}: E4F_LANES_{lid} = {lanes} but no '#pragma HLS UNROLL factor = "
                            f"E4F_LANES_{lid}' in the code")
    return problems


def bundles(design: str) -> dict[str, tuple[str, int]]:
    """{port: (m_axi bundle, bytes per beat)} from the synthesis top's INTERFACE pragmas: a port declared
    with ``max_widen_bitwidth = N`` moves N/8 bytes per cycle (its loop reads full beats), any other port
    one element per cycle (0 here: the element size)."""
    text = SYNTH_TOP[design].read_text()
    out = {}
    for m in re.finditer(r"#pragma\s+HLS\s+INTERFACE\s+m_axi\s+port\s*=\s*(\w+)([^\n]*)", text):
        b = re.search(r"bundle\s*=\s*(\w+)", m.group(2))
        w = re.search(r"max_widen_bitwidth\s*=\s*(\d+)", m.group(2))
        out[m.group(1)] = (b.group(1) if b else f"({m.group(1)})", int(w.group(1)) // 8 if w else 0)
    return out


EXPOSED = "@exposed"  # suffix of a loop's exposed trips in loop_trips()


def loop_trips() -> dict[str, int]:
    """The loop trips of the last fused entry call (C-sim); ``<id>@exposed``: those of a ping-pong producer
    that no consumer overlaps (only for producers)."""
    from eagle4.backends import fused_csim as fc

    lib = fc.load_library()
    lib.eagle4_fused_loop_names.restype = ctypes.c_char_p
    names = [n for n in lib.eagle4_fused_loop_names().decode().split(",") if n]
    buf = (ctypes.c_uint64 * len(names))()
    lib.eagle4_fused_loop_trips(buf, len(names))
    out = dict(zip(names, (int(x) for x in buf), strict=True))
    lib.eagle4_fused_loop_exposed(buf, len(names))
    for n, x in zip(names, buf, strict=True):
        if n in pingpong_pairs():
            out[n + EXPOSED] = int(x)
    return out


@dataclass
class StepCycles:
    design: str
    batch: int
    c_loops: float
    c_ports: float
    busiest_bundle: str
    loops: dict[str, float]  # loop id -> cycles
    source: str  # "model (code-derived)" or "synthesis:<file>"
    synth: dict | None = None

    @property
    def cycles(self) -> float:
        if self.synth:
            return float(self.synth["latency_worst"])
        return max(self.c_loops, self.c_ports)

    def latency_us(self, fclk_mhz: float) -> float:
        return self.cycles / fclk_mhz

    @property
    def provenance(self) -> str:
        return "synthesis" if self.synth else "model"


def _synth_report(design: str, reports_dir: Path) -> tuple[dict, str] | None:
    p = reports_dir / design / "csynth.xml"
    if not p.is_file():
        return None
    from eagle4.report.synth_report import parse_report

    rep = parse_report(p)
    if rep.get("latency_worst") is None or not rep.get("clock_estimated_ns"):
        return None
    return rep, f"synthesis:{p}"


# The draft LM head, reported apart from the rest of the draft step (its loops and its ports): consumers
# that compare with the H100 leave it out (it is part of the model's forward there).
LM_HEAD_LOOPS = ("LMH_HLOAD", "LMH_WLOAD", "LMH_MAC", "LMH_RED")
LM_HEAD_PORTS = ("draft_hidden", "lm_weight0", "lm_weight1", "lm_weight2", "lm_weight3", "lm_scale", "lm_spill")


def _cycles_of(design: str, B: int, counts: dict[str, tuple[int, int]], elem: dict[str, int], consts,
               part: str = "all") -> StepCycles:
    """part: 'all', 'lm_head' (the LM head's loops and ports only) or 'rest' (everything else)."""
    def mine(lid_or_port: str, lm: bool) -> bool:
        return part == "all" or (part == "lm_head") == lm

    loops = {k[5:]: r for k, (r, _) in counts.items() if k.startswith("loop:")}
    per_loop = {lid: loops.get(lid, 0) * consts[lid][0] / consts[lid][1] for lid in consts
                if mine(lid, lid in LM_HEAD_LOOPS)}
    c_loops = sum(per_loop.values())
    for prod, cons in pingpong_pairs().items():  # the producer runs beside its consumers but for its first tile
        if prod not in per_loop:
            continue
        exposed = loops.get(prod + EXPOSED, 0) * consts[prod][0] / consts[prod][1]
        hidden = per_loop[prod] - exposed
        c_loops -= min(hidden, sum(per_loop.get(c, 0.0) for c in cons))
    bmap = bundles(design)
    by_bundle: dict[str, float] = {}
    for k, (r, w) in counts.items():
        if not k.startswith("port:") or not mine(k[5:], k[5:] in LM_HEAD_PORTS):
            continue
        port = k[5:]
        b, beat = bmap.get(port, (f"({port})", 0))
        by_bundle[b] = by_bundle.get(b, 0.0) + (r + w) / max(beat, elem.get(port, 1), 1)
    busiest = max(by_bundle, key=by_bundle.get) if by_bundle else ""
    return StepCycles(design, B, c_loops, by_bundle.get(busiest, 0.0), busiest, per_loop,
                      "model (code-derived: e4f_perf.h constants x C-sim trip counts)")


GRAIN = 128  # the weight tile (E4F_LMH_IL rows), the 512-bit beats (128 packed int4 weights) and the 16-lane row passes divide it


def _multiple(x: int, g: int) -> int:
    return max(g, -(-x // g) * g)


def step_cycles(r, *, reports_dir: Path | None = None) -> list[StepCycles]:
    """Cycles of the fused designs ([fpga.fused]) at every batch of the trace: the draft LM head
    (``fused_draft_lm_head``), the rest of the draft step (``fused_draft``) and the verify step."""
    import numpy as np

    from eagle4.backends import csim_build
    from eagle4.backends import fused_csim as fc
    from eagle4.budget import bytes as bb

    problems = check_pragmas()
    if problems:
        raise ValueError("the cycle model refuses code whose pragmas disagree with its constants:\n" + "\n".join(problems))
    consts = loop_constants()
    f, dec, m, cs = r.fpga, r.trace.decode, r.fpga.model, r.fpga.csim
    for size, what in ((m.hidden_size, "hidden_size"), (m.vocab_size, "vocab_size"),
                       (m.hot_vocab_size if f.fused.lm_head_vocab == "hot" else m.vocab_size, "LM-head vocabulary")):
        if size % GRAIN:
            raise ValueError(f"[fpga.model] {what} = {size} is not a multiple of {GRAIN}: the cycle model's "
                             "tile and beat counts are exact only at multiples (masked tails)")
    decl = f.fused
    K, widths, N, M, I, S, Q, L = dec["K"], dec["widths"], dec["N"], dec["M"], dec["I"], dec["S"], dec["Q"], r.trace.prefix_len
    use_hot = decl.lm_head_vocab == "hot"
    reports_dir = Path(reports_dir) if reports_dir else csim_build.REPO / f.synth_reports_dir
    out = []
    for B in r.batches:
        elem_d: dict[str, int] = {}

        def run_d(h, v, B=B, elem=elem_d):
            s = fc.DraftShape(B=B, K=K, widths=widths, H=h, Vt=v, V=max(v + 1, cs.vocab) if use_hot else 0, N=N, M=M,
                              I=I, L=L, verify_num=dec["Vn"], use_hot=use_hot, hidden_dtype=m.hidden_dtype,
                              weight_dtype=decl.lm_head_dtype, seed=B)
            a = fc.make_draft_inputs(s)
            elem.update({k: x.dtype.itemsize for k, x in a.items()})
            _, cnt = fc.run_draft("fused", s, a)
            return {**{f"port:{p}": c for p, c in cnt.items()}, **{f"loop:{k}": (t, 0) for k, t in loop_trips().items()}}

        # the MAC array and the weight beats count whole tiles and beats: fit at sizes that are multiples of
        # both (as the model's are), so the trips are exactly affine there
        h0, v0 = _multiple(cs.hidden, GRAIN), _multiple(cs.hot_vocab if use_hot else cs.vocab, GRAIN)
        coefs, _ = bb._fit(run_d, h0, v0, bilinear=True, check=(3 * h0, 3 * v0 + GRAIN))
        full = bb._eval(coefs, m.hidden_size, m.hot_vocab_size if use_hot else m.vocab_size)
        lm = _cycles_of("fused_draft", B, full, elem_d, consts, "lm_head")
        lm.design = "fused_draft_lm_head"
        d = _cycles_of("fused_draft", B, full, elem_d, consts, "rest")
        cyc = next(c for c in r.trace.cycles if c.batch == B)
        elem_v: dict[str, int] = {}

        def run_v(h, v, B=B, cyc=cyc, elem=elem_v):
            s = fc.VerifyShape(B=B, Q=Q, S=S, V=v, H=h, L=L, hidden_dtype=m.hidden_dtype, temperatures=cyc.temperatures,
                               threshold_single=dec["threshold_single"], threshold_acc=dec["threshold_acc"],
                               seed=1000 + cyc.index)
            rng = np.random.default_rng(cyc.index)
            par = np.stack([bb._trace_tree(rng, Q, S) for _ in range(B)])
            a = fc.make_verify_inputs(s, parents=par, accept=cyc.accept)
            elem.update({k: x.dtype.itemsize for k, x in a.items() if x is not None})
            _, cnt = fc.run_verify("fused", s, a, debug=False)
            return {**{f"port:{p}": c for p, c in cnt.items()}, **{f"loop:{k}": (t, 0) for k, t in loop_trips().items()}}

        h0, v0 = _multiple(cs.hidden, GRAIN), _multiple(cs.vocab, GRAIN)
        coefs, _ = bb._fit(run_v, h0, v0, bilinear=False, check=(3 * h0, 3 * v0 + GRAIN))
        v = _cycles_of("fused_verify", B, bb._eval(coefs, m.hidden_size, m.vocab_size), elem_v, consts)
        for sc in (lm, d, v):
            rep = _synth_report(sc.design, reports_dir) if sc.design in SYNTH_TOP else None
            if rep:
                sc.synth, sc.source = rep
            out.append(sc)
        if (d.synth is not None) != (lm.synth is not None):  # a report covers the whole draft design
            lm.synth, lm.source = d.synth, d.source
    return out


__all__ = ["loop_constants", "pingpong_pairs", "check_pragmas", "step_cycles", "StepCycles", "bundles", "loop_trips"]

"""Static csynth-readiness checks of the HLS designs: what Vitis ignores or rejects, found without Vitis.

Rules (each problem is one line naming the file and line):

* ``interface``: ``#pragma HLS INTERFACE`` only inside a design's synthesis top (design.desc ``top``);
  elsewhere Vitis ignores it and the port lands on a default bundle.
* ``dataflow-first``: ``#pragma HLS DATAFLOW`` is the first statement of a function body (a region inside
  a loop or a branch is not a canonical dataflow region).
* ``dataflow-tasks``: a DATAFLOW function's body holds declarations and unconditional task calls only (no
  ``if``/``else``/``for``/``while``/``switch`` at its top level: a conditional task breaks the region).
* ``pipeline-constants`` (``eagle4.budget.cycles.check_pragmas``): every PIPELINE pragma of the fused
  designs names the cycle model's constant of its counted loop.
* ``hot-bundle``: a hot stream (an m_axi port widened to 512 bits, ``max_widen_bitwidth = 512``) has its
  bundle to itself; a second port on it shares the AXI master and serializes the stream's beats.

Rules of the loops, over every design's own sources in their synthesis view (eagle4.backends.hls_calltree:
the preprocessor branches Vitis compiles). The port names of a per-kernel design (one with a testbench) are
the m_axi ports of its top and its core's accessor parameters; those of a fused design are found by scope
(eagle4.backends.hls_dataflow.port_scope: the port-typed parameters and struct members around the loop). The
checks are lexical (a helper function called from a loop is checked where it is defined, not where it is
called):

* ``conditional-port``: no access to an m_axi port under an ``if``/``else`` or a ``?:`` inside an
  unrolled loop (an UNROLL pragma, or any loop nested in a pipelined loop, which Vitis unrolls): the lanes
  of a beat must be read and written unconditionally (a masked tail is a separate loop or a select in
  registers), or Vitis infers no burst and no widened port.
* ``invariant-condition``: no access to an m_axi port under a test of loop-invariant values (a flag
  such as ``write_per_req``) inside a pipelined loop: the test belongs outside, one loop per case, so
  the loop's accesses are unconditional.
* ``mod64``: no ``%`` with a 64-bit operand inside a pipelined or unrolled loop (a 64-bit divider
  per iteration); use a counter, a compare or 32-bit arithmetic.
* ``index64``: no 64-bit induction variable in a pipelined loop where 32 bits do (every bound of
  eagle4_bounds.h fits 32 bits); a loop that truly needs 64 bits says why in a ``// 64-bit:`` comment
  on its line.

Rules that follow calls (canonical DATAFLOW regions: ``dataflow-streams``, ``dataflow-shared``,
``dataflow-args``, ``dataflow-inline``, ``dataflow-void``, ``port-struct``; ``unsynthesizable`` constructs in a
top's call tree; ``beat-width``: an unrolled port access of a pipelined loop fits its II port beats):
eagle4.backends.hls_dataflow.

Which rules judge which design: RULESETS (below, one place); the reviewed exceptions, each naming its rule,
place and reason (and the owner of a finding still open): EXEMPTIONS. CI runs them
(tests/harness/test_hls_checks.py); each rule has a planted violation that must fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from eagle4.backends import hls_designs
from eagle4.backends.hls_calltree import synthesis_view
from eagle4.backends.hls_lex import (
    CONTROL,
    block_header,
    brace_blocks,
    innermost_block,
    is_function_header,
    line_of,
    statement_end,
    strip_comments,
)


def check_file(path: Path, tops: set[str]) -> list[str]:
    text = Path(path).read_text()
    code = strip_comments(text)
    blocks = brace_blocks(code)
    problems = []
    for m in re.finditer(r"#pragma\s+HLS\s+(INTERFACE|DATAFLOW)\b", code):
        where = f"{path}:{line_of(code, m.start())}"
        blk = innermost_block(blocks, m.start())
        # the function the pragma sits in: the outermost enclosing block with a function header
        fn = None
        for b in sorted((b for b in blocks if b[0] < m.start() < b[1]), key=lambda b: b[0]):
            if is_function_header(block_header(code, b[0])):
                fn = b
                break
        fname = ""
        if fn:
            hm = re.search(r"(\w+)\s*\($", block_header(code, fn[0]).split("(")[0] + "(")
            fname = hm.group(1) if hm else ""
        if m.group(1) == "INTERFACE":
            if fname not in tops:
                problems.append(f"{where}: interface: INTERFACE pragma in {fname or 'a non-function scope'}(), "
                                f"not a synthesis top ({', '.join(sorted(tops))}); Vitis ignores it there")
            continue
        if blk is None or not is_function_header(block_header(code, blk[0])):
            problems.append(f"{where}: dataflow-first: DATAFLOW inside '{(block_header(code, blk[0]) if blk else '')[:40]}"
                            "', not at the top of a function body")
            continue
        before = code[blk[0] + 1:m.start()].strip()
        if before:
            problems.append(f"{where}: dataflow-first: statements precede the DATAFLOW pragma in {fname}()")
        depth, stmt = 0, m.end()
        for i in range(m.end(), blk[1]):  # the region's top-level statements
            ch = code[i]
            if ch in "{;" and depth == 0:
                cm = CONTROL.match(code[stmt:i].strip())
                if cm:
                    problems.append(f"{path}:{line_of(code, i)}: dataflow-tasks: '{cm.group(1)}' at the top level of "
                                    f"the DATAFLOW region of {fname}() (a conditional or looped task)")
                    break
                stmt = i + 1
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    stmt = i + 1
    return problems


_MAXI = re.compile(r"(?:#pragma\s+|_Pragma\s*\(\s*\")HLS\s+INTERFACE\s+m_axi\b([^\n\"]*)")
_LOOP = re.compile(r"^(?:\w+\s*:(?!:)\s*)?(for|while|do)\b")
_DECL64 = re.compile(r"\b(?:u?int64_t|size_t|(?:unsigned\s+)?long(?:\s+long)?)\s+(?:const\s+)?([A-Za-z_]\w*)\s*(?=[=;,)\[])")
_TYPE64 = re.compile(r"\b(?:u?int64_t|size_t|long)\b")


def maxi_ports(text: str) -> list[tuple[str, str, bool]]:
    """(port, bundle, hot) of every ``INTERFACE m_axi`` pragma (``#pragma`` or ``_Pragma``) in a source text;
    hot: widened to 512 bits. A pragma without ``bundle`` is on Vitis' default bundle ``gmem``."""
    out = []
    for m in _MAXI.finditer(text):
        opts = m.group(1)
        port = re.search(r"\bport\s*=\s*(\w+)", opts)
        if not port:
            continue
        bundle = re.search(r"\bbundle\s*=\s*(\w+)", opts)
        hot = re.search(r"\bmax_widen_bitwidth\s*=\s*512\b", opts) is not None
        out.append((port.group(1), bundle.group(1) if bundle else "gmem", hot))
    return out


def accessor_params(text: str) -> set[str]:
    """Names of the parameters a per-request core takes as accessors (``PORT(T) name`` or a template
    accessor type ``P<Name> name``, e.g. ``PTok tokens``): the top passes its m_axi ports there."""
    code = strip_comments(text)
    return set(re.findall(r"\bPORT\s*\([^)]*\)\s+(\w+)\s*[,)]", code)) | \
        set(re.findall(r"[(,]\s*P[A-Z]\w*\s+(\w+)\s*(?=[,)])", code))


def check_hot_bundles(path: Path) -> list[str]:
    """hot-bundle: every hot port of the tops of one source alone on its bundle (per function: a file may
    hold several tops, e.g. K1's bf16 and f32 tops expand the same pragma macro)."""
    text = Path(path).read_text()
    code, with_strings = strip_comments(text), strip_comments(text, strings=False)  # same offsets
    problems = []
    seen: set[tuple[str, str]] = set()
    macros = {m.group(1): m.start() for m in re.finditer(r"#define\s+(\w+)", code)}
    for blk in brace_blocks(code):
        if not is_function_header(block_header(code, blk[0])):
            continue
        body = with_strings[blk[0]:blk[1]]
        ports = maxi_ports(body)
        for name in re.findall(r"\b([A-Z][A-Z0-9_]+)\b", code[blk[0]:blk[1]]):
            if name in macros:  # a pragma macro (K1's tops): its definition holds the pragmas
                start = macros[name]
                end = re.search(r"(?<!\\)\n", with_strings[start:])
                ports += maxi_ports(with_strings[start:start + (end.end() if end else len(with_strings))])
        for port, bundle, hot in ports:
            others = sorted({p for p, b, _ in ports if b == bundle and p != port})
            if hot and others and (port, bundle) not in seen:
                seen.add((port, bundle))
                problems.append(f"{path}:{line_of(code, blk[0])}: hot-bundle: hot port {port} (512-bit) shares bundle "
                                f"{bundle} with {', '.join(others)}; give the stream its own bundle")
    return problems


def _left_operand(code: str, off: int, lo: int) -> str:
    """The postfix expression ending just before offset ``off`` (a name, a call or cast with its
    parentheses and template arguments, indexing, members), e.g. ``static_cast<int64_t>(x)``."""
    j = off - 1
    while j >= lo and code[j].isspace():
        j -= 1
    end = j + 1
    pairs = {")": "(", "]": "[", ">": "<"}
    while j >= lo:
        ch = code[j]
        if ch in pairs:
            depth = 0
            while j >= lo:
                depth += 1 if code[j] == ch else (-1 if code[j] == pairs[ch] else 0)
                if depth == 0:
                    break
                j -= 1
            j -= 1
        elif ch.isalnum() or ch in "_.:":
            j -= 1
        else:
            break
    return code[j + 1:end]


def _loops(code: str, blocks) -> list[tuple[tuple[int, int], set[str], int]]:
    """(block, {'PIPELINE', 'UNROLL'} pragmas directly in its body, line) of every loop."""
    out = []
    for blk in blocks:
        h = block_header(code, blk[0])
        if not _LOOP.match(h):
            continue
        kinds = set()
        for m in re.finditer(r"#pragma\s+HLS\s+(PIPELINE|UNROLL)\b([^\n]*)", code[blk[0]:blk[1]]):
            off = blk[0] + m.start()
            if innermost_block(blocks, off) == blk and not re.search(r"\boff\b", m.group(2)):
                kinds.add(m.group(1))
        out.append((blk, kinds, line_of(code, blk[0])))
    return out


def _conditional_spans(code: str, lo: int, hi: int) -> list[tuple[int, int, str, str]]:
    """(start, end, what, condition) of the code inside [lo, hi) that runs under a condition: the statement
    an ``if (...)`` controls (condition: the parenthesized test), what an ``else`` controls (condition:
    empty, unknown here) and the arms of a ``?:`` up to the end of its statement (condition: the operand
    before the ``?``)."""
    spans = []
    for m in re.finditer(r"\bif\s*\(", code[lo:hi]):
        start = lo + m.end() - 1
        depth, j = 0, start
        while j < hi:
            depth += {"(": 1, ")": -1}.get(code[j], 0)
            if depth == 0:
                break
            j += 1
        spans.append((j + 1, statement_end(code, j + 1, hi), "if", code[start + 1:j]))
    for m in re.finditer(r"\belse\b", code[lo:hi]):
        spans.append((lo + m.end(), statement_end(code, lo + m.end(), hi), "else", ""))
    for m in re.finditer(r"\?(?!\?)", code[lo:hi]):
        q = lo + m.start()
        spans.append((q + 1, statement_end(code, q + 1, hi), "?:", _ternary_test(code, q, lo)))
    return spans


def _ternary_test(code: str, q: int, lo: int) -> str:
    """The test of the ``?:`` at offset q: back to an unmatched '(', a ',', ';', '{', '}' or a plain '='."""
    j, depth = q - 1, 0
    while j >= lo:
        ch = code[j]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and (ch in ",;{}" or (ch == "=" and code[j - 1] not in "=!<>" and code[j + 1] != "=")):
            break
        j -= 1
    return code[j + 1:q]


_NOT_VALUES = {"true", "false", "nullptr", "static_cast", "int", "bool", "float", "int64_t", "int32_t", "uint8_t",
               "uint16_t", "uint32_t", "uint64_t", "const", "sizeof"}


def _invariant(cond: str, body: str, header: str) -> bool:
    """Is a condition loop-invariant: made of names the loop neither declares nor assigns (no element
    reads, no calls)? An empty condition (an ``else``) is not judged."""
    if not cond.strip() or re.search(r"[\w\]]\s*[\[(]", cond):
        return False
    names = set(re.findall(r"\b([A-Za-z_]\w*)\b", cond)) - _NOT_VALUES
    if not names:
        return False
    text = body + ";" + header
    changed = set(re.findall(r"\b([A-Za-z_]\w*)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)", text))  # assigned or declared
    changed |= {n for pair in re.findall(r"(?:\+\+|--)\s*([A-Za-z_]\w*)|\b([A-Za-z_]\w*)\s*(?:\+\+|--)", text)
                for n in pair if n}
    return not (names & changed)


def _port_hits(code: str, lo: int, hi: int, port_re, reported: set, rule: str, keep):
    """(port match, 'if'/'else'/'?:', test) of each port access in [lo, hi) under a condition that
    ``keep(test)`` selects, once per rule and offset (``reported`` remembers them)."""
    for a, b, what, cond in _conditional_spans(code, lo, hi):
        if not keep(cond):
            continue
        for m in port_re.finditer(code, a, b):
            if (rule, m.start()) not in reported:
                reported.add((rule, m.start()))
                yield m, what, cond


def _pipelined_ancestor(loops, blk) -> bool:
    """Is the loop nested in a pipelined loop? Vitis unrolls every loop below a pipelined one."""
    return any("PIPELINE" in k and b[0] < blk[0] and blk[1] < b[1] for b, k, _ in loops)


def check_loops(path: Path, ports) -> list[str]:
    """conditional-port, invariant-condition, mod64 and index64 over the loops of one source (its synthesis
    view). ``ports``: the m_axi port names, or a function of a loop's offset giving the port names in scope
    there (the fused designs, whose stages take ports as typed parameters)."""
    text = Path(path).read_text()
    code = strip_comments(synthesis_view(text))
    raw_lines = text.splitlines()
    blocks = brace_blocks(code)
    decl64 = set(_DECL64.findall(code))
    problems, reported = [], set()
    loops = _loops(code, blocks)
    for blk, kinds, line in loops:
        lo, hi = blk[0] + 1, blk[1]
        scope = ports(blk[0]) if callable(ports) else ports
        port_re = re.compile(r"(?<![.\w])(" + "|".join(sorted(map(re.escape, scope))) + r")\s*\[") if scope else None
        unrolled = "UNROLL" in kinds or _pipelined_ancestor(loops, blk)
        if "PIPELINE" in kinds and port_re:
            body, hdr = code[lo:hi], block_header(code, blk[0])
            for m, _, cond in _port_hits(code, lo, hi, port_re, reported, "invariant-condition",
                                         lambda c, body=body, hdr=hdr: _invariant(c, body, hdr)):
                problems.append(f"{path}:{line_of(code, m.start())}: invariant-condition: {m.group(1)}[...] under "
                                f"the loop-invariant test '{' '.join(cond.split())}' inside the pipelined loop "
                                f"of line {line}; test it outside, one loop per case")
        if unrolled and port_re:
            how = "unrolled" if "UNROLL" in kinds else "(pipelined, so unrolled) nested"
            for m, what, _ in _port_hits(code, lo, hi, port_re, reported, "conditional-port", lambda c: True):
                problems.append(f"{path}:{line_of(code, m.start())}: conditional-port: {m.group(1)}[...] under "
                                f"'{what}' inside the {how} loop of line {line}; access whole beats "
                                "unconditionally (a masked tail in its own loop or a select in registers)")
        if unrolled and "UNROLL" not in kinds:
            kinds = kinds | {"UNROLL"}
        if kinds:
            body = code[lo:hi]
            for m in re.finditer(r"%(?!=)", body):
                off = lo + m.start()
                right = re.match(r"\s*([\w.(<>]+)", code[off + 1:off + 80])
                operands = [_left_operand(code, off, lo)] + ([right.group(1)] if right else [])
                names = {w for o in operands for w in re.findall(r"[A-Za-z_]\w*", o)}
                if any(_TYPE64.search(o) for o in operands) or names & decl64:
                    key = ("mod64", off)
                    if key not in reported:
                        reported.add(key)
                        problems.append(f"{path}:{line_of(code, off)}: mod64: '%' on a 64-bit operand inside the "
                                        f"{'pipelined' if 'PIPELINE' in kinds else 'unrolled'} loop of line {line}; "
                                        "use a counter, a compare or 32-bit arithmetic")
        if "PIPELINE" in kinds:
            h = block_header(code, blk[0])
            m = re.search(r"\bfor\s*\(\s*(?:const\s+)?(u?int64_t|size_t|(?:unsigned\s+)?long(?:\s+long)?)\s+(\w+)", h)
            hdr_line = line_of(code, blk[0])
            if m and "64-bit:" not in raw_lines[hdr_line - 1]:
                problems.append(f"{path}:{hdr_line}: index64: {m.group(1)} induction variable {m.group(2)} in the "
                                "pipelined loop; use 32 bits (static_assert the bound) or say '// 64-bit: why'")
    return problems


# ---- which rules judge which design (one place), and the reviewed exemptions
# Every design's synthesized sources (design.desc ``synth`` + ``uses``) and the headers they include are judged;
# the loop rules see a per-kernel design's m_axi ports by name (its top's pragmas and its core's accessor
# parameters), a fused design's by scope (eagle4.backends.hls_dataflow.port_scope: the port-typed parameters of
# the enclosing stage). pipeline-constants runs in eagle4.budget.cycles.check_pragmas (tests/harness/test_hls_cycles.py).
FILE_RULES = ("interface", "dataflow-first", "dataflow-tasks", "hot-bundle")
LOOP_RULES = ("conditional-port", "invariant-condition", "mod64", "index64")
CALL_RULES = ("dataflow-streams", "dataflow-shared", "dataflow-args", "dataflow-inline", "dataflow-void",
              "port-struct", "unsynthesizable")
RULESETS = {
    "per-kernel": FILE_RULES + LOOP_RULES + CALL_RULES,  # hls/<kernel>: the top, its core (names of the top's ports)
    # hls/fused: tops, stages, common. beat-width needs each port's element type, which the fused stages declare
    # (Port<T>); the per-kernel cores take untyped accessors, so it does not judge them yet.
    "fused": FILE_RULES + LOOP_RULES + CALL_RULES + ("beat-width", "pipeline-constants"),
}


def design_kind(d) -> str:
    return "per-kernel" if d.tb else "fused"


@dataclass(frozen=True)
class Exemption:
    """A reviewed exception: ``rule`` at ``file`` (relative to hls/) in the problem naming ``where``, and why.
    ``open`` names the owner of a real finding not fixed yet (listed here, so it is neither hidden nor lost);
    without it the rule does not apply there. An exemption that no longer matches a problem is itself reported
    (no stale ones)."""
    rule: str
    file: str
    where: str
    why: str
    open: str = ""

    def covers(self, problem: str) -> bool:
        path = problem.split(":", 1)[0]
        return f": {self.rule}:" in problem and path.endswith(self.file) and self.where in problem


EXEMPTIONS: tuple[Exemption, ...] = ()


def _fused_loop_files(prog, d, hls_dir: Path) -> list[Path]:
    """The sources whose loops a fused design owns: its folder and hls/fused/common (the per-kernel cores it
    includes are judged in their own designs, with their own ports)."""
    own = [d.folder.resolve(), (hls_dir / "fused" / "common").resolve()]
    return [f for f in prog.files if any(o == f.parent for o in own)]


def check_designs(hls_dir: Path | None = None, exemptions: tuple[Exemption, ...] | None = None) -> list[str]:
    """Every rule of RULESETS over every design (hls/**/design.desc), less the reviewed EXEMPTIONS."""
    from eagle4.backends import csim_build, hls_calltree, hls_dataflow

    hls_dir = Path(hls_dir or csim_build.HLS_DIR)
    exemptions = EXEMPTIONS if exemptions is None else exemptions
    ds = hls_designs.designs(hls_dir)
    tops = {d.top for d in ds.values()}
    files = sorted({f for n in ds for f in hls_designs.synth_sources(n, ds)})
    headers = sorted(p for p in (hls_dir / "fused").rglob("*") if p.suffix in (".h", ".hpp"))
    problems = []
    for f in files + headers:
        problems += check_file(f, tops)
        problems += check_hot_bundles(f)
    judged_regions: set[Path] = set()
    for name, d in sorted(ds.items()):
        srcs = hls_designs.synth_sources(name, ds)
        prog = hls_calltree.design_program(srcs, hls_dir)
        problems += hls_dataflow.check_unsynthesizable(prog, d.top)
        for f in prog.files:
            if f not in judged_regions:
                judged_regions.add(f)
                problems += hls_dataflow.check_regions(prog, f)
        if design_kind(d) == "per-kernel":
            ports = {p for port_src in srcs for p, _, _ in maxi_ports(strip_comments(port_src.read_text(), strings=False))}
            cores = sorted(d.folder.glob("*_core.hpp"))
            ports |= {n for c in cores for n in accessor_params(c.read_text())}
            for f in srcs + [c for c in cores if c not in srcs]:
                problems += check_loops(f, ports)
        else:
            top_ports = {d.top: {p for s in srcs for p, _, _ in maxi_ports(strip_comments(s.read_text(), strings=False))}}
            for f in _fused_loop_files(prog, d, hls_dir):
                problems += check_loops(f, hls_dataflow.port_scope(prog, f, top_ports))
                problems += hls_dataflow.check_beat_width(prog, f, d.top)
    problems = list(dict.fromkeys(problems))
    kept = [p for p in problems if not any(e.covers(p) for e in exemptions)]
    for e in exemptions:
        if not any(e.covers(p) for p in problems):
            kept.append(f"{hls_dir / e.file}: exemption: the exemption of rule {e.rule} at {e.where} matches no "
                        "problem any more; remove it")
    return kept


__all__ = ["EXEMPTIONS", "RULESETS", "Exemption", "accessor_params", "check_designs", "design_kind", "check_file", "check_hot_bundles", "check_loops", "maxi_ports",
           "strip_comments"]

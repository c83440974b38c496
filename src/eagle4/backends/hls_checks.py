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

CI runs them (tests/harness/test_hls_checks.py); each rule has a planted violation that must fail.
"""

from __future__ import annotations

import re
from pathlib import Path

from eagle4.backends import csim, hls_designs

_CONTROL = re.compile(r"^(if|else|for|while|switch|do)\b")


def strip_comments(text: str) -> str:
    """C++ text with comments and string literals blanked (newlines and offsets kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + " " * (min(j, n - 1) - i - 1) + '"')
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _blocks(code: str) -> list[tuple[int, int]]:
    """(open, close) offsets of every brace block."""
    stack, out = [], []
    for i, ch in enumerate(code):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            out.append((stack.pop(), i))
    return out


def _line(code: str, off: int) -> int:
    return code.count("\n", 0, off) + 1


def _header(code: str, open_brace: int) -> str:
    """The text before a block's '{' back to the previous ';', '{' or '}' (its header)."""
    j, depth = open_brace - 1, 0  # back to the previous ';', '{' or '}' outside parentheses
    while j >= 0:
        ch = code[j]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
        elif ch in ";{}" and depth == 0:
            break
        j -= 1
    lines = [ln for ln in code[j + 1:open_brace].splitlines() if not ln.lstrip().startswith("#")]
    return " ".join(" ".join(lines).split())


def _enclosing(blocks, off: int) -> tuple[int, int] | None:
    inner = [b for b in blocks if b[0] < off < b[1]]
    return max(inner, key=lambda b: b[0]) if inner else None


def _is_function_header(h: str) -> bool:
    h = re.sub(r"^(template\s*<[^>]*>\s*)", "", h)
    return ")" in h and not _CONTROL.match(h) and not h.startswith(("namespace", "struct", "class", "union", "enum"))


def check_file(path: Path, tops: set[str]) -> list[str]:
    text = Path(path).read_text()
    code = strip_comments(text)
    blocks = _blocks(code)
    problems = []
    for m in re.finditer(r"#pragma\s+HLS\s+(INTERFACE|DATAFLOW)\b", code):
        where = f"{path}:{_line(code, m.start())}"
        blk = _enclosing(blocks, m.start())
        # the function the pragma sits in: the outermost enclosing block with a function header
        fn = None
        for b in sorted((b for b in blocks if b[0] < m.start() < b[1]), key=lambda b: b[0]):
            if _is_function_header(_header(code, b[0])):
                fn = b
                break
        fname = ""
        if fn:
            hm = re.search(r"(\w+)\s*\($", _header(code, fn[0]).split("(")[0] + "(")
            fname = hm.group(1) if hm else ""
        if m.group(1) == "INTERFACE":
            if fname not in tops:
                problems.append(f"{where}: interface: INTERFACE pragma in {fname or 'a non-function scope'}(), "
                                f"not a synthesis top ({', '.join(sorted(tops))}); Vitis ignores it there")
            continue
        if blk is None or not _is_function_header(_header(code, blk[0])):
            problems.append(f"{where}: dataflow-first: DATAFLOW inside '{(_header(code, blk[0]) if blk else '')[:40]}"
                            "', not at the top of a function body")
            continue
        before = code[blk[0] + 1:m.start()].strip()
        if before:
            problems.append(f"{where}: dataflow-first: statements precede the DATAFLOW pragma in {fname}()")
        depth, stmt = 0, m.end()
        for i in range(m.end(), blk[1]):  # the region's top-level statements
            ch = code[i]
            if ch in "{;" and depth == 0:
                cm = _CONTROL.match(code[stmt:i].strip())
                if cm:
                    problems.append(f"{path}:{_line(code, i)}: dataflow-tasks: '{cm.group(1)}' at the top level of "
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


def check_designs(hls_dir: Path | None = None) -> list[str]:
    """The interface and dataflow rules over every design's synthesized sources (design.desc ``synth`` and
    ``uses``) and the fused designs' headers. (pipeline-constants: eagle4.budget.cycles.check_pragmas.)"""
    hls_dir = Path(hls_dir or csim.HLS_DIR)
    ds = hls_designs.designs(hls_dir)
    tops = {d.top for d in ds.values()}
    files = sorted({f for n in ds for f in hls_designs.synth_sources(n, ds)})
    headers = sorted(p for p in (hls_dir / "fused").rglob("*") if p.suffix in (".h", ".hpp"))
    problems = []
    for f in files + headers:
        problems += check_file(f, tops)
    return problems


__all__ = ["check_designs", "check_file", "strip_comments"]

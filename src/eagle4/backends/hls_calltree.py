"""The synthesized C++ of an HLS design as Vitis sees it, read lexically: the synthesis view of a source (the
preprocessor branches Vitis compiles), its functions (name, parameters, body) and the call tree of a top.

Used by the csynth-readiness checks (eagle4.backends.hls_checks) for the rules that follow calls: canonical
DATAFLOW regions (what each task touches through its call tree) and unsynthesizable constructs in a top's
call tree. Lexical, not a compiler: names are matched without overload resolution (a call names every
function of that name), which errs towards reporting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from eagle4.backends import hls_lex as _lex
from eagle4.backends.hls_lex import split_top

# what Vitis' synthesis defines (eagle4_port.h sets EAGLE4_SYNTHESIS under __SYNTHESIS__) and what it does not
SYNTH_DEFINED = {"__SYNTHESIS__": True, "EAGLE4_SYNTHESIS": True, "EAGLE4_CSIM_COUNTERS": False}
_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "static_cast", "reinterpret_cast", "const_cast",
             "alignof", "decltype", "catch", "else", "do", "case", "new", "delete", "operator", "throw", "defined"}


def _cond_value(expr: str) -> bool | None:
    """A preprocessor condition over SYNTH_DEFINED macros only (True/False), else None (unknown)."""
    e = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)|\bdefined\s+(\w+)",
               lambda m: f"@{m.group(1) or m.group(2)}@", expr)
    names = re.findall(r"@(\w+)@", e)
    if not names or any(n not in SYNTH_DEFINED for n in names):
        return None
    e = re.sub(r"@(\w+)@", lambda m: str(SYNTH_DEFINED[m.group(1)]), e)
    e = e.replace("&&", " and ").replace("||", " or ")
    e = re.sub(r"!(?!=)", " not ", e)
    if re.search(r"[^\sA-Za-z()]", e) or set(re.findall(r"\w+", e)) - {"True", "False", "and", "or", "not"}:
        return None
    return bool(eval(e, {"__builtins__": {}}))  # noqa: S307 - only True/False/and/or/not/parentheses remain


def synthesis_view(text: str) -> str:
    """``text`` with the preprocessor branches Vitis does not compile blanked (newlines and offsets kept):
    conditions on __SYNTHESIS__ / EAGLE4_SYNTHESIS (defined) and EAGLE4_CSIM_COUNTERS (not defined); other
    conditionals keep every branch."""
    out = []
    stack: list[tuple[bool | None, bool]] = []  # (this branch's value or None, a previous branch was taken)

    def live() -> bool:
        return all(v is not False for v, _ in stack)

    for line in text.splitlines(keepends=True):
        s = line.strip()
        m = re.match(r"#\s*(ifdef|ifndef|if|elif|else|endif)\b(.*)", s)
        if m:
            kind, rest = m.group(1), m.group(2).strip()
            if kind in ("ifdef", "ifndef"):
                v = SYNTH_DEFINED.get(rest.split()[0]) if rest else None
                stack.append(((v if kind == "ifdef" else (None if v is None else not v)), False))
            elif kind == "if":
                stack.append((_cond_value(rest), False))
            elif kind == "elif" and stack:
                v, taken = stack[-1]
                taken = taken or v is True
                nv = _cond_value(rest)
                stack[-1] = (False if taken else nv, taken)
            elif kind == "else" and stack:
                v, taken = stack[-1]
                stack[-1] = (None if v is None and not taken else (not (taken or v is True)), True)
            elif kind == "endif" and stack:
                stack.pop()
            out.append(re.sub(r"[^\n]", " ", line))
            continue
        out.append(line if live() else re.sub(r"[^\n]", " ", line))
    return "".join(out)


@dataclass
class Function:
    name: str
    path: Path
    code: str  # the file's code (synthesis view, comments and strings blanked)
    header: str
    params: list[tuple[str, str]]  # (declared type, name)
    body: tuple[int, int]  # offsets of '{' and '}'
    line: int
    returns: str = ""
    statics: set[str] = field(default_factory=set)  # function-scope static variables

    @property
    def text(self) -> str:
        return self.code[self.body[0] + 1:self.body[1]]


def _param(decl: str) -> tuple[str, str]:
    decl = decl.split("=")[0].strip()
    m = re.match(r"(.*?)(\w+)\s*((?:\[[^\]]*\]\s*)*)$", decl)
    if not m or not m.group(1).strip():
        return decl, ""
    return (m.group(1) + m.group(3)).strip(), m.group(2)


def _code(path: Path) -> str:
    return _lex.strip_comments(synthesis_view(Path(path).read_text()))


_STATIC = re.compile(r"\bstatic\s+(?!const\b|constexpr\b|inline\b|_Assert|assert)")


def static_names(code: str, lo: int, hi: int) -> set[str]:
    """Variables declared ``static`` (not ``static const``) in code[lo:hi] at any depth (functions excluded)."""
    names = set()
    for m in _STATIC.finditer(code, lo, hi):
        end = code.find(";", m.end(), hi)
        decl = code[m.end():end if end >= 0 else hi]
        if "(" in decl.split("[")[0].split("=")[0]:
            continue  # a static function
        parts = split_top(decl)
        first = re.match(r"(.*?)(\w+)\s*(\[|=|$)", parts[0].strip())
        if first:
            names.add(first.group(2))
        for p in parts[1:]:
            n = re.match(r"\s*[*&]?\s*(\w+)", p)
            if n:
                names.add(n.group(1))
    return names


def functions(path: Path, code: str | None = None) -> list[Function]:
    """Every function definition of one source (member functions of structs included; lambdas not)."""
    code = _code(path) if code is None else code
    blocks = _lex.brace_blocks(code)
    out = []
    for blk in blocks:
        h = _lex.block_header(code, blk[0])
        if not _lex.is_function_header(h) or "operator" in h or "=" in h.split("(")[0] or "[" in h.split("(")[0]:
            continue
        h2 = re.sub(r"^template\s*<[^>]*(?:<[^>]*>[^>]*)*>\s*", "", h)
        m = re.match(r"(.*?)\b(\w+)\s*\((.*)\)\s*(?:const\s*)?(?:noexcept\s*)?$", h2.split(")")[0] + ")"
                     if h2.count("(") == 1 else h2)
        m = m or re.match(r"(.*?)\b(\w+)\s*\((.*)\)", h2)
        if not m or m.group(2) in _KEYWORDS:
            continue
        ret, name = m.group(1).strip(), m.group(2)
        # the parameter list: from the name's '(' to its matching ')'
        start = h2.find("(", m.start(2))
        depth, j = 0, start
        while j < len(h2):
            depth += {"(": 1, ")": -1}.get(h2[j], 0)
            if depth == 0:
                break
            j += 1
        params = [_param(p) for p in split_top(h2[start + 1:j]) if p and p != "void"]
        out.append(Function(name, Path(path), code, h, params, blk, _lex.line_of(code, blk[0]), ret,
                            static_names(code, blk[0], blk[1])))
    # a function's statics are its own, not those of functions defined inside it (member functions of local structs)
    return out


def includes(path: Path, root: Path) -> list[Path]:
    """The design files a source includes with quotes, recursively (resolved next to the including file);
    headers outside ``root`` (the shared shims of hls/include) are not followed."""
    seen, todo = [], [Path(path)]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        for inc in re.findall(r'#\s*include\s+"([^"]+)"', synthesis_view(p.read_text())):
            q = (p.parent / inc).resolve()
            if q.is_file() and root.resolve() in q.parents and "include" not in q.relative_to(root.resolve()).parts[:1]:
                todo.append(q)
    return seen


class Program:
    """The functions and namespace-scope statics of a set of sources (the synthesis view)."""

    def __init__(self, files: list[Path]):
        self.files = list(dict.fromkeys(Path(f).resolve() for f in files))
        self.fns: dict[str, list[Function]] = {}
        self.statics: set[str] = set()
        self.structs: dict[str, str] = {}  # struct / class name -> its member declarations (bodies dropped)
        for f in self.files:
            code = _code(f)
            fns = functions(f, code)
            for blk in _lex.brace_blocks(code):
                m = re.match(r"(?:template\s*<[^>]*>\s*)?(?:struct|class)\s+(\w+)", _lex.block_header(code, blk[0]))
                if m:
                    members = code[blk[0] + 1:blk[1]]
                    while re.search(r"\{[^{}]*\}", members):  # drop member functions' bodies
                        members = re.sub(r"\{[^{}]*\}", ";", members)
                    self.structs[m.group(1)] = members
            for fn in fns:
                self.fns.setdefault(fn.name, []).append(fn)
            inside = [fn.body for fn in fns]
            spans, prev = [], 0
            for lo, hi in sorted(inside):
                if lo >= prev:
                    spans.append((prev, lo))
                    prev = hi + 1
            spans.append((prev, len(code)))
            for lo, hi in spans:
                self.statics |= static_names(code, lo, hi)

    def calls(self, fn: Function) -> list[tuple[str, list[str], int]]:
        """(callee name, argument texts, offset) of every call in a body to a function of the program."""
        text, base, out = fn.code, fn.body[0] + 1, []
        for m in re.finditer(r"(?<![\w])(\w+)\s*(?:<[^;(){}]*?>)?\s*\(", text[base:fn.body[1]]):
            name = m.group(1)
            if name not in self.fns or name in _KEYWORDS:
                continue
            start = base + m.end() - 1
            depth, j = 0, start
            while j < fn.body[1]:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            out.append((name, split_top(text[start + 1:j]), base + m.start()))
        return out

    def reachable(self, top: str) -> list[Function]:
        """The functions of ``top``'s call tree (``top`` first)."""
        seen, order, todo = set(), [], [top]
        while todo:
            name = todo.pop(0)
            if name in seen or name not in self.fns:
                continue
            seen.add(name)
            for fn in self.fns[name]:
                order.append(fn)
                todo += [c for c, _, _ in self.calls(fn)]
        return order

    def cycles(self, top: str) -> list[list[str]]:
        """Call cycles (recursion) in ``top``'s call tree, each as the names along it."""
        graph = {fn.name: sorted({c for f in self.fns[fn.name] for c, _, _ in self.calls(f)})
                 for fn in self.reachable(top)}
        out, state = [], {}

        def visit(n, path):
            state[n] = 1
            for c in graph.get(n, ()):
                if state.get(c) == 1:
                    cyc = path[path.index(c):] + [c]
                    if sorted(cyc[:-1]) not in [sorted(x[:-1]) for x in out]:
                        out.append(cyc)
                elif c not in state:
                    visit(c, path + [c])
            state[n] = 2

        visit(top, [top])
        return out

    def touched_statics(self, name: str, _seen: set | None = None) -> set[str]:
        """The statics (namespace-scope, and function-scope as 'fn::name') a function's call tree touches;
        a name a function declares as a parameter or local shadows the static of that name there."""
        seen = set() if _seen is None else _seen
        if name in seen or name not in self.fns:
            return set()
        seen.add(name)
        out = set()
        for fn in self.fns[name]:
            own = {p for _, p in fn.params} | local_names(fn.text)
            used = set(re.findall(r"(?<![.\w])([A-Za-z_]\w*)\b(?!\s*::)", fn.text))
            out |= {n for n in used & self.statics if n not in own or n in fn.statics}
            out |= {f"{fn.name}::{n}" for n in fn.statics}
            for c, _, _ in self.calls(fn):
                out |= self.touched_statics(c, seen)
        return out


_DECL = re.compile(r"(?:^|[;{}(]|\bconst\b)\s*(?:const\s+)?(?:unsigned\s+)?"
                   r"(?!(?:return|else|case|delete|new|throw|goto|do)\b)[A-Za-z_][\w:]*(?:\s*<[^;{}()]*?>)?"
                   r"[\s*&]+([A-Za-z_]\w*)\s*(?=[\[=;,{)]|\s*:(?!:))")


def local_names(body: str) -> set[str]:
    """Names a body declares (locals and range-for variables), lexically."""
    names = {m.group(1) for m in _DECL.finditer(body)}
    return names - _KEYWORDS


def design_program(sources: list[Path], hls_dir: Path) -> Program:
    """The program Vitis synthesizes for a design: its synth sources and the design headers they include."""
    files = []
    for s in sources:
        files += [f for f in includes(s, hls_dir) if f not in files]
    return Program(files)


__all__ = ["Function", "Program", "design_program", "functions", "includes", "local_names",
           "static_names", "synthesis_view"]

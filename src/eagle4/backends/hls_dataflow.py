"""csynth-readiness rules that follow calls (eagle4.backends.hls_calltree over a design's synthesis view):
canonical DATAFLOW regions and unsynthesizable constructs in a top's call tree.

The canonical DATAFLOW region (UG1448 "Dataflow Canonical Rules", message 214-169; UG1399 "Dataflow
Checking" / "Limitations of Control-Driven Task-Level Parallelism"): local non-static variables, local
streams, and a sequence of calls passing data forward, where a variable other than a scalar has one reading
and one writing process, a function argument is read before it is written, and a task returns void.

* ``dataflow-streams``: a stream declared in a region is passed to exactly two tasks, one of which writes
  it and the other reads it (followed through the calls a task makes with it).
* ``dataflow-shared``: no static variable (namespace scope, or function scope in a function two tasks call)
  is touched by the call trees of two tasks of a region: statics are not channels, they are shared state.
* ``dataflow-args``: a non-scalar argument of the region or local variable (pointer, array, reference, port;
  a by-value non-pointer parameter is a scalar) reaches at most two tasks, and a read-only one (``const``)
  at most one (two tasks reading it are two readers); of two, one only reads and the other only writes it
  (an element or member assigned is a write), a region argument read first (consumer before producer), a
  local written first.
* ``dataflow-inline``: no task of a region is ``#pragma HLS INLINE``'d: inlined, its loops and statements
  dissolve into the region, which is then no longer a sequence of calls.
* ``dataflow-void``: a task returns void and the region has no ``return`` of a value.
* ``port-struct``: no parameter of a region or of its tasks is a struct holding m_axi ports (``Port<T>``
  members or pointers): Vitis binds a port per pointer argument, and a pointer reached through memory is a
  pointer to pointer, for which it inlines every function using it (UG1399 "Pointers"), dissolving the task.
* ``beat-width``: in a pipelined loop of II cycles, an unrolled loop's lanes x the element width of an m_axi
  port it accesses fit II beats of BEAT_BITS (the tops' max_widen_bitwidth): an AXI master moves one beat per
  cycle, so wider lanes cannot run at the II the pragma and the cycle model claim.
* ``unsynthesizable`` (UG1399 "Unsupported C/C++ Constructs", "Standard Template Libraries"): in the top's
  call tree no dynamic memory (``new``, ``delete``, ``malloc``/``calloc``/``realloc``/``free``), no STL
  container or ``std::function`` (they allocate and recurse), no operating-system call (file I/O, ``time``,
  ``system``, ``getenv``), and no recursion (a cycle of calls).
"""

from __future__ import annotations

import re
from pathlib import Path

from eagle4.backends import hls_lex
from eagle4.backends.hls_calltree import Program
from eagle4.backends.hls_lex import split_top

_STREAM_DECL = re.compile(r"(?:EAGLE4_STREAM\s*\([^;]*?\)|hls::stream\s*<[^;]*?>)\s*&?\s*(\w+)\s*[;\[({=]")
_PORT_TYPE = re.compile(r"\b(?:V?Port|P)\s*<|\bPORT\s*\(")
_UNSYNTH = [
    (re.compile(r"(?<![\w.])new\s+[A-Za-z_]"), "dynamic allocation 'new'"),
    (re.compile(r"(?<![\w.])delete\b(?!\s*;)"), "dynamic deallocation 'delete'"),
    (re.compile(r"(?<![\w.])(malloc|calloc|realloc|free)\s*\("), "dynamic memory ({0})"),
    (re.compile(r"\bstd::(vector|string|map|unordered_map|set|unordered_set|list|deque|function|shared_ptr|"
                r"unique_ptr)\b"), "std::{0} (dynamic memory)"),
    (re.compile(r"(?<![\w.:])(fopen|fclose|fread|fwrite|fscanf|fgets|system|time|clock|getenv)\s*\("),
     "operating-system call {0}()"),
]


def _is_scalar(ptype: str) -> bool:
    """A by-value parameter that is no pointer, array, reference or port (Vitis copies it into each process)."""
    t = ptype.strip()
    return not ("*" in t or "&" in t or "[" in t or _PORT_TYPE.search(t))


def _read_only(ptype: str) -> bool:
    return bool(re.search(r"\bconst\b", ptype)) and not re.search(r"\bconst\s*$", ptype.replace("*", "").strip())


def _param_at(prog: Program, fn_name: str, pos: int, depth: int):
    """(definition, parameter name) of argument ``pos`` of every definition of ``fn_name``: where a use
    followed through calls continues (none past 6 calls deep)."""
    if depth > 6:
        return
    for fn in prog.fns.get(fn_name, []):
        if pos < len(fn.params):
            yield fn, fn.params[pos][1]


def _stream_use(prog: Program, fn_name: str, pos: int, depth: int = 0) -> set[str]:
    """{'read', 'write'}: what a callee does with the stream passed as its argument ``pos`` (followed through
    the calls it passes that parameter to)."""
    out: set[str] = set()
    for fn, p in _param_at(prog, fn_name, pos, depth):
        body = fn.text
        if re.search(rf"(?<![\w.]){re.escape(p)}\s*\.\s*(read|read_nb|empty)\b|(?<![\w.]){re.escape(p)}\s*>>", body):
            out.add("read")
        if re.search(rf"(?<![\w.]){re.escape(p)}\s*\.\s*(write|write_nb|full)\b|(?<![\w.]){re.escape(p)}\s*<<", body):
            out.add("write")
        for callee, args, _ in prog.calls(fn):
            for i, a in enumerate(args):
                if re.fullmatch(rf"\s*{re.escape(p)}\s*", a):
                    out |= _stream_use(prog, callee, i, depth + 1)
    return out


def _arg_use(prog: Program, fn_name: str, pos: int, depth: int = 0) -> set[str]:
    """{'read', 'write'}: what a callee does with the array, pointer, port or reference passed as its argument
    ``pos``: an element or member assigned is a write, any other use a read (followed through the calls it
    passes that parameter to)."""
    out: set[str] = set()
    for fn, name in _param_at(prog, fn_name, pos, depth):
        p = re.escape(name)
        body = fn.text
        passed = set()
        for callee, args, _off in prog.calls(fn):
            for i, a in enumerate(args):
                if re.fullmatch(rf"\s*&?\s*{p}\s*(?:\+[^,]*)?", a):
                    out |= _arg_use(prog, callee, i, depth + 1)
                    passed.add(i)
        writes = list(re.finditer(rf"(?<![\w.]){p}\s*(?:(?:\.\w+)|(?:\[[^\]]*\]))+\s*(?:[-+*/%&|^]?=(?!=)|\+\+|--)", body))
        if writes:
            out.add("write")
        uses = len(re.findall(rf"(?<![\w.]){p}\b", body))
        plain_args = sum(1 for _, args, _ in prog.calls(fn) for a in args
                         if re.fullmatch(rf"\s*&?\s*{p}\s*(?:\+[^,]*)?", a))
        compound = sum(1 for w in writes if not w.group(0).rstrip().endswith("=") or
                       re.search(r"[-+*/%&|^]=$", w.group(0).rstrip()))
        if uses - len(writes) - plain_args + compound > 0:
            out.add("read")
    return out


def _region_statements(code: str, lo: int, hi: int) -> list[tuple[int, str]]:
    """(offset, text without its ';') of the top-level statements of code[lo:hi]."""
    out, i = [], lo
    while i < hi:
        j = hls_lex.statement_end(code, i, hi)
        text = code[i:j].strip().removesuffix(";").strip()
        if text:
            out.append((i, text))
        if j <= i:
            break
        i = j
    return out


def check_regions(prog: Program, path: Path) -> list[str]:
    """The DATAFLOW rules over the regions defined in one source of the program."""
    problems = []
    path = Path(path).resolve()
    for fns in prog.fns.values():
        for fn in fns:
            if fn.path != path:
                continue
            code = fn.code
            pm = re.search(r"#pragma\s+HLS\s+DATAFLOW\b", fn.text)
            if not pm:
                continue
            lo = fn.body[0] + 1 + pm.end()
            where = f"{fn.path}:{fn.line}"
            stmts = _region_statements(code, lo, fn.body[1])
            tasks, streams, locals_ = [], {}, {}
            for off, st in stmts:
                st1 = re.sub(r"(?m)^\s*#[^\n]*$", "", st).strip()
                sm = _STREAM_DECL.match(st1 + ";")
                if sm:
                    streams[sm.group(1)] = hls_lex.line_of(code, off)
                    continue
                if re.match(r"return\s+\S", st1):
                    problems.append(f"{fn.path}:{hls_lex.line_of(code, off)}: dataflow-void: the DATAFLOW region of "
                                    f"{fn.name}() returns a value (a region is a sequence of void tasks)")
                    continue
                cm = re.match(r"(?:[\w:]+::)?(\w+)\s*(?:<[^;]*?>)?\s*\((.*)\)$", st1, re.S)
                if cm and cm.group(1) in prog.fns:
                    tasks.append((cm.group(1), split_top(cm.group(2)), hls_lex.line_of(code, off)))
                    continue
                dm = re.match(r"(?:const\s+)?[\w:<>, ]+?\s+(\w+)\s*(\[[^=]*\])?\s*(=.*)?$", st1, re.S)
                if dm and not st1.startswith("using"):
                    locals_[dm.group(1)] = ("[]" if dm.group(2) else "", hls_lex.line_of(code, off))
            # a task's return type, its INLINE pragma
            for name, _, line in tasks:
                for callee in prog.fns[name]:
                    if callee.returns and not re.search(r"\bvoid\b", callee.returns):
                        problems.append(f"{fn.path}:{line}: dataflow-void: task {name}() of the DATAFLOW region of "
                                        f"{fn.name}() returns '{callee.returns.split()[-1]}', not void")
                    if re.search(r"#pragma\s+HLS\s+INLINE\b(?![^\n]*\boff\b)", callee.text):
                        problems.append(f"{fn.path}:{line}: dataflow-inline: task {name}() of the DATAFLOW region of "
                                        f"{fn.name}() is INLINE'd ({callee.path.name}:{callee.line}); call a "
                                        "non-inlined wrapper so the region stays a sequence of calls")
            # structs holding ports, passed to the region or to a task
            holders = {n for n, members in prog.structs.items()
                       if _PORT_TYPE.search(members) or re.search(r"\w\s*\*\s*\w+\s*[;,\[]", members)}
            for who, params in [(fn.name, fn.params)] + [(n, f.params) for n, _, _ in tasks for f in prog.fns[n]]:
                for ptype, pname in params:
                    held = [h for h in holders if re.search(rf"\b{h}\b", ptype)]
                    if held:
                        problems.append(f"{where}: port-struct: parameter {pname} of {who}() (DATAFLOW region of "
                                        f"{fn.name}()) is a {held[0]} holding m_axi ports; pass each port as its "
                                        "own parameter")
            # streams: two tasks, one writer and one reader
            for s, line in streams.items():
                users = [(n, i) for n, args, _ in tasks for i, a in enumerate(args)
                         if re.fullmatch(rf"\s*{re.escape(s)}\s*", a)]
                uses = [_stream_use(prog, n, i) for n, i in users]
                writers = [n for (n, _), u in zip(users, uses, strict=True) if "write" in u]
                readers = [n for (n, _), u in zip(users, uses, strict=True) if "read" in u]
                if len(users) != 2 or len(writers) != 1 or len(readers) != 1 or set(writers) & set(readers):
                    problems.append(f"{fn.path}:{line}: dataflow-streams: stream {s} of the DATAFLOW region of "
                                    f"{fn.name}() has writers {writers or 'none'} and readers {readers or 'none'} "
                                    f"among {len(users)} tasks; one producer and one consumer")
            # statics touched by more than one task
            owners: dict[str, list[str]] = {}
            for name, args, _ in tasks:
                touched = prog.touched_statics(name)
                touched |= {n for a in args for n in re.findall(r"(?<![.\w])([A-Za-z_]\w*)", a) if n in prog.statics}
                for t in touched:
                    owners.setdefault(t, []).append(name)
            for t, who in sorted(owners.items()):
                if len(who) > 1:
                    problems.append(f"{where}: dataflow-shared: static {t} is touched by tasks {', '.join(who)} of the "
                                    f"DATAFLOW region of {fn.name}(); pass it as a channel (a local stream or array) or "
                                    "a region argument read by one task and written by one")
            # non-scalar arguments and locals: one reader and one writer
            kinds = {n: t for t, n in fn.params} | {n: ("[]" if k else "") for n, (k, _) in locals_.items()}
            for var, ptype in kinds.items():
                if var in streams or (var in dict((n, t) for t, n in fn.params) and _is_scalar(ptype)):
                    continue
                if var in locals_ and not locals_[var][0]:
                    continue  # a local scalar
                who = [n for n, args, _ in tasks if any(re.search(rf"(?<![.\w]){re.escape(var)}\b", a) for a in args)]
                is_arg = var in dict((n, t) for t, n in fn.params)
                ro = is_arg and _read_only(ptype)
                if len(who) > 2 or (ro and len(who) > 1):
                    problems.append(f"{where}: dataflow-args: {'read-only ' if ro else ''}{var} reaches tasks "
                                    f"{', '.join(who)} of the DATAFLOW region of {fn.name}(); one reading and one "
                                    "writing process (forward what another task needs through a channel)")
                    continue
                if len(who) != 2:
                    continue
                uses = []
                for n, args, _ in tasks:
                    pos = [i for i, a in enumerate(args) if re.fullmatch(rf"\s*&?\s*{re.escape(var)}\s*", a)]
                    if n in who and pos:
                        uses.append((n, _arg_use(prog, n, pos[0])))
                if len(uses) != 2 or not all(u for _, u in uses):
                    continue  # passed inside an expression: not judged
                (first, u1), (second, u2) = uses
                want = ("read", "write") if is_arg else ("write", "read")
                if u1 != {want[0]} or u2 != {want[1]}:
                    order = "read before it is written (consumer first)" if is_arg else "written before it is read"
                    problems.append(f"{where}: dataflow-args: {var} is {'/'.join(sorted(u1))} in {first}() and "
                                    f"{'/'.join(sorted(u2))} in {second}() in the DATAFLOW region of {fn.name}(); a "
                                    f"{'region argument' if is_arg else 'local channel'} has one reader and one writer, "
                                    f"{order}")
    return problems


def check_unsynthesizable(prog: Program, top: str) -> list[str]:
    """Dynamic memory, STL containers and recursion in the call tree of ``top``."""
    problems, seen = [], set()
    for fn in prog.reachable(top):
        key = (fn.path, fn.line)
        if key in seen:
            continue
        seen.add(key)
        body = fn.code[fn.body[0]:fn.body[1]]
        hdr_and_body = fn.header + "\n" + body
        for rx, what in _UNSYNTH:
            for m in rx.finditer(hdr_and_body):
                line = fn.line + max(0, hdr_and_body.count("\n", 0, m.start()) - 1)
                problems.append(f"{fn.path}:{line}: unsynthesizable: {what.format(*m.groups())} in {fn.name}(), "
                                f"which {top}() calls; use a fixed-size array")
    for cyc in prog.cycles(top):
        fn = prog.fns[cyc[0]][0]
        problems.append(f"{fn.path}:{fn.line}: unsynthesizable: recursion {' -> '.join(cyc)} in the call tree of "
                        f"{top}(); Vitis synthesizes no recursive call (unroll it into a bounded loop)")
    return problems


def port_scope(prog: Program, path: Path, top_ports: dict[str, set[str]]):
    """For the loops of one source: the m_axi ports in scope at an offset, i.e. the port-typed parameters and
    variables (``Port<T>``, ``VPort<T>``, ``PORT(T)``) of the enclosing functions, the port-typed members of an
    enclosing struct, and the raw m_axi pointers of a synthesis top (``top_ports``: top name -> ports)."""
    path = Path(path).resolve()
    fns = [f for v in prog.fns.values() for f in v if f.path == path]
    code = fns[0].code if fns else ""
    structs = []
    for blk in hls_lex.brace_blocks(code):
        if re.match(r"(?:template\s*<[^>]*>\s*)?(?:struct|class)\s+\w+", hls_lex.block_header(code, blk[0])):
            structs.append(blk)
    decl = re.compile(r"(?:\bV?Port\s*<(?:[^<>;(){}]|<[^<>;(){}]*>)*>|\bPORT\s*\([^()]*\))\s*&?\s*(\w+)"
                      r"((?:\s*,\s*\w+)*)\s*(?=[;,)=\[])")

    def names(text: str) -> set[str]:
        out = set()
        for m in decl.finditer(text):
            out.add(m.group(1))
            out |= set(re.findall(r"\w+", m.group(2) or ""))
        return out

    def at(off: int) -> set[str]:
        out: set[str] = set()
        for fn in fns:
            if fn.body[0] < off < fn.body[1]:
                out |= {n for t, n in fn.params if _PORT_TYPE.search(t)} | names(fn.text)
                out |= top_ports.get(fn.name, set())
        for lo, hi in structs:
            if lo < off < hi:
                member_text = code[lo + 1:hi]
                while re.search(r"\{[^{}]*\}", member_text):  # members only: drop the member functions' bodies
                    member_text = re.sub(r"\{[^{}]*\}", ";", member_text)
                out |= names(member_text)
        return out

    return at


__all__ = ["BEAT_BITS", "check_beat_width", "check_regions", "check_unsynthesizable", "macro_values", "port_scope",
           "template_bindings"]


# ---- beat-width: an unrolled port access fits the beats its pipelined loop has per iteration
BEAT_BITS = 512  # the m_axi ports' widening limit (max_widen_bitwidth = 512 on every top; the Vitis flow's default)
_BITS = {"int8_t": 8, "uint8_t": 8, "char": 8, "bool": 8, "int16_t": 16, "uint16_t": 16, "short": 16,
         "int32_t": 32, "uint32_t": 32, "int": 32, "float": 32, "int64_t": 64, "uint64_t": 64, "double": 64,
         "long": 64}


def macro_values(prog: Program) -> dict[str, int]:
    """Integer ``#define`` constants of the program's files (expressions of other constants resolved)."""
    raw: dict[str, str] = {}
    for f in prog.files:
        for m in re.finditer(r"(?m)^\s*#\s*define\s+(\w+)\s+([^\n]+)$", hls_lex.strip_comments(f.read_text())):
            raw.setdefault(m.group(1), m.group(2).strip())
    out: dict[str, int] = {}
    for _ in range(4):
        for k, v in raw.items():
            e = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: str(out[m.group(0)]) if m.group(0) in out else m.group(0), v)
            if re.fullmatch(r"[\d\s()+\-*/%<>]+", e):
                try:
                    out[k] = int(eval(e.replace("/", "//"), {"__builtins__": {}}))  # noqa: S307 - digits and operators
                except (SyntaxError, ZeroDivisionError):
                    pass
    return out


def template_bindings(prog: Program, top: str) -> dict[str, str]:
    """Template parameter -> type of the instances ``top`` calls (``f<uint16_t, int8_t>(...)`` against
    ``template <typename HT, typename WT>``), e.g. {'HT': 'uint16_t', 'WT': 'int8_t'}."""
    out: dict[str, str] = {}
    for fn in prog.fns.get(top, []):
        for m in re.finditer(r"(?:\w+::)*(\w+)\s*<([^;(){}<>]+)>\s*\(", fn.text):
            for callee in prog.fns.get(m.group(1), []):
                tp = re.match(r"template\s*<([^>]*)>", callee.header)
                if tp:
                    names = [p.split()[-1] for p in split_top(tp.group(1))]
                    out.update(zip(names, split_top(m.group(2)), strict=False))  # trailing defaults may be omitted
    return out


def _value(expr: str, macros: dict[str, int]) -> int | None:
    e = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: str(macros.get(m.group(0), m.group(0))), expr.strip())
    return int(eval(e.replace("/", "//"), {"__builtins__": {}})) if re.fullmatch(r"[\d\s()+\-*/]+", e) else None  # noqa: S307


def check_beat_width(prog: Program, path: Path, top: str) -> list[str]:
    """beat-width: in a pipelined loop of II cycles, the lanes of an unrolled loop that accesses an m_axi port
    times its element width fit II port beats (BEAT_BITS each); more lanes need more beats per iteration than
    the II the pragma (and the cycle model) claims."""
    path = Path(path).resolve()
    macros, binds = macro_values(prog), template_bindings(prog, top)
    fns = [f for v in prog.fns.values() for f in v if f.path == path]
    if not fns:
        return []
    code = fns[0].code
    blocks = hls_lex.brace_blocks(code)
    decl = re.compile(r"\b(?:V?Port\s*<\s*(?:const\s+)?(\w+(?:\s*<[^<>;(){}]*>)?)\s*>|"
                      r"PORT\s*\(\s*(?:const\s+)?(\w+)\s*\))\s*&?\s*(\w+)")
    problems = []
    loops = []
    for blk in blocks:
        if not re.match(r"^(?:\w+\s*:(?!:)\s*)?for\b", hls_lex.block_header(code, blk[0])):
            continue
        own = [m for m in re.finditer(r"#pragma\s+HLS\s+(PIPELINE|UNROLL)\b([^\n]*)", code[blk[0]:blk[1]])
               if hls_lex.innermost_block(blocks, blk[0] + m.start()) == blk]
        loops.append((blk, own))
    for blk, own in loops:
        unroll = [m for m in own if m.group(1) == "UNROLL"]
        if not unroll:
            continue
        fm = re.search(r"\bfactor\s*=\s*([^\s]+)", unroll[0].group(2))
        bound = re.search(r";\s*\w+\s*<\s*([^;]+);", hls_lex.block_header(code, blk[0]))
        lanes = _value(fm.group(1), macros) if fm else (_value(bound.group(1), macros) if bound else None)
        pipes = [(b, [m for m in o if m.group(1) == "PIPELINE"]) for b, o in loops if b[0] < blk[0] and blk[1] < b[1]]
        pipes = [(b, p[0]) for b, p in pipes if p]
        if lanes is None or not pipes:
            continue
        pblk, pm = max(pipes, key=lambda x: x[0][0])
        iim = re.search(r"\bII\s*=\s*([^\s]+)", pm.group(2))
        ii = _value(iim.group(1), macros) if iim else 1
        ports: dict[str, str] = {}
        for fn in fns:
            if fn.body[0] < blk[0] < fn.body[1]:
                for t, n in fn.params:
                    m = decl.search(f"{t} {n}")
                    if m:
                        ports[m.group(3)] = m.group(1) or m.group(2)
                for m in decl.finditer(fn.text):
                    ports[m.group(3)] = m.group(1) or m.group(2)
        for lo, hi in [b for b in blocks if re.match(r"(?:template\s*<[^>]*>\s*)?(?:struct|class)\s",
                                                      hls_lex.block_header(code, b[0]))]:
            if lo < blk[0] < hi:
                for m in decl.finditer(code[lo:hi]):
                    ports[m.group(3)] = m.group(1) or m.group(2)
        for name, et in ports.items():
            bits = _BITS.get(binds.get(et, et))
            if bits is None or not re.search(rf"(?<![\w.]){re.escape(name)}\s*\[", code[blk[0]:blk[1]]):
                continue
            if ii and lanes * bits > BEAT_BITS * ii:
                problems.append(f"{path}:{hls_lex.line_of(code, blk[0])}: beat-width: {lanes} lanes x {bits}-bit "
                                f"{name} = {lanes * bits} bits per iteration of the pipelined loop of line "
                                f"{hls_lex.line_of(code, pblk[0])} (II {ii}), more than {ii} x {BEAT_BITS}-bit port "
                                "beats; fewer lanes or a larger II (and its cycle-model constant)")
    return problems

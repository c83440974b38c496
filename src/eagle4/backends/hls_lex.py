"""Lexical primitives over HLS C++ sources (comments blanked, brace blocks, block headers), shared by the
csynth-readiness checks (eagle4.backends.hls_checks) and the call-tree reader (eagle4.backends.hls_calltree)."""

from __future__ import annotations

import re

CONTROL = re.compile(r"^(if|else|for|while|switch|do)\b")


def strip_comments(text: str, strings: bool = True) -> str:
    """C++ text with comments and (``strings``) string literals blanked (newlines and offsets kept)."""
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
            out.append('"' + (" " * (min(j, n - 1) - i - 1) if strings else text[i + 1:min(j, n - 1)]) + '"')
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def brace_blocks(code: str) -> list[tuple[int, int]]:
    """(open, close) offsets of every brace block."""
    stack, out = [], []
    for i, ch in enumerate(code):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            out.append((stack.pop(), i))
    return out


def split_top(s: str, sep: str = ",") -> list[str]:
    """``s`` split at ``sep`` outside brackets (parentheses, square and angle brackets of templates, braces)."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>" and depth > 0:
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur))
    return [p.strip() for p in out]


def line_of(code: str, off: int) -> int:
    return code.count("\n", 0, off) + 1


def block_header(code: str, open_brace: int) -> str:
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


def innermost_block(blocks, off: int) -> tuple[int, int] | None:
    inner = [b for b in blocks if b[0] < off < b[1]]
    return max(inner, key=lambda b: b[0]) if inner else None


def is_function_header(h: str) -> bool:
    h = re.sub(r"^(template\s*<[^>]*>\s*)", "", h)
    return ")" in h and not CONTROL.match(h) and not h.startswith(("namespace", "struct", "class", "union", "enum"))


def statement_end(code: str, i: int, end: int) -> int:
    """End offset of the statement starting at i (a braced block or up to its ';' outside brackets)."""
    while i < end and code[i].isspace():
        i += 1
    depth = 0
    for j in range(i, end):
        ch = code[j]
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth == 0 and ch == "}" and code[i] == "{":
                return j + 1
        elif ch == ";" and depth == 0:
            return j + 1
    return end

"""The import graph of src/eagle4 has no cycle: between modules none at all (imports inside
functions included), between packages none but the back-edges listed with their reason (none today;
the list may only shrink: an edge that no longer exists must leave it)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

pytestmark = pytest.mark.cpu

# package -> package edges that still close a cycle, and why they are there
KNOWN_BACK_EDGES: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, Path]:
    out = {}
    for p in (SRC / "eagle4").rglob("*.py"):
        parts = p.relative_to(SRC).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != m:
                    edges[m].add(t)
                    # importing a.b.c runs a.b's __init__ first
                    parent = t.rpartition(".")[0]
                    while parent in mods and not m.startswith(parent + "."):
                        edges[m].add(parent)
                        parent = parent.rpartition(".")[0]
    return edges


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def _package(m: str) -> str:
    return ".".join(m.split(".")[:2])


def test_tarjan_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_import_cycle():
    cycles = _cycles(_edges(_modules()))
    assert not cycles, f"module import cycles: {cycles}"


def test_no_package_import_cycle_beyond_the_known_back_edges():
    pkg_edges: dict[str, set[str]] = {}
    for m, ds in _edges(_modules()).items():
        for d in ds:
            if _package(m) != _package(d):
                pkg_edges.setdefault(_package(m), set()).add(_package(d))
    present = {e for e in KNOWN_BACK_EDGES if e[1] in pkg_edges.get(e[0], set())}  # none listed today
    assert present == set(KNOWN_BACK_EDGES), f"fixed, remove from KNOWN_BACK_EDGES: {set(KNOWN_BACK_EDGES) - present}"
    for a, b in KNOWN_BACK_EDGES:
        pkg_edges[a].discard(b)
    cycles = _cycles(pkg_edges)
    assert not cycles, f"package import cycles: {cycles}"

"""The case catalog: every kernel's named cases plus the §13 chained regressions.

Each kernel's cases live in ``eagle4.cases.<key>`` (``cases() -> list[Case]``); the chained
regressions in ``eagle4.cases.chain``. Missing modules are an error, not an empty catalog.
"""

from __future__ import annotations

import functools
import importlib

from eagle4.cases import Case
from eagle4.spec import KERNEL_ORDER, kernel_spec

SOURCES = (*KERNEL_ORDER, "chain")


@functools.cache
def _load(source: str) -> tuple[Case, ...]:
    mod = importlib.import_module(f"eagle4.cases.{source}")
    cases = tuple(mod.cases())
    for c in cases:
        kernel_spec(c.kernel)  # a case must name a real kernel
    return cases


def all_cases(sources: tuple[str, ...] = SOURCES, *, include_large: bool = True) -> list[Case]:
    out: list[Case] = []
    for s in sources:
        out.extend(c for c in _load(s) if include_large or "large" not in c.tags)
    ids = [c.case_id for c in out]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise ValueError(f"duplicate case ids in the catalog: {sorted(dup)[:5]}")
    return out


def cases_for(kernel: str, **kw) -> list[Case]:
    """One kernel's cases: its own catalog plus its calls inside the chained regressions."""
    key = kernel_spec(kernel).key
    return [c for c in all_cases((key, "chain"), **kw) if c.kernel == key]


def get_case(case_id: str) -> Case:
    for c in all_cases():
        if c.case_id == case_id:
            return c
    raise KeyError(f"no case {case_id!r} in the catalog")

"""Provenance of a number, and the rule that combines them: the weakest one wins.

Every raw row says how its number was obtained. From weakest to strongest:

* ``double``: produced through a test double of a device (the pyxrt double of ``tests/xrt_double``:
  C-simulation behind the board's interface); it proves the plumbing, never a board figure, and no
  contract may accept it (it is not a ``ProvenanceName`` of the gate schema);
* ``declared``: an assumption written in the contract (e.g. a declared acceptance distribution);
* ``computed``: an analytic formula over declared sizes (e.g. drafter weight bytes);
* ``model``: a performance model (cycle model, roofline) with declared parameters;
* ``csim``: counted in HLS C-simulation;
* ``measured``: measured on the named device.

A metric built from rows of mixed provenance carries the weakest of them (a ratio whose fused side
is 63% computed bytes is a computed figure, however exact the counted 37% are). Row values may join
several with ``+`` (``csim+computed``); :func:`parts` splits them.
"""

from __future__ import annotations

from collections.abc import Iterable

ORDER = ("double", "declared", "computed", "model", "csim", "measured")
Provenance = str


class ProvenanceError(ValueError):
    """A row carries a provenance value outside :data:`ORDER`."""


def parts(value: str | Iterable[str]) -> list[str]:
    """The provenance values in ``value`` (a ``+``-joined string or an iterable of them), validated."""
    items = [value] if isinstance(value, str) else list(value)
    out: list[str] = []
    for item in items:
        for p in str(item).split("+"):
            p = p.strip()
            if not p:
                continue
            if p not in ORDER:
                raise ProvenanceError(f"unknown provenance {p!r}; known (weakest first): {', '.join(ORDER)}")
            if p not in out:
                out.append(p)
    return sorted(out, key=ORDER.index)


def weakest(values: str | Iterable[str]) -> str | None:
    """The weakest provenance among ``values``; None when there is none."""
    ps = parts(values)
    return ps[0] if ps else None


def rank(value: str) -> int:
    """0 for the weakest provenance, ``len(ORDER) - 1`` for ``measured``."""
    return ORDER.index(value)

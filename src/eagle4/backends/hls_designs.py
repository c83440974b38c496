"""The per-folder descriptions of the HLS designs (``hls/**/design.desc``): the one place that lists sources.

Like Vitis_Libraries' ``description.json``, every HLS folder says once what it builds; the Vitis flow
(``hls/tcl/run_hls.tcl``), the g++ C-simulation library (``eagle4.backends.csim``), the sanitized
testbenches (``eagle4.backends.csim_tb``) and the tests all read it. The format is plain "key values"
lines (a line starting with ``#`` is a comment; no comments after values) so Tcl reads it without a
JSON package::

    name       fused_draft
    top        fused_draft_top
    synth      draft_pipeline_synth.cpp draft_pipeline.cpp
    uses       update_draft_state
    csim       draft_unfused.cpp
    csim_uses  draft_tree_score work_deltas tree_mask

``name``: the design (``KERNEL=`` of hls/Makefile); ``top``: the synthesis top function; ``synth``: the
synthesized sources, the top's file first; ``uses``: designs whose synth sources this design also needs;
``csim``: sources of the C-sim library only (C-ABI entries, the unfused reference chain); ``csim_uses``:
designs whose synth sources only the C-sim sources need; ``tb``: the testbench (per-kernel designs).
Paths are relative to the folder of the description. A design with ``csim`` files is an entry of the
C-simulation library.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DESC_NAME = "design.desc"
LIST_KEYS = ("synth", "uses", "csim", "csim_uses", "tb")
SCALAR_KEYS = ("name", "top")


class DesignDescriptionError(ValueError):
    """A design.desc is malformed; the message names the file and the field."""


@dataclass(frozen=True)
class Design:
    name: str
    folder: Path  # the folder of the description
    top: str
    synth: tuple[Path, ...]
    uses: tuple[str, ...] = ()
    csim: tuple[Path, ...] = ()
    csim_uses: tuple[str, ...] = ()
    tb: tuple[Path, ...] = ()
    desc: Path = field(default=Path())

    @property
    def csim_entry(self) -> bool:
        """Is the design an entry of the C-simulation library (it has C-sim-only sources)?"""
        return bool(self.csim)


def parse(path: Path) -> Design:
    """Read one description; a bad one raises DesignDescriptionError naming the file and the field."""
    path = Path(path)
    fields: dict[str, list[str]] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, *vals = line.split()
        if key not in LIST_KEYS + SCALAR_KEYS:
            raise DesignDescriptionError(f"{path}:{n}: unknown field {key!r} (known: {', '.join(SCALAR_KEYS + LIST_KEYS)})")
        if key in fields:
            raise DesignDescriptionError(f"{path}:{n}: field {key!r} given twice")
        if key in SCALAR_KEYS and len(vals) != 1:
            raise DesignDescriptionError(f"{path}:{n}: field {key!r} takes exactly one value, got {len(vals)}")
        fields[key] = vals
    for key in ("name", "top", "synth"):
        if not fields.get(key):
            raise DesignDescriptionError(f"{path}: field {key!r} is missing")
    folder = path.parent
    files: dict[str, tuple[Path, ...]] = {}
    for key in ("synth", "csim", "tb"):
        files[key] = tuple(Path(os.path.normpath(folder / v)) for v in fields.get(key, ()))  # one name per file
        for f in files[key]:
            if not f.is_file():
                raise DesignDescriptionError(f"{path}: field {key!r} names {f.name!r}, which does not exist in {folder}")
    return Design(name=fields["name"][0], folder=folder, top=fields["top"][0], synth=files["synth"],
                  uses=tuple(fields.get("uses", ())), csim=files["csim"], csim_uses=tuple(fields.get("csim_uses", ())),
                  tb=files["tb"], desc=path)


def designs(hls_dir: str | os.PathLike) -> dict[str, Design]:
    """Every design under ``hls_dir`` by name; ``uses``/``csim_uses`` must name designs that exist."""
    hls_dir = Path(hls_dir)
    out: dict[str, Design] = {}
    for p in sorted(hls_dir.rglob(DESC_NAME)):
        d = parse(p)
        if d.name in out:
            raise DesignDescriptionError(f"{p}: design name {d.name!r} is also used by {out[d.name].desc}")
        out[d.name] = d
    for d in out.values():
        for key in ("uses", "csim_uses"):
            for u in getattr(d, key):
                if u not in out:
                    raise DesignDescriptionError(f"{d.desc}: field {key!r} names design {u!r}, which has no {DESC_NAME}")
    return out


def synth_sources(name: str, all_designs: dict[str, Design]) -> list[Path]:
    """What Vitis synthesizes for a design: its synth files, then those of the designs it uses."""
    d = all_designs[name]
    out = list(d.synth)
    for u in d.uses:
        out += [f for f in synth_sources(u, all_designs) if f not in out]
    return out


def csim_sources(name: str, all_designs: dict[str, Design]) -> list[Path]:
    """What the C-sim library links for a design: its synth sources, its csim files and the synth
    sources of its ``csim_uses``."""
    d = all_designs[name]
    out = synth_sources(name, all_designs) + list(d.csim)
    for u in d.csim_uses:
        out += [f for f in synth_sources(u, all_designs) if f not in out]
    return out


def testbench_sources(name: str, all_designs: dict[str, Design]) -> list[Path]:
    """A testbench executable: the testbench files first, then the design's C-sim sources."""
    d = all_designs[name]
    return list(d.tb) + csim_sources(name, all_designs)

"""On-chip storage of every synthesizable design, measured from its synthesis-mode build.

Each design of ``hls/**/design.desc`` is compiled the way Vitis sees it (``EAGLE4_SYNTHESIS``, which hls/include/eagle4_port.h sets under Vitis' ``__SYNTHESIS__``; plain-pointer
ports: no ``EAGLE4_CSIM_COUNTERS``) with debug info, and every array variable (file-scope and
function-scope ``static``, and the local arrays of every function, which HLS also maps to on-chip
memory: one instance per function, however often it is inlined) is read from the DWARF of the objects
(pyelftools): its element type and dimensions, structs split into their members (as HLS disaggregates
them), arrays of structs into one array per member (one array of struct-wide words under ``#pragma HLS
AGGREGATE``). ``#pragma HLS ARRAY_PARTITION`` splits an array into its banks, each rounded on its own (a
complete partition of all dimensions is registers). Scalars are registers and not counted.

The FIFOs of ``hls::stream<T, DEPTH>`` (``EAGLE4_STREAM``) are read from the same DWARF (the stream's template
arguments: the element type's width x the depth) and bound the way Vitis binds a FIFO left to its default
(``config_storage fifo`` / ``syn.storage``, UG1399): a shift register (SRL, in LUTs) when depth <= 2 and
depth x width <= 1024 bits (the documented ``auto_srl_max_depth`` / ``auto_srl_max_bits`` defaults); any
other FIFO is a RAM, which this model puts in LUTRAM when it is at most 64 deep (one LUTRAM column: a block
RAM, 512 or more deep, would sit mostly empty) and in block RAM / URAM otherwise, rounded like an array of
``depth`` elements of its width. SRL and LUTRAM FIFOs are listed with their LUT storage and are not part of
the BRAM + URAM share; block-RAM FIFOs are placed with the arrays. (A model of the binding: a synthesis
report's resource table replaces it.)

Each array is rounded to the physical words of the memories it can map to, at its element width:

* block RAM in RAMB18 halves (18 Kib; a BRAM36 is two): widths 1/2/4/9/18/36 bits x depths 16K..512,
  elements wider than 36 bits as 72-bit BRAM36 pairs;
* URAM288: 72-bit words x 4096, 288 Kib per block (a 32-bit element wastes 40 of 72 bits).

An array the code binds (``#pragma HLS BIND_STORAGE ... impl = bram|uram``) goes where the code puts it; any
other goes where it costs less, and a full pool moves the set of them that costs the least extra to the other
(a binding a designer would declare: Vitis alone binds an unbound array to block RAM; the report lists the
unbound arrays this model puts in URAM). The device budget
is ``[fpga].bram_mb`` and ``[fpga].uram_mb`` of the contract (10^6 bytes). Provenance ``computed``
(from the synthesis-mode build, not from a synthesis report).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

BRAM18_BITS = 18 * 1024
URAM_BLOCK_BITS = 288 * 1024
BRAM18_WIDTHS = (1, 2, 4, 9, 18, 36)
URAM_WIDTH, URAM_DEPTH = 72, 4096
SYNTH_FLAGS = ("-std=c++17", "-O0", "-g", "-fPIC", "-DEAGLE4_SYNTHESIS", "-DEAGLE4_HLS4ML_HEADERS",
               "-Wno-unknown-pragmas")
UTILIZATION_GOAL = 0.70  # issue 13: the fused designs fit with margin


FIFO_SRL_MAX_DEPTH, FIFO_SRL_MAX_BITS = 2, 1024  # Vitis config_storage fifo defaults (UG1399)
FIFO_LUTRAM_MAX_DEPTH = 64  # one LUTRAM column (RAM64X1D): deeper FIFOs go to block RAM in this model


@dataclass(frozen=True)
class Fifo:
    name: str  # the stream variable
    depth: int
    width_bits: int  # the element type's bits (its DWARF byte size x 8: a struct's padding included)
    count: int = 1  # an array of streams: this many FIFOs

    @property
    def impl(self) -> str:
        """'srl', 'lutram' or 'bram' (see the module docstring)."""
        if self.depth <= FIFO_SRL_MAX_DEPTH and self.depth * self.width_bits <= FIFO_SRL_MAX_BITS:
            return "srl"
        return "lutram" if self.depth <= FIFO_LUTRAM_MAX_DEPTH else "bram"

    @property
    def lut_bytes(self) -> int:
        """LUT storage of an SRL (32 deep per LUT) or LUTRAM (64 deep per LUT) FIFO, one LUT column per bit."""
        col = 32 if self.impl == "srl" else 64
        return self.count * self.width_bits * col * math.ceil(self.depth / col) // 8

    def as_array(self) -> Array:
        return Array(f"fifo {self.name}", self.depth, self.width_bits, (self.depth,), self.count)


@dataclass(frozen=True)
class Array:
    name: str  # variable[.member...]
    elems: int  # elements of one bank
    elem_bits: int
    dims: tuple = ()  # the array's dimensions (outermost first), as declared
    banks: int = 1  # ARRAY_PARTITION: this many memories of ``elems`` elements each
    bind: str = ""  # BIND_STORAGE impl the code declares ("bram" / "uram"); "" = placed by the model

    @property
    def payload_bytes(self) -> int:
        return self.banks * self.elems * self.elem_bits // 8


def bram_blocks(elems: int, bits: int) -> int:
    """RAMB18 halves of block RAM an array needs (a BRAM36 is two of them): widths 1..36 bits at 16K..512
    deep, wider elements as 72-bit BRAM36 pairs, 512 deep."""
    if bits > 36:
        return 2 * math.ceil(elems / 512) * math.ceil(bits / 72)
    cfg = next(w for w in BRAM18_WIDTHS if w >= bits)
    return math.ceil(elems / (BRAM18_BITS // cfg))


def uram_blocks(elems: int, bits: int) -> int:
    return math.ceil(elems / URAM_DEPTH) * math.ceil(bits / URAM_WIDTH)


def physical_bytes(a: Array, pool: str) -> int:
    if pool == "bram":
        return a.banks * bram_blocks(a.elems, a.elem_bits) * BRAM18_BITS // 8
    return a.banks * uram_blocks(a.elems, a.elem_bits) * URAM_BLOCK_BITS // 8


# ---------------------------------------------------------------------------------------------
# DWARF


def _strip(die):
    while die is not None and die.tag in ("DW_TAG_typedef", "DW_TAG_const_type", "DW_TAG_volatile_type",
                                          "DW_TAG_restrict_type"):
        die = die.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in die.attributes else None
    return die


def _dims(arr_die) -> list[int]:
    out = []
    for sub in arr_die.iter_children():
        if sub.tag != "DW_TAG_subrange_type":
            continue
        if "DW_AT_count" in sub.attributes:
            out.append(int(sub.attributes["DW_AT_count"].value))
        elif "DW_AT_upper_bound" in sub.attributes:
            out.append(int(sub.attributes["DW_AT_upper_bound"].value) + 1)
        else:
            out.append(0)
    return out


def _leaves(type_die, name: str, count: int, in_array: bool, dims: tuple = (), aggregate: bool = False) -> list[Array]:
    """Arrays (name, elements, element bits, dims) a variable of ``type_die`` holds; ``count`` elements of it.
    ``aggregate``: an array of structs is one array of struct-wide words (``#pragma HLS AGGREGATE``)."""
    t = _strip(type_die)
    if t is None:
        return []
    if t.tag == "DW_TAG_array_type":
        d = tuple(_dims(t))
        return _leaves(t.get_DIE_from_attribute("DW_AT_type"), name, count * math.prod(d), True, dims + d, aggregate)
    if t.tag in ("DW_TAG_structure_type", "DW_TAG_class_type", "DW_TAG_union_type"):
        tname = t.attributes["DW_AT_name"].value.decode() if "DW_AT_name" in t.attributes else ""
        if "stream" in tname:  # a FIFO: its element type and depth are the template's arguments
            return _fifo(t, name, count)
        if aggregate and in_array:
            return [Array(name, count, int(t.attributes["DW_AT_byte_size"].value) * 8, dims)]
        out = []
        for m in t.iter_children():
            if m.tag == "DW_TAG_member" and "DW_AT_type" in m.attributes and "DW_AT_external" not in m.attributes:
                mname = m.attributes["DW_AT_name"].value.decode() if "DW_AT_name" in m.attributes else "?"
                out += _leaves(m.get_DIE_from_attribute("DW_AT_type"), f"{name}.{mname}", count, in_array, dims)
        return out
    if t.tag in ("DW_TAG_base_type", "DW_TAG_enumeration_type", "DW_TAG_pointer_type"):
        if not in_array:
            return []  # a scalar: registers
        return [Array(name, count, int(t.attributes["DW_AT_byte_size"].value) * 8, dims)]
    return []


def _fifo(t, name: str, count: int) -> list:
    elem, depth = None, None
    for ch in t.iter_children():
        if ch.tag == "DW_TAG_template_type_param" and elem is None and "DW_AT_type" in ch.attributes:
            elem = _strip(ch.get_DIE_from_attribute("DW_AT_type"))
        elif ch.tag == "DW_TAG_template_value_param" and depth is None and "DW_AT_const_value" in ch.attributes:
            depth = int(ch.attributes["DW_AT_const_value"].value)
    if elem is None or "DW_AT_byte_size" not in elem.attributes:
        raise ValueError(f"FIFO {name}: the stream's element type is not in the DWARF (its width is unknown)")
    if depth is None:
        raise ValueError(f"FIFO {name}: the stream has no depth argument (declare it EAGLE4_STREAM(T, DEPTH))")
    return [Fifo(name, depth, int(elem.attributes["DW_AT_byte_size"].value) * 8, count)]


def _name_of(die) -> str:
    """A DIE's name; an out-of-line definition (a member or template instance) names its declaration. Template
    arguments are dropped: the C-sim entry points instantiate a function template for every precision, the
    synthesized design holds one instance (its locals counted once, as for an inlined function)."""
    for _ in range(3):
        if "DW_AT_name" in die.attributes:
            return re.sub(r"<.*>$", "", die.attributes["DW_AT_name"].value.decode())
        ref = next((a for a in ("DW_AT_specification", "DW_AT_abstract_origin") if a in die.attributes), None)
        if ref is None:
            return ""
        die = die.get_DIE_from_attribute(ref)
    return ""


def _scope_of(die) -> str:
    parts = []
    p = die.get_parent()
    while p is not None and p.tag != "DW_TAG_compile_unit":
        if "DW_AT_name" in p.attributes:
            parts.append(p.attributes["DW_AT_name"].value.decode())
        p = p.get_parent()
    return "".join(f"{x}::" for x in reversed(parts))


def static_arrays(obj: Path, aggregated: frozenset = frozenset()) -> list:
    """Every array variable (static storage or a function's local) defined in an object file (its DWARF), and
    every hls::stream FIFO (as a :class:`Fifo`)."""
    from elftools.elf.elffile import ELFFile

    out: dict[tuple, Array] = {}
    with open(obj, "rb") as fh:
        elf = ELFFile(fh)
        if not elf.has_dwarf_info():
            raise ValueError(f"{obj}: no DWARF (built without -g)")
        for cu in elf.get_dwarf_info().iter_CUs():
            stack = [(cu.get_top_DIE(), "")]
            while stack:
                die, scope = stack.pop()
                for ch in die.iter_children():
                    if ch.tag in ("DW_TAG_subprogram", "DW_TAG_lexical_block", "DW_TAG_namespace"):
                        nm = _name_of(ch)
                        stack.append((ch, f"{scope}{nm}::" if ch.tag != "DW_TAG_lexical_block" else scope))
                    elif ch.tag == "DW_TAG_variable" and "DW_AT_location" in ch.attributes:
                        loc = ch.attributes["DW_AT_location"]
                        if loc.form not in ("DW_FORM_exprloc", "DW_FORM_block1") or not loc.value \
                                or loc.value[0] not in (0x03, 0x91):  # DW_OP_addr: static; DW_OP_fbreg: a local
                            continue
                        decl, where = ch, scope
                        if "DW_AT_specification" in ch.attributes:  # namespace-scope: the definition points
                            decl = ch.get_DIE_from_attribute("DW_AT_specification")  # to its declaration
                            where = _scope_of(decl)
                        if "DW_AT_type" not in decl.attributes:
                            continue
                        nm = decl.attributes["DW_AT_name"].value.decode() if "DW_AT_name" in decl.attributes else "?"
                        for a in _leaves(decl.get_DIE_from_attribute("DW_AT_type"), f"{where}{nm}", 1, False,
                                         aggregate=nm in aggregated):
                            out[(type(a).__name__, a.name)] = a
    return list(out.values())


# ---------------------------------------------------------------------------------------------
# measurement


_PRAGMA = re.compile(r"#pragma\s+HLS\s+(ARRAY_PARTITION|AGGREGATE)\b([^\n]*)", re.I)


def storage_pragmas(texts: list[str]) -> tuple[dict[str, tuple[str, str, int]], frozenset]:
    """({variable: (type, factor, dim)} of ARRAY_PARTITION, {variables} of AGGREGATE) in C++ sources;
    a factor may be a macro of the sources (resolved by partition())."""
    parts, agg = {}, set()
    for text in texts:
        for m in _PRAGMA.finditer(text):
            kv = dict(re.findall(r"(\w+)\s*=\s*(\w+)", m.group(2)))
            var = kv.get("variable")
            if not var:
                continue
            if m.group(1).upper() == "AGGREGATE":
                agg.add(var)
            else:
                parts[var] = (kv.get("type", "complete").lower(), kv.get("factor", "0"), int(kv.get("dim", "1")))
    return parts, frozenset(agg)


_BIND = re.compile(r"#pragma\s+HLS\s+BIND_STORAGE\b([^\n]*)", re.I)


def bind_pragmas(texts: list[str]) -> dict[str, str]:
    """{variable: "bram" | "uram"} of the ``#pragma HLS BIND_STORAGE ... impl = bram|uram`` in C++ sources."""
    out = {}
    for text in texts:
        for m in _BIND.finditer(text):
            kv = dict(re.findall(r"(\w+)\s*=\s*(\w+)", m.group(1)))
            impl = kv.get("impl", "").lower()
            if kv.get("variable") and impl in ("bram", "uram"):
                out[kv["variable"]] = impl
    return out


def _macros(texts: list[str]) -> dict[str, int]:
    out = {}
    for text in texts:
        for name, val in re.findall(r"^\s*#define\s+(\w+)\s+(\d+)\b", text, re.M):
            out.setdefault(name, int(val))
    return out


def partition(a: Array, pragma: tuple[str, str, int] | None, macros: dict[str, int]) -> Array | None:
    """An array as ARRAY_PARTITION leaves it: ``banks`` memories of ``elems`` each; None when a complete
    partition of every dimension turns it into registers."""
    if pragma is None:
        return a
    kind, factor, dim = pragma
    if kind == "complete" and (dim == 0 or len(a.dims) <= 1):
        return None  # registers
    d = a.dims[dim - 1] if 0 < dim <= len(a.dims) else 1
    f = d if kind == "complete" else int(factor) if factor.isdigit() else macros.get(factor, 0)
    if f < 1:
        raise ValueError(f"ARRAY_PARTITION of {a.name}: factor {factor!r} is not a number or a known macro")
    f = min(f, d)
    return Array(a.name + f" [{kind} x{f}, dim {dim}]", math.ceil(a.elems / f), a.elem_bits, a.dims, a.banks * f, a.bind)


def measure_design(name: str, *, cache_dir=None) -> list:
    """Arrays of one design's synthesis-mode build (cached by the sources' hash), as its ARRAY_PARTITION and
    AGGREGATE pragmas shape them (a partitioned array is several memories, each rounded on its own), and its
    FIFOs (:class:`Fifo`)."""
    from eagle4.backends import csim_build, hls_designs
    from eagle4.backends.base import BackendUnavailable

    ds = csim_build.all_designs()
    files = hls_designs.synth_sources(name, ds)
    headers = csim_build.header_files(include_tb=False)
    snap = csim_build.snapshot_sources(headers + files)
    texts = [b.decode(errors="replace") for b in snap.values()]
    pragmas, aggregated = storage_pragmas(texts)
    digest = csim_build.build_digest(f"onchip5_{name}", snap, list(SYNTH_FLAGS))
    root = csim_build.cache_root(cache_dir) / "onchip"
    cxx = csim_build.find_cxx()

    def builder(tmp: Path):
        src_root = csim_build.materialize(snap, tmp / "src")
        arrays: dict[str, dict] = {}
        fifos: dict[str, dict] = {}
        for f in files:
            rel = f.relative_to(csim_build.HLS_DIR)
            obj = tmp / csim_build.object_name(str(rel))
            cmd = [cxx, *SYNTH_FLAGS, *csim_build.include_flags(src_root), "-c", str(src_root / rel), "-o", str(obj)]
            p = csim_build.run_cxx(cmd, f"compiling {rel} in synthesis mode", root)
            if p.returncode:
                raise csim_build.CsimBuildError(f"synthesis-mode build of {name} failed (cache folder {root}; nothing "
                                          f"was cached):\n{' '.join(cmd)}\n{p.stdout}{p.stderr}")
            for a in static_arrays(obj, aggregated):
                (fifos if isinstance(a, Fifo) else arrays)[a.name] = asdict(a)
            obj.unlink()
        (tmp / "arrays.json").write_text(json.dumps(sorted(arrays.values(), key=lambda a: a["name"]), indent=1))
        (tmp / "fifos.json").write_text(json.dumps(sorted(fifos.values(), key=lambda a: a["name"]), indent=1))
        (tmp / "build.json").write_text(json.dumps({"design": name, "complete": True}))

    if csim_build.tools_missing():
        raise BackendUnavailable(f"on-chip measurement needs g++ and hls4ml: {csim_build.tools_missing()}")
    entry, _ = csim_build.cached_build(root, digest, builder)
    macros = _macros(texts)
    binds = bind_pragmas(texts)
    out = []
    for a in json.loads((entry / "arrays.json").read_text()):
        arr = Array(**{**a, "dims": tuple(a.get("dims", ()))})
        var = re.split(r"[.]", arr.name)[0].split(":")[-1]
        p = partition(arr, pragmas.get(var), macros)
        if p is not None:
            out.append(replace(p, bind=binds.get(var, "")))
    return out + [Fifo(**a) for a in json.loads((entry / "fifos.json").read_text())]


@dataclass
class Placement:
    array: Array
    pool: str
    physical_bytes: int


_UNIT = BRAM18_BITS // 8  # every physical size is a multiple of a RAMB18 (a URAM288 is 16 of them)


def _cheapest_cover(extra: list[int], freed: list[int], need: int) -> list[int] | None:
    """Indices of the items whose moves free at least ``need`` bytes at the least extra cost (exact: a 0/1
    knapsack over RAMB18 units); None when all of them together free less."""
    import numpy as np

    if sum(freed) < need:
        return None
    units = [w // _UNIT for w in freed]
    E = -(-need // _UNIT)
    size = E + max(units) + 1  # sums past E are kept exact, so the walk back is plain
    inf = np.iinfo(np.int64).max // 4
    dp = np.full(size, inf, dtype=np.int64)
    dp[0] = 0
    take = np.zeros((len(extra), size), dtype=bool)
    for i, (c, w) in enumerate(zip(extra, units, strict=True)):
        if w <= 0:
            continue
        cand = np.full(size, inf, dtype=np.int64)
        cand[w:] = dp[:size - w] + c
        take[i] = cand < dp
        dp = np.minimum(dp, cand)
    f = E + int(np.argmin(dp[E:]))
    if dp[f] >= inf:
        return None
    out = []
    for i in range(len(extra) - 1, -1, -1):
        if take[i, f]:
            out.append(i)
            f -= units[i]
    return out


def place(arrays: list[Array], bram_cap: float, uram_cap: float) -> list[Placement]:
    """Each array where it costs less; when a pool overflows, the set of its arrays whose move to the other pool
    costs the least extra while freeing enough (exact, in RAMB18 units) moves; if the other pool cannot take
    them, the cheapest moves by ratio first (a greedy fallback)."""
    arrays = [a.as_array() if isinstance(a, Fifo) else a for a in arrays]
    pl = [Placement(a, p, physical_bytes(a, p)) for a in arrays
          for p in [a.bind or min(("bram", "uram"), key=lambda q: (physical_bytes(a, q), q))]]
    caps = {"bram": bram_cap, "uram": uram_cap}
    for full, other in (("bram", "uram"), ("uram", "bram")):
        used = sum(x.physical_bytes for x in pl if x.pool == full)
        if used <= caps[full]:
            continue
        mine = [x for x in pl if x.pool == full and not x.array.bind]  # a bound array stays where the code puts it
        extra = [physical_bytes(x.array, other) - x.physical_bytes for x in mine]
        pick = _cheapest_cover(extra, [x.physical_bytes for x in mine], int(math.ceil(used - caps[full])))
        room = caps[other] - sum(x.physical_bytes for x in pl if x.pool == other)
        if pick is not None and sum(physical_bytes(mine[i].array, other) for i in pick) <= room:
            for i in pick:
                mine[i].pool, mine[i].physical_bytes = other, physical_bytes(mine[i].array, other)
            continue
        # move first what costs the least extra in the other pool (then the largest)
        for x in sorted(mine, key=lambda x: (physical_bytes(x.array, other) / max(x.physical_bytes, 1),
                                             -x.physical_bytes)):
            if used <= caps[full]:
                break
            used -= x.physical_bytes
            x.pool, x.physical_bytes = other, physical_bytes(x.array, other)
    return pl


@dataclass
class DesignStorage:
    design: str
    placements: list[Placement]  # arrays and block-RAM FIFOs
    bram_cap: float
    uram_cap: float
    lut_fifos: list[Fifo] = field(default_factory=list)  # SRL / LUTRAM FIFOs: LUTs, not BRAM or URAM

    @property
    def lut_fifo_bytes(self) -> int:
        return sum(f.lut_bytes for f in self.lut_fifos)

    @property
    def fifo_count(self) -> int:
        return sum(f.count for f in self.lut_fifos) + sum(x.array.banks for x in self.placements
                                                          if x.array.name.startswith("fifo "))

    def used(self, pool: str) -> int:
        return sum(x.physical_bytes for x in self.placements if x.pool == pool)

    @property
    def unbound_uram(self) -> list[Placement]:
        """Arrays the model puts in URAM although the code declares no BIND_STORAGE for them."""
        return [x for x in self.placements if x.pool == "uram" and not x.array.bind]

    @property
    def payload(self) -> int:
        return sum(x.array.payload_bytes for x in self.placements)

    @property
    def utilization(self) -> float:
        return (self.used("bram") + self.used("uram")) / (self.bram_cap + self.uram_cap)

    @property
    def fits(self) -> bool:
        return self.used("bram") <= self.bram_cap and self.used("uram") <= self.uram_cap


def measure(contract, designs: list[str] | None = None, *, cache_dir=None) -> list[DesignStorage]:
    """The storage of every design (default: all of hls/) against the contract's device budget."""
    from eagle4.backends import csim_build
    from eagle4.budget.config import fpga_section

    f = fpga_section(contract)
    bram_cap, uram_cap = f.bram_mb * 1e6, f.uram_mb * 1e6
    names = designs or sorted(csim_build.all_designs())
    return [storage_of(n, measure_design(n, cache_dir=cache_dir), bram_cap, uram_cap) for n in names]


def storage_of(design: str, items: list, bram_cap: float, uram_cap: float) -> DesignStorage:
    """Arrays and block-RAM FIFOs placed in BRAM / URAM; SRL and LUTRAM FIFOs kept apart."""
    lut = [x for x in items if isinstance(x, Fifo) and x.impl != "bram"]
    mem = [x for x in items if not (isinstance(x, Fifo) and x.impl != "bram")]
    return DesignStorage(design, place(mem, bram_cap, uram_cap), bram_cap, uram_cap, lut)


def combined(parts: list[DesignStorage], name: str) -> DesignStorage:
    """Designs resident on the device together (the two fused pipelines): one placement of all arrays."""
    arrays = [replace(x.array, name=f"{p.design}:{x.array.name}") for p in parts for x in p.placements]
    lut = [Fifo(f"{p.design}:{f.name}", f.depth, f.width_bits, f.count) for p in parts for f in p.lut_fifos]
    return DesignStorage(name, place(arrays, parts[0].bram_cap, parts[0].uram_cap), parts[0].bram_cap,
                         parts[0].uram_cap, lut)


ONCHIP_COLUMNS = ("contract_sha256", "design", "array", "elems", "elem_bits", "banks", "payload_bytes", "pool",
                  "physical_bytes", "provenance")


def rows(parts: list[DesignStorage], sha: str) -> list[dict]:
    out = []
    for p in parts:
        for x in sorted(p.placements, key=lambda x: -x.physical_bytes):
            out.append({"contract_sha256": sha, "design": p.design, "array": x.array.name, "elems": x.array.elems,
                        "elem_bits": x.array.elem_bits, "banks": x.array.banks,
                        "payload_bytes": x.array.payload_bytes,
                        "pool": x.pool + (" (BIND_STORAGE)" if x.array.bind else ""),
                        "physical_bytes": x.physical_bytes, "provenance": "computed"})
        for f in sorted(p.lut_fifos, key=lambda f: -f.lut_bytes):  # LUT storage, not in the BRAM/URAM total
            out.append({"contract_sha256": sha, "design": p.design, "array": f"fifo {f.name}", "elems": f.depth,
                        "elem_bits": f.width_bits, "banks": f.count,
                        "payload_bytes": f.count * f.depth * f.width_bits // 8, "pool": f.impl,
                        "physical_bytes": f.lut_bytes, "provenance": "computed"})
        out.append({"contract_sha256": sha, "design": p.design, "array": "TOTAL", "elems": "", "elem_bits": "", "banks": "",
                    "payload_bytes": p.payload, "pool": f"bram {p.used('bram')} + uram {p.used('uram')}"
                    + (f" (+ {p.lut_fifo_bytes} in SRL/LUTRAM FIFOs, not counted here)" if p.lut_fifos else ""),
                    "physical_bytes": p.used("bram") + p.used("uram"), "provenance": "computed"})
    return out


def summary_line(p: DesignStorage) -> str:
    return (f"{p.design}: {p.payload / 2**20:.1f} MiB of arrays -> BRAM {p.used('bram') / 1e6:.1f}/{p.bram_cap / 1e6:.1f} MB"
            f" + URAM {p.used('uram') / 1e6:.1f}/{p.uram_cap / 1e6:.1f} MB = {100 * p.utilization:.1f}% of on-chip "
            f"memory ({'fits' if p.fits else 'DOES NOT FIT'}; goal <= {100 * UTILIZATION_GOAL:.0f}% "
            f"{'met' if p.fits and p.utilization <= UTILIZATION_GOAL else 'MISSED'}); {p.fifo_count} FIFOs: "
            f"{p.fifo_count - sum(f.count for f in p.lut_fifos)} in block RAM (counted), "
            f"{p.lut_fifo_bytes / 1e3:.1f} kB in SRL/LUTRAM [computed from the synthesis-mode build]")


def write_csv(parts: list[DesignStorage], sha: str, path) -> Path:
    import csv

    from eagle4.report import atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic.atomic_open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=ONCHIP_COLUMNS)
        w.writeheader()
        w.writerows(rows(parts, sha))
    return path


__all__ = ["Array", "Fifo", "DesignStorage", "storage_of", "bind_pragmas", "measure", "measure_design", "combined", "static_arrays", "place",
           "physical_bytes", "summary_line", "write_csv", "UTILIZATION_GOAL"]

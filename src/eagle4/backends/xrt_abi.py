"""The board interface of every xclbin kernel: argument order, m_axi ports and banks, the counters block.

The xclbin kernels are thin Vitis entry points ``krnl_<name>`` around the synthesizable tops of ``hls/``
(h13's code stays untouched), generated at build time from the tops' declarations (never committed, so a
change of a top or of its INTERFACE options reaches the next build by itself): ``make -C hls xclbin`` and
the pyxrt test double both call :func:`write_generated` / :func:`render_entry_point`. They exist because
of one hard fact of the Python runtime: pyxrt's ``run.set_arg(index, int)`` passes a 4-byte int and XRT
refuses any scalar whose size differs ("Bad argument size"), so a top with ``int64_t`` scalars cannot be
started from Python. Each entry point therefore takes

* every m_axi buffer of its top, same name, same order, with the top's INTERFACE options;
* every scalar as a 32-bit s_axilite register (``int`` for int/int64/bool, ``float`` for f32),
  widened to the top's type inside;
* one extra m_axi port ``e4_counters`` (bundle ``gmem_ctr``): the counters block the kernel writes at
  the end of a run (``hls/include/eagle4_hw_counters.h``; layout below).

The argument list is read from the top's declaration (the source preprocessed by g++ in the counting
C-sim mode, so ``PORT(T)`` ports and raw pointers are told apart); a declaration it cannot read is an
``InterfaceError`` naming the file and the parameter. ``python -m eagle4.backends.xrt_abi --write DIR``
writes the entry points and the HBM connectivity file into DIR to look at them.
"""

from __future__ import annotations

import functools
import hashlib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from eagle4.backends import csim_build
from eagle4.backends.hls_lex import split_top
from eagle4.report import atomic

HLS = csim_build.HLS_DIR
GENERATED_HLS_DIR = "xclbin/kernels"  # where the entry points sit in a build tree laid out like hls/

# ---------------------------------------------------------------------------------------------
# The counters block (uint64 words) every entry point writes to e4_counters at the end of a run, through
# hls/include/eagle4_hw_counters.h (eagle4::hwc::write_block; tests/harness/test_hls_hw_counters.py checks
# this mirror against it). Words nothing counted hold NOT_COUNTED: cycles and stalls always (they come from
# the platform's profiling monitors), port bytes in builds without EAGLE4_HW_COUNTERS and for the fused tops.
COUNTERS_MAGIC = 0xE4C0_0001
NOT_COUNTED = 2**64 - 1
HEADER_WORDS = ("magic", "status", "aux", "n_ports", "cycles", "stall_read", "stall_write", "stall_stream")
STATUS, AUX = 1, 2  # status: the top's return value (0 for void tops); aux: a scalar output (K6 err_info)


def counters_words(n_ports: int) -> int:
    return len(HEADER_WORDS) + 2 * n_ports


@dataclass(frozen=True)
class Arg:
    name: str
    ctype: str        # element type for pointers ("float", "const int64_t"), scalar type otherwise
    kind: str         # "port" (PORT(T) m_axi), "ptr" (raw T* m_axi), "out_scalar" (raw T* on s_axilite), "scalar"
    pragma: str = ""  # the top's m_axi options (bundle, depth, ...) for ports

    @property
    def is_buffer(self) -> bool:
        return self.kind in ("port", "ptr")

    @property
    def elem(self) -> str:
        return self.ctype.replace("const", "").strip()

    @property
    def host_scalar(self) -> str:
        """The entry point's 32-bit register type."""
        return "float" if self.elem == "float" else "int"


@dataclass(frozen=True)
class KernelIface:
    name: str          # the xclbin kernel (krnl_<...>)
    top: str           # the HLS top it wraps
    source: str        # path under hls/ of the top's definition
    header: str        # path under hls/ to include ("" : declare the top from the parsed list)
    key: str | None    # spec key of a per-kernel top, None for the fused pipelines
    returns: str       # "void" or "int"
    args: tuple[Arg, ...]

    @property
    def buffers(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.is_buffer)

    @property
    def scalars(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.kind == "scalar")

    def xrt_args(self) -> list[tuple[str, str, int]]:
        """The entry point's arguments as XRT numbers them: (name, 'global'|'scalar', size in bytes)."""
        out = []
        for a in self.args:
            if a.is_buffer:
                out.append((a.name, "global", 8))
            elif a.kind == "scalar":
                out.append((a.name, "scalar", 4))
        return out + [("e4_counters", "global", 8)]


# (xclbin kernel, top, source of the top, header, spec key)
KERNEL_TABLE = (
    ("krnl_draft_tree_score", "draft_tree_score_top", "draft_tree_score/draft_tree_score.cpp",
     "draft_tree_score/draft_tree_score.hpp", "draft_tree_score"),
    ("krnl_draft_tree_score_f32", "draft_tree_score_top_f32", "draft_tree_score/draft_tree_score.cpp",
     "draft_tree_score/draft_tree_score.hpp", "draft_tree_score"),
    ("krnl_update_draft_state", "update_draft_state_top", "update_draft_state/update_draft_state.cpp",
     "update_draft_state/update_draft_state.hpp", "update_draft_state"),
    ("krnl_work_deltas", "work_deltas_top", "work_deltas/work_deltas.cpp", "work_deltas/work_deltas.hpp",
     "work_deltas"),
    ("krnl_tree_mask", "tree_mask_top", "tree_mask/tree_mask.cpp", "tree_mask/tree_mask.hpp", "tree_mask"),
    ("krnl_logits_to_probas", "logits_to_probas_top", "logits_to_probas/logits_to_probas.cpp",
     "logits_to_probas/logits_to_probas.hpp", "logits_to_probas"),
    ("krnl_reject_sample", "reject_sample_top", "reject_sample/reject_sample.cpp",
     "reject_sample/reject_sample.hpp", "reject_sample"),
    ("krnl_update_verify", "update_verify_top", "update_verify/update_verify.cpp",
     "update_verify/update_verify.hpp", "update_verify"),
    ("krnl_fused_draft", "fused_draft_top", "fused/draft_pipeline/draft_pipeline_synth.cpp", "", None),
    ("krnl_fused_verify", "fused_verify_top", "fused/verify_pipeline/verify_pipeline_synth.cpp", "", None),
)
KERNEL_NAMES = tuple(k[0] for k in KERNEL_TABLE)
FUSED_KERNELS = ("krnl_fused_draft", "krnl_fused_verify")


class InterfaceError(RuntimeError):
    """A top's declaration could not be read (missing file, g++ failed, unexpected parameter)."""


# ---------------------------------------------------------------------------------------------
# Reading the tops

_PRAGMA = re.compile(r"HLS\s+INTERFACE\s+m_axi\s+port\s*=\s*(\w+)([^\"\n\\]*)")


def _preprocess(path: Path) -> str:
    cxx = csim_build.find_cxx()
    if cxx is None:
        raise InterfaceError("g++ is needed to read the HLS tops' declarations (install g++ or set CXX)")
    cmd = [cxx, "-E", "-P", "-std=c++17", "-DEAGLE4_CSIM_COUNTERS", "-DEAGLE4_HLS4ML_HEADERS",
           *csim_build.include_flags(), f"-I{path.parent}", f"-I{HLS / 'fused' / 'common'}", str(path)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise InterfaceError(f"g++ -E {path} failed:\n{p.stderr[-2000:]}")
    return p.stdout


def _parse_param(p: str, pragmas: dict[str, str], where: str) -> Arg:
    p = " ".join(p.split())
    m = re.match(r"^(?:::)?eagle4\s*::\s*CountedPort\s*<\s*(.+?)\s*>\s+(\w+)$", p)
    if m:
        return Arg(m.group(2), m.group(1), "port", pragmas.get(m.group(2), ""))
    m = re.match(r"^(.+?)\s*\*\s*(\w+)$", p)
    if m:
        kind = "ptr" if m.group(2) in pragmas else "out_scalar"
        return Arg(m.group(2), m.group(1).strip(), kind, pragmas.get(m.group(2), ""))
    m = re.match(r"^((?:const\s+)?(?:unsigned\s+)?(?:int|bool|float|int64_t|int32_t|uint32_t|long long|long))\s+(\w+)$", p)
    if m:
        return Arg(m.group(2), m.group(1).replace("const ", ""), "scalar")
    raise InterfaceError(f"{where}: cannot read parameter {p!r}")


@functools.cache
def _interface_cached(name: str, digest: str) -> KernelIface:
    kname, top, source, header, key = next(k for k in KERNEL_TABLE if k[0] == name)
    src = HLS / source
    text = src.read_text()
    pragmas = {m.group(1): " ".join(re.sub(r"offset\s*=\s*slave", "", m.group(2)).split())
               for m in _PRAGMA.finditer(text)}
    pre = _preprocess(src)
    m = re.search(rf"\b(void|int)\s+{top}\s*\(", pre)
    if not m:
        raise InterfaceError(f"hls/{source}: no declaration of {top} found")
    depth, i = 1, m.end()
    while depth:
        depth += {"(": 1, ")": -1}.get(pre[i], 0)
        i += 1
    params = split_top(pre[m.end(): i - 1])
    args = tuple(_parse_param(p, pragmas, f"hls/{source}:{top}") for p in params)
    return KernelIface(kname, top, source, header, key, m.group(1), args)


def interface(name: str) -> KernelIface:
    """The interface of xclbin kernel ``name`` (parsed from its top; cached per source contents)."""
    if name not in KERNEL_NAMES:
        raise KeyError(f"unknown xclbin kernel {name!r}; known: {', '.join(KERNEL_NAMES)}")
    source = next(k[2] for k in KERNEL_TABLE if k[0] == name)
    h = hashlib.sha256()
    for p in sorted(csim_build.header_files(include_tb=False)) + [HLS / source]:
        h.update(p.read_bytes())
    return _interface_cached(name, h.hexdigest())


# ---------------------------------------------------------------------------------------------
# The generated entry points


def render_entry_point(k: KernelIface) -> str:
    """C++ of the Vitis entry point of ``k`` (deterministic: the committed file must equal it)."""
    bufs = k.buffers
    params = []
    for a in k.args:
        if a.is_buffer:
            params.append(f"{a.ctype}* {a.name}")
        elif a.kind == "scalar":
            params.append(f"{a.host_scalar} {a.name}")
    params.append("uint64_t* e4_counters")
    L = [f"// GENERATED at build time by eagle4.backends.xrt_abi from hls/{k.source} ({k.top}).",
         "// Vitis entry point of the xclbin (hls/xclbin/README.md): 32-bit s_axilite scalars (pyxrt passes 4-byte",
         "// ints), the top's m_axi ports, and the counters block written at the end of a run",
         "// (src/eagle4/backends/xrt_abi.py: HEADER_WORDS, then bytes read/written per m_axi port in order).",
         "#include <cstdint>", ""]
    L.append('#include "eagle4_hw_counters.h"')
    if k.header:
        L.append(f'#include "{k.header}"')
    else:
        decl = []
        for a in k.args:
            decl.append(f"{a.ctype}* {a.name}" if a.kind in ("ptr", "out_scalar", "port") else f"{a.ctype} {a.name}")
        L.append(f'extern "C" {k.returns} {k.top}({", ".join(decl)});')
    L += ["", f'extern "C" void {k.name}({", ".join(params)}) {{']
    for a in bufs:
        opts = a.pragma or "bundle = gmem0"
        L.append(f"#pragma HLS INTERFACE m_axi port = {a.name} offset = slave {opts}")
    L.append(f"#pragma HLS INTERFACE m_axi port = e4_counters offset = slave bundle = gmem_ctr depth = "
             f"{counters_words(len(bufs))}")
    for a in k.scalars:
        L.append(f"#pragma HLS INTERFACE s_axilite port = {a.name}")
    L.append("#pragma HLS INTERFACE s_axilite port = return")
    counted = all(a.kind == "port" for a in bufs)
    if counted:
        L += ["#ifdef EAGLE4_CSIM_COUNTERS", f"  ::eagle4::PortCounter e4c[{max(len(bufs), 1)}] = {{}};",
              "#define E4X_PORT(p, slot) PORT_ARG((p), e4c, (slot))", "#else", "#define E4X_PORT(p, slot) (p)",
              "#endif"]
    outs = [a for a in k.args if a.kind == "out_scalar"]
    for a in outs:
        L.append(f"  {a.ctype} {a.name}_value = -1;")
    call = []
    for a in k.args:
        if a.kind == "port":
            call.append(f"E4X_PORT({a.name}, {bufs.index(a)})")
        elif a.kind == "ptr":
            call.append(a.name)
        elif a.kind == "out_scalar":
            call.append(f"&{a.name}_value")
        else:
            call.append(f"static_cast<{a.ctype}>({a.name})")
    ret = "const int64_t e4_status = " if k.returns == "int" else ""
    L.append(f"  {ret}{k.top}({', '.join(call)});")
    if k.returns != "int":
        L.append("  const int64_t e4_status = 0;")
    aux = f"static_cast<uint64_t>({outs[0].name}_value)" if outs else "0"
    n = len(bufs)
    if counted:  # every port counts its bytes in counted builds
        L += ["#ifdef EAGLE4_CSIM_COUNTERS",
              f"  ::eagle4::hwc::write_block(e4_counters, e4_status, {aux}, e4c, {n});",
              "#else",
              f"  ::eagle4::hwc::write_block_uncounted(e4_counters, e4_status, {aux}, {n});",
              "#endif", "#undef E4X_PORT"]
    else:  # raw pointers (the fused tops): nothing counts their bytes here, so nothing claims to
        L.append(f"  ::eagle4::hwc::write_block_uncounted(e4_counters, e4_status, {aux}, {n});")
    L += ["}", ""]
    return "\n".join(L)


def generated_sources() -> dict[str, bytes]:
    """{path relative to hls/: contents} of the entry points and of the connectivity file, as a snapshot to
    add to the sources a build compiles (see eagle4.backends.csim_build.snapshot_sources)."""
    out = {f"{GENERATED_HLS_DIR}/{n}.cpp": render_entry_point(interface(n)).encode() for n in KERNEL_NAMES}
    out["xclbin/connectivity.cfg"] = render_connectivity().encode()
    return out


def write_generated(dest: Path) -> list[Path]:
    """Write the entry points (``dest/kernels/krnl_*.cpp``) and ``dest/connectivity.cfg``."""
    out = []
    for rel, data in generated_sources().items():
        p = Path(dest) / rel[len("xclbin/"):]
        atomic.write_bytes(p, data)
        out.append(p)
    return out


def bank_map(text: str | None = None) -> dict[tuple[str, str], list[int]]:
    """{(kernel, argument): [HBM pseudo-channel indices]} from the ``sp=`` lines of a connectivity file's
    text (default: the generated one; compute unit ``<kernel>_1``; ``HBM[a:b]`` is a range)."""
    out: dict[tuple[str, str], list[int]] = {}
    for ln in (render_connectivity() if text is None else text).splitlines():
        ln = ln.split("#", 1)[0].strip()
        m = re.match(r"^sp\s*=\s*(\w+?)_1\.(\w+)\s*:\s*HBM\[(\d+)(?::(\d+))?\]$", ln)
        if m:
            lo, hi = int(m.group(3)), int(m.group(4) or m.group(3))
            out[(m.group(1), m.group(2))] = list(range(lo, hi + 1))
    return out


HBM_CHANNELS = 32  # pseudo-channels of the board's HBM as the generated map numbers them
HOT_STRIPE = 4     # pseudo-channels a hot stream is striped over (a 512-bit port at II=1 outruns one channel)


def bundles(k: KernelIface) -> dict[str, tuple[list[str], bool]]:
    """{bundle: ([its m_axi ports in argument order], hot)} of a kernel. A bundle is hot when one of its
    ports is widened to 512 bits (``max_widen_bitwidth = 512``: a stream moved at a beat per cycle)."""
    out: dict[str, tuple[list[str], bool]] = {}
    for a in k.buffers:
        b = re.search(r"bundle\s*=\s*(\w+)", a.pragma or "bundle = gmem").group(1)
        hot = re.search(r"max_widen_bitwidth\s*=\s*512\b", a.pragma or "") is not None
        ports, was_hot = out.get(b, ([], False))
        out[b] = (ports + [a.name], was_hot or hot)
    return out


def render_connectivity(n_channels: int = HBM_CHANNELS) -> str:
    """The HBM map of the compute units: per kernel, each hot bundle striped over its own HOT_STRIPE
    pseudo-channels (``HBM[a:a+3]``), each other bundle and the counters block on a channel of its own, so
    no two bundles of a kernel share a channel. Kernels take consecutive channel ranges, wrapping to 0 when
    a kernel's range would pass the last channel (compute units of different kernels run one after the
    other in this flow, so their ranges may overlap)."""
    L = ["# GENERATED at build time by eagle4.backends.xrt_abi: v++ --config of the EAGLE4 xclbin.",
         "# One compute unit per kernel. Per kernel: each hot bundle (a 512-bit widened stream) striped over",
         f"# {HOT_STRIPE} HBM pseudo-channels of its own, every other bundle and the counters block on one channel",
         "# each: two bundles of a kernel never share a channel. Ports of one bundle share its channels.",
         "[connectivity]"]
    ch = 0
    for n in KERNEL_NAMES:
        L.append(f"nk={n}:1:{n}_1")
    for n in KERNEL_NAMES:
        bs = bundles(interface(n))
        need = sum(HOT_STRIPE if hot else 1 for _, hot in bs.values()) + 1
        if need > n_channels:
            raise InterfaceError(f"{n}: its bundles need {need} HBM pseudo-channels, the map has {n_channels}")
        if ch + need > n_channels:
            ch = 0
        ranges: dict[str, str] = {}
        for b, (_, hot) in sorted(bs.items(), key=lambda kv: not kv[1][1]):  # hot bundles first
            width = HOT_STRIPE if hot else 1
            ranges[b] = f"HBM[{ch}:{ch + width - 1}]" if width > 1 else f"HBM[{ch}]"
            ch += width
        for b, (ports, _) in bs.items():
            L += [f"sp={n}_1.{port}:{ranges[b]}" for port in ports]
        L.append(f"sp={n}_1.e4_counters:HBM[{ch}]")
        ch += 1
    return "\n".join(L) + "\n"


def _row(name: str) -> tuple:
    return next(k for k in KERNEL_TABLE if k[0] == name)


def design_of(name: str) -> str:
    """The hls/**/design.desc design whose synthesized sources the entry point ``name`` wraps."""
    return _row(name)[4] or name[len("krnl_"):]


def vitis_sources(name: str, gen_dir: Path) -> list[Path]:
    """What ``v++ -c -k name`` compiles: the generated entry point (in ``gen_dir``), then the design's
    synthesized sources (design.desc)."""
    from eagle4.backends import csim_build, hls_designs

    return [Path(gen_dir) / "kernels" / f"{name}.cpp"] + hls_designs.synth_sources(design_of(name), csim_build.all_designs())


def vitis_includes(name: str) -> list[Path]:
    return [HLS / "include", HLS, (HLS / _row(name)[2]).parent, HLS / "fused" / "common"]


def vitis_plan(gen_dir: Path) -> str:
    """One line per entry point for hls/xclbin/xclbin.mk: ``kernel|include flags|sources``."""
    return "".join(f"{n}|{' '.join(f'-I {p}' for p in vitis_includes(n))}|"
                   f"{' '.join(str(p) for p in vitis_sources(n, gen_dir))}\n" for n in KERNEL_NAMES)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) == 2 and argv[0] in ("--write", "--plan"):
        try:
            paths = write_generated(Path(argv[1]))
        except InterfaceError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if argv[0] == "--plan":  # for hls/xclbin/xclbin.mk: the compile plan over the generated files
            sys.stdout.write(vitis_plan(Path(argv[1])))
        else:
            print("\n".join(f"wrote {p}" for p in paths))
        return 0
    print("usage: python -m eagle4.backends.xrt_abi --write DIR | --plan DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

"""Synthesis tops of the fused designs (hls/fused/*/*_synth.cpp) and their Vitis flow (hls/Makefile, run_hls.tcl).

* fused_draft_top / fused_verify_top compile with g++ in the counting C-sim mode and the plain-pointer
  synthesis mode, and the per-design file list of run_hls.tcl links with no undefined symbol;
* driven through the fused C-sim library, each synthesis top gives the same bits as the C-ABI entry
  (eagle4_fused_*_step) that test_fused_designs.py checks against the unfused chain;
* `make -C hls csynth KERNEL=fused_draft|fused_verify` hands the design to the (stand-in) vitis_hls, and the
  real run_hls.tcl sets the right top and sources; csim/cosim stop with a pointer to the g++ C-simulation;
  without Vitis every target still stops at once with the install message.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
HLS = REPO / "hls"
REPORT = REPO / "tests" / "data" / "hls-reports" / "gct02__AHLS__main_csynth.xml"
SYNTH = {
    "fused_draft": ("fused_draft_top", HLS / "fused" / "draft_pipeline" / "draft_pipeline_synth.cpp"),
    "fused_verify": ("fused_verify_top", HLS / "fused" / "verify_pipeline" / "verify_pipeline_synth.cpp"),
}
WARN = ["-Wall", "-Wno-unknown-pragmas", "-Wno-unused-label", "-Wno-unused-variable"]


def _toolchain():
    from eagle4.backends.csim_build import hls4ml_ap_types

    cxx = shutil.which(os.environ.get("CXX") or "g++")
    ap = hls4ml_ap_types()
    if cxx is None or ap is None:
        pytest.fail("g++ or the hls4ml ap_types headers are missing (apt-get install g++; pip install hls4ml)",
                    pytrace=False)
    return cxx, ap


def _gxx(args, cwd=None):
    cxx, ap = _toolchain()
    cmd = [cxx, "-std=c++17", *WARN, f"-I{HLS / 'include'}", f"-I{ap}", *args]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=600)
    assert res.returncode == 0, " ".join(cmd) + "\n" + res.stdout + res.stderr
    return res


# ------------------------------------------------------------------------------------------- g++

@pytest.mark.parametrize("design", sorted(SYNTH))
def test_synth_top_compiles_in_counting_csim_mode(tmp_path, design):
    top, src = SYNTH[design]
    _gxx(["-DEAGLE4_CSIM_COUNTERS", "-DEAGLE4_HLS4ML_HEADERS", "-O1", "-c", str(src), "-o", str(tmp_path / "t.o")])
    nm = shutil.which("nm")
    if nm is None:
        pytest.fail("nm is not installed (apt-get install binutils): the top's symbol cannot be checked", pytrace=False)
    syms = subprocess.run([nm, str(tmp_path / "t.o")], capture_output=True, text=True, timeout=60).stdout
    assert f" T {top}\n" in syms  # extern "C", not mangled


@pytest.mark.parametrize("design", sorted(SYNTH))
def test_synth_top_compiles_in_plain_pointer_synthesis_mode(design):
    _, src = SYNTH[design]
    # no EAGLE4_CSIM_COUNTERS: PORT(T) is T* as for Vitis (the hls4ml stream shim stands in for Vitis' hls_stream.h)
    _gxx(["-DEAGLE4_HLS4ML_HEADERS", "-fsyntax-only", str(src)])


def _tclsh() -> str:
    tclsh = shutil.which("tclsh")
    if tclsh is None:
        pytest.fail("tclsh is not installed (apt-get install tcl): the Vitis flow's Tcl cannot be checked",
                    pytrace=False)
    return tclsh


_VITIS_STUBS = """set ::log [open {log} a]
foreach cmd {{open_project set_top add_files open_solution set_part create_clock config_interface csim_design
             cosim_design export_design}} {{
  proc $cmd args "puts \\$::log \\"$cmd \\$args\\""
}}
proc csynth_design args {{ puts $::log "csynth_design"; file mkdir proj/solution1/syn/report }}
"""


def _tcl_designs(tmp_path) -> dict[str, tuple[str, list[str]]]:
    """design -> (top, synthesized sources relative to hls/) as run_hls.tcl itself resolves them from the
    design.desc files (the real script under tclsh, Vitis' commands stubbed)."""
    tclsh = _tclsh()
    out = {}
    for design in SYNTH:
        log = tmp_path / f"{design}.log"
        stubs = tmp_path / f"{design}.tcl"
        stubs.write_text(_VITIS_STUBS.format(log=log) + f"source {HLS / 'tcl' / 'run_hls.tcl'}\n")
        env = dict(os.environ, EAGLE4_KERNEL=design, EAGLE4_STEP="csynth", EAGLE4_PART="p", EAGLE4_CLOCK_NS="4",
                   EAGLE4_HLS_DIR=str(HLS))
        res = subprocess.run([tclsh, str(stubs)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        lines = log.read_text().splitlines()
        top = next(ln.split()[1] for ln in lines if ln.startswith("set_top "))
        files = [str(Path(ln.split()[1]).relative_to(HLS)) for ln in lines if ln.startswith("add_files ")]
        out[design] = (top, files)
    return out


def test_tcl_and_csim_build_read_the_same_description(tmp_path):
    """One source list: what run_hls.tcl synthesizes is what eagle4.backends.hls_designs says, and the
    C-sim library links those same files for the design."""
    from eagle4.backends import csim_build, hls_designs

    ds = csim_build.all_designs()
    for design, (top, files) in _tcl_designs(tmp_path).items():
        assert top == ds[design].top
        assert files == [str(f.relative_to(HLS)) for f in hls_designs.synth_sources(design, ds)]
        linked = [str(f.relative_to(HLS)) for f in hls_designs.csim_sources(design, ds)]
        assert linked[:len(files)] == files


@pytest.mark.parametrize("design", sorted(SYNTH))
def test_tcl_file_list_links_without_undefined_symbols(tmp_path, design):
    designs = _tcl_designs(tmp_path)
    assert sorted(designs) == sorted(SYNTH)
    top, files = designs[design]
    assert top == SYNTH[design][0]
    assert files[0] == str(SYNTH[design][1].relative_to(HLS))
    objs = []
    for i, f in enumerate(files):
        assert (HLS / f).is_file(), f
        objs.append(str(tmp_path / f"{i}.o"))
        _gxx(["-DEAGLE4_HLS4ML_HEADERS", "-O0", "-fPIC", "-c", str(HLS / f), "-o", objs[-1]])
    cxx, _ = _toolchain()
    res = subprocess.run([cxx, "-shared", "-Wl,-z,defs", "-o", str(tmp_path / "lib.so"), *objs],
                         capture_output=True, text=True)
    assert res.returncode == 0, f"{design}: the design sources of run_hls.tcl do not link:\n{res.stderr}"


# ------------------------------------------------------ the synthesis tops == the C-ABI entries

from eagle4.backends import fused_csim as fc  # noqa: E402


def _ptr(a: dict, name: str, off: int = 0):
    x = a.get(name)
    if x is None:
        return None
    return ctypes.c_void_p(x.ctypes.data + int(off) * x.dtype.itemsize)


@pytest.mark.csim
@pytest.mark.parametrize("bypass", [False, True], ids=["lm_head", "bypass_lm_head"])
def test_fused_draft_top_matches_capi(bypass):
    s = fc.DraftShape(B=3, K=8, widths=[1, 8, 3, 5], H=24, Vt=96, V=500, N=128, M=64, I=64, L=13, verify_num=40,
                      use_hot=True, hidden_dtype="bfloat16", weight_dtype="int4", seed=5)
    inputs = fc.make_draft_inputs(s)
    cand = None
    if bypass:  # testbench mode: record the chain's top-K (unfused debug taps) and feed it to both
        uo, _ = fc.run_draft("unfused", s, inputs, debug=True)
        cand = (uo["dbg_topk_p"], uo["dbg_topk_t"])
    want, _ = fc.run_draft("fused", s, inputs, candidates=cand)

    a = {k: np.ascontiguousarray(np.array(v, copy=True)) for k, v in inputs.items()}
    a.update(zip(fc.LM_WEIGHT_PORTS, fc.split_lm_weight(a["lm_weight"]), strict=True))  # the host's layout
    if cand is not None:
        a["cand_p"] = np.ascontiguousarray(cand[0], dtype=np.float32)
        a["cand_t"] = np.ascontiguousarray(cand[1], dtype=np.int64)
    (B, K, D, H, Vt, Vh, N, M, I, S_max, Tcap, capkv, cappack, use_hot, hid_code, w_code,
     vn_final) = fc._draft_iscalars(s, a)
    assert (hid_code, w_code) == (1, 3)  # the deployment precisions the synthesis top is built for (int4 LM head)
    lib = fc.load_library()
    top = lib.fused_draft_top
    top.restype = ctypes.c_int
    i64 = ctypes.c_int64
    cfg = [i64(v) for v in (B, K, D, H, Vt, Vh, N, M, I, S_max, Tcap, capkv, cappack, use_hot, vn_final, int(bypass))]
    widths = a["widths"].tolist()
    vns = a["verify_nums"].tolist()

    def call(phase, d=0):
        rowsH, b1 = B * K * H, d * (B + 1)
        W = widths[d] if phase == 1 else 0
        Wn = widths[d + 1] if phase == 1 and d + 1 < D else 0
        Vn = vns[d] if phase == 1 else 0
        ports = [
            _ptr(a, "root_token"), _ptr(a, "draft_hidden", d * rowsH), *[_ptr(a, n) for n in fc.LM_WEIGHT_PORTS],
            _ptr(a, "lm_scale"),
            _ptr(a, "lm_spill"), _ptr(a, "hot_token_id"), _ptr(a, "seq_lens"), _ptr(a, "req_pool_indices"),
            _ptr(a, "req_to_token"), _ptr(a, "draft_cache_locs"), _ptr(a, "out_hidden", d * rowsH),
            _ptr(a, "out_tokens", d * B * K), _ptr(a, "work_deltas", d * (K + 1)), _ptr(a, "qo_indptr", b1),
            _ptr(a, "kv_indptr", b1), _ptr(a, "kv_indices", d * capkv), _ptr(a, "positions", d * B * K),
            _ptr(a, "mask_indptr_bits", b1), _ptr(a, "mask_indptr_bytes", b1), _ptr(a, "packed_mask", d * cappack),
            *[_ptr(a, k) for k in ("cumu_tokens", "cumu_scores", "cumu_deltas", "prev_indexs", "next_indexs",
                                   "side_indexs", "vt_candidates", "vt_retrive_index", "vt_next_token",
                                   "vt_next_sibling", "vt_tree_parent", "vt_node_ids", "cc_out")],
            _ptr(a, "cand_p", d * B * 64), _ptr(a, "cand_t", d * B * 64)]
        rc = top(*ports, ctypes.c_int(phase), i64(W), i64(Wn), i64(Vn), *cfg)
        assert rc == 0, f"fused_draft_top phase {phase} layer {d}: {rc}"

    call(0)
    for d in range(D):
        call(1, d)
    call(2)
    for k in fc.DRAFT_OUTPUTS:
        got, exp = np.ascontiguousarray(a[k]), np.ascontiguousarray(want[k])
        assert np.array_equal(got.view(np.uint8), exp.view(np.uint8)), f"{k} differs from eagle4_fused_draft_step"


@pytest.mark.csim
def test_fused_verify_top_matches_capi():
    s = fc.VerifyShape(B=5, Q=16, S=6, V=200, H=6, L=9, eos=-1, temperatures=[1.0, 0.0, 0.7], seed=3)
    rng = np.random.default_rng(3)
    par = np.stack([fc.random_tree(rng, s.Q, "random") for _ in range(s.B)])
    inputs = fc.make_verify_inputs(s, parents=par)
    want, _ = fc.run_verify("fused", s, inputs, debug=False)
    a = {k: (None if v is None else np.ascontiguousarray(np.array(v, copy=True))) for k, v in inputs.items()}
    isc = fc._verify_iscalars(s, a)
    assert isc[7] == 1  # bf16 hidden states, the synthesis top's precision
    lib = fc.load_library()
    top = lib.fused_verify_top
    top.restype = ctypes.c_int
    names = [n for n in fc.VERIFY_TENSORS if n not in fc.VERIFY_DEBUG]
    i64 = ctypes.c_int64
    scal = [i64(v) for i, v in enumerate(isc) if i != 7]  # B, Q, S, V, H, S_max, eos, capkv, cappack
    rc = top(*[_ptr(a, n) for n in names], *scal, ctypes.c_float(s.threshold_single),
             ctypes.c_float(s.threshold_acc), ctypes.c_int(int(a.get("verify_node_ids") is not None)))
    assert rc == 0
    for k in want:
        got, exp = np.ascontiguousarray(a[k]), np.ascontiguousarray(want[k])
        assert np.array_equal(got.view(np.uint8), exp.view(np.uint8)), f"{k} differs from eagle4_fused_verify_step"


# ------------------------------------------------------------------------------------ the flow

def _env_without_vitis(tmp_path: Path) -> dict:
    env = dict(os.environ)
    dirs = [d for d in env.get("PATH", "").split(os.pathsep)
            if not any(Path(d, t).exists() for t in ("vitis_hls", "vitis-run"))]
    env["PATH"] = os.pathsep.join([str(tmp_path / "bin"), *dirs])
    env["PYTHON"] = sys.executable
    return env


def _make(tmp_path, *args):
    return subprocess.run(["make", "-C", str(HLS), *args], env=_env_without_vitis(tmp_path), capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("target", ["csim", "csynth", "cosim", "export"])
def test_fused_targets_fail_clearly_without_vitis(tmp_path, target):
    (tmp_path / "bin").mkdir()
    res = _make(tmp_path, target, "KERNEL=fused_draft")
    assert res.returncode != 0
    assert "neither 'vitis_hls' nor 'vitis-run' is on PATH" in res.stderr
    assert "settings64.sh" in res.stderr


def _stand_in(tmp_path: Path, body: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "vitis_hls"
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return tool


@pytest.mark.parametrize("design", sorted(SYNTH))
def test_fused_csynth_with_stand_in_tool(tmp_path, design):
    if not REPORT.is_file():
        pytest.fail(f"fixture missing: {REPORT}")
    log = tmp_path / "calls.log"
    # Stand-in for vitis_hls (as in test_hls_make.py): records how it was called, produces the csynth report.
    _stand_in(tmp_path, f"""echo "$@ kernel=$EAGLE4_KERNEL step=$EAGLE4_STEP part=$EAGLE4_PART clock=$EAGLE4_CLOCK_NS" >> {log}
mkdir -p proj/solution1/syn/report && cp {REPORT} proj/solution1/syn/report/csynth.xml
""")
    build, reports = tmp_path / "build", tmp_path / "reports"
    res = _make(tmp_path, "csynth", f"KERNEL={design}", f"BUILD={build}", f"REPORTS={reports}", "CLOCK_NS=4.0")
    assert res.returncode == 0, res.stdout + res.stderr
    call = log.read_text()
    assert "run_hls.tcl" in call and f"kernel={design} step=csynth" in call
    assert "part=xcv80-lsva4737-2MHP-e-S clock=4.0" in call
    assert not (build / "dumps" / design).exists()  # no catalog dumps for a fused design
    assert (reports / design / "csynth.xml").is_file()
    assert (reports / "summary.csv").is_file()


def test_fused_draft_csynth_runs_the_real_tcl_with_the_right_top(tmp_path):
    """The stand-in is tclsh with the Vitis commands stubbed: run_hls.tcl itself picks the top and sources."""
    tclsh = _tclsh()
    log = tmp_path / "tcl.log"
    stubs = tmp_path / "stubs.tcl"
    stubs.write_text(_VITIS_STUBS.format(log=log) + """set argv [lassign $argv flag script]
source $script
""")
    _stand_in(tmp_path, f'exec {tclsh} {stubs} "$@"\n')
    build, reports = tmp_path / "build", tmp_path / "reports"
    res = _make(tmp_path, "csynth", "KERNEL=fused_draft", f"BUILD={build}", f"REPORTS={reports}")
    assert res.returncode == 0, res.stdout + res.stderr
    lines = log.read_text().splitlines()
    assert "set_top fused_draft_top" in lines
    added = [ln.split()[1] for ln in lines if ln.startswith("add_files ")]
    assert added[0] == str(SYNTH["fused_draft"][1])
    assert str(HLS / "fused" / "draft_pipeline" / "draft_pipeline.cpp") in added
    assert not any("-tb" in ln for ln in lines if ln.startswith("add_files"))
    assert not any("unfused" in f or "_capi" in f for f in added)
    assert lines[-1] == "csynth_design"

    # csim of a fused design: the TCL refuses too (when called directly, outside the Makefile)
    env = dict(os.environ, EAGLE4_KERNEL="fused_verify", EAGLE4_STEP="csim", EAGLE4_PART="p", EAGLE4_CLOCK_NS="4",
               EAGLE4_HLS_DIR=str(HLS))
    res = subprocess.run([str(tmp_path / "bin" / "vitis_hls"), "-f", str(HLS / "tcl" / "run_hls.tcl")], env=env,
                         cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 2 and "test_fused_designs.py" in res.stderr


@pytest.mark.parametrize("target", ["csim", "cosim"])
def test_fused_csim_stops_with_pointer_to_the_gxx_csim(tmp_path, target):
    log = tmp_path / "calls.log"
    _stand_in(tmp_path, f'echo "$@" >> {log}\n')
    res = _make(tmp_path, target, "KERNEL=fused_draft", f"BUILD={tmp_path / 'build'}",
                f"REPORTS={tmp_path / 'reports'}")
    assert res.returncode != 0
    assert "pytest tests/harness/test_fused_designs.py" in res.stderr
    assert not log.exists()  # the tool is never started for it

"""The xrt backend over the pyxrt test double: parity on the whole catalog, the counters block, the
bounded wait, and a clear refusal when pyxrt, the device or the xclbin is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from eagle4.backends import BackendUnavailable, get_backend, xrt_abi
from eagle4.cases.catalog import all_cases
from eagle4.parity import judge, reference_outcome, run_case, self_consistency
from eagle4.spec import KERNEL_ORDER


def test_entry_points_take_only_32_bit_scalars_every_top_buffer_and_a_bank_for_each(tmp_path):
    banks = xrt_abi.bank_map()
    written = {p.name for p in xrt_abi.write_generated(tmp_path)}
    assert written == {f"{n}.cpp" for n in xrt_abi.KERNEL_NAMES} | {"connectivity.cfg"}
    for n in xrt_abi.KERNEL_NAMES:
        k = xrt_abi.interface(n)
        text = (tmp_path / "kernels" / f"{n}.cpp").read_text()
        signature = text.split(f"void {n}(", 1)[1].split("{", 1)[0]
        assert "int64_t " not in signature and "bool " not in signature, n  # no register wider or narrower
        for a in k.buffers:
            assert f"m_axi port = {a.name} " in text, (n, a.name)
            assert (n, a.name) in banks, (n, a.name)
        assert "eagle4::hwc::write_block" in text  # h13's counters block


def test_unreadable_top_declaration_names_file_and_parameter():
    with pytest.raises(xrt_abi.InterfaceError, match=r"hls/x\.cpp:t: cannot read parameter 'std::vector<int> v'"):
        xrt_abi._parse_param("std::vector<int> v", {}, "hls/x.cpp:t")


@pytest.mark.parametrize("kernel", KERNEL_ORDER)
def test_parity_on_the_whole_catalog(kernel, xrt_backend):
    cases = [c for c in all_cases() if c.kernel == kernel]
    assert cases
    bad = []
    for c in cases:
        first = run_case(xrt_backend, c)
        v = judge(c, reference_outcome(c), first)
        r = self_consistency(c, first, run_case(xrt_backend, c))
        if not (v.ok and r.ok):
            bad.append(v.report if not v.ok else r.report)
    assert not bad, "\n".join(bad[:5])


def test_counters_block_carries_the_csim_port_bytes(xrt_backend):
    from eagle4.backends.csim import CsimBackend

    case = next(c for c in all_cases() if c.kernel == "work_deltas")
    xrt_backend.run(case.kernel, case.inputs, case.params)
    c = xrt_backend.last_counters
    assert c["magic"] == xrt_abi.COUNTERS_MAGIC and c["status"] == 0 and c["bytes_counted"]
    assert not c["cycles_counted"]  # no cycle counter until the hardware counter struct exists
    cs = CsimBackend()
    cs.run(case.kernel, case.inputs, case.params)
    assert {k: v for k, v in xrt_backend.last_port_bytes.items() if k in cs.last_port_bytes} == cs.last_port_bytes
    assert set(xrt_backend.last_timing) == {"h2d_s", "kernel_s", "d2h_s"}


def test_hung_run_fails_with_kernel_call_and_timeout_then_the_next_call_runs(xrt_backend, pyxrt_double):
    case = next(c for c in all_cases() if c.kernel == "tree_mask")
    pyxrt_double.hang("krnl_tree_mask")
    with pytest.raises(RuntimeError, match=r"krnl_tree_mask \(tree_mask\) did not complete.*after 2 s.*params"):
        xrt_backend.run(case.kernel, case.inputs, case.params)
    pyxrt_double.hang(None)
    assert judge(case, reference_outcome(case), run_case(xrt_backend, case)).ok


def test_double_outputs_are_labelled_double_never_measured(xrt_backend):
    assert xrt_backend.provenance == "double"
    info = xrt_backend.device_info()
    assert "[double]" in info.device and info.details["fpga_xclbin_sha256"]
    for key in ("fpga_board", "fpga_shell", "fpga_xrt_version", "fpga_clock_mhz", "fpga_xclbin_uuid"):
        assert info.details[key], key


def test_without_pyxrt_the_backend_names_it(monkeypatch, double_xclbin):
    monkeypatch.setitem(sys.modules, "pyxrt", None)  # import pyxrt -> ImportError
    b = get_backend("xrt", xclbin=double_xclbin)
    ok, why = b.available()
    assert not ok and "pyxrt" in why and "setup.sh" in why
    with pytest.raises(BackendUnavailable, match="pyxrt"):
        b.run("work_deltas", {}, {})


def test_without_device_or_xclbin_the_backend_names_the_missing_piece(pyxrt_double, double_xclbin, monkeypatch,
                                                                        tmp_path):
    from eagle4.backends.xrt import XrtBackend

    monkeypatch.delenv("EAGLE4_XCLBIN", raising=False)
    assert "no xclbin" in XrtBackend().available()[1]
    assert "does not exist" in XrtBackend(xclbin=tmp_path / "none.xclbin").available()[1]
    monkeypatch.setenv("EAGLE4_XRT_DOUBLE_DEVICES", "0")
    assert "no FPGA device 0" in XrtBackend(xclbin=double_xclbin).available()[1]


def test_stale_xclbin_is_refused(pyxrt_double, tmp_path):
    import json

    from eagle4.backends.xrt import XrtBackend

    x = pyxrt_double.link(tmp_path / "x.xclbin")
    meta = json.loads(x.read_text())
    meta["kernels"][0]["args"].pop()
    x.write_text(json.dumps(meta))
    with pytest.raises(BackendUnavailable, match="built from other tops"):
        XrtBackend(xclbin=x).open()
    meta["kernels"].pop(0)
    x.write_text(json.dumps(meta))
    with pytest.raises(BackendUnavailable, match="lacks the kernels"):
        XrtBackend(xclbin=x).open()


def test_register_values_are_32_bit():
    from eagle4.backends.xrt import _register

    assert _register(True, "int", "k", "a") == 1
    assert _register(np.float32(-1.5), "float", "k", "a") == np.array([-1.5], np.float32).view(np.int32)[0]
    with pytest.raises(ValueError, match="32-bit"):
        _register(2**31, "int", "k", "a")


def test_fused_draft_pipeline_matches_the_fused_csim(xrt_backend):
    from eagle4.backends import fused_csim as fc
    s = fc.DraftShape(B=3, K=8, widths=[1, 8, 3, 5], H=24, Vt=96, V=500, N=128, M=64, I=64, L=13, verify_num=40,
                      use_hot=True, hidden_dtype="bfloat16", weight_dtype="int4", seed=5)
    inputs = fc.make_draft_inputs(s)
    want, _ = fc.run_draft("fused", s, inputs)
    got = xrt_backend.fused_draft_step(s, inputs)
    assert set(got) == set(fc.DRAFT_OUTPUTS) & set(got) and got
    for k, v in got.items():
        assert np.array_equal(np.ascontiguousarray(v).view(np.uint8), np.ascontiguousarray(want[k]).view(np.uint8)), k


def test_fused_verify_pipeline_matches_the_fused_csim(xrt_backend):
    from eagle4.backends import fused_csim as fc
    s = fc.VerifyShape(B=5, Q=16, S=6, V=200, H=6, L=9, eos=-1, temperatures=[1.0, 0.0, 0.7], seed=3)
    rng = np.random.default_rng(3)
    par = np.stack([fc.random_tree(rng, s.Q, "random") for _ in range(s.B)])
    inputs = fc.make_verify_inputs(s, parents=par)
    want, _ = fc.run_verify("fused", s, inputs, debug=False)
    got = xrt_backend.fused_verify_step(s, inputs)
    c = xrt_backend.last_counters  # the fused entry points count nothing themselves, and say so
    assert c["status"] == 0 and not c["bytes_counted"] and xrt_backend.last_port_bytes == {}
    assert set(want) <= set(got)
    for k in want:
        assert np.array_equal(np.ascontiguousarray(got[k]).view(np.uint8),
                              np.ascontiguousarray(want[k]).view(np.uint8)), k


def test_xclbin_comes_from_the_argument_the_environment_or_the_contract(monkeypatch, tmp_path):
    from eagle4.backends.xrt import resolve_xclbin
    from eagle4.contract import load_contract

    monkeypatch.delenv("EAGLE4_XCLBIN", raising=False)
    c = load_contract(xrt_abi.HLS.parent / "contracts" / "default.toml")
    assert resolve_xclbin(None, c) is None
    text = (xrt_abi.HLS.parent / "contracts" / "default.toml").read_text().replace(
        'synth_reports_dir = "reports/synth"', 'synth_reports_dir = "reports/synth"\nxclbin = "board/eagle4.xclbin"')
    (tmp_path / "c.toml").write_text(text)
    c2 = load_contract(tmp_path / "c.toml", verify_files=False)
    assert resolve_xclbin(None, c2) == tmp_path / "board" / "eagle4.xclbin"
    monkeypatch.setenv("EAGLE4_XCLBIN", "/env.xclbin")
    assert resolve_xclbin(None, c2) == Path("/env.xclbin")
    assert resolve_xclbin("/arg.xclbin", c2) == Path("/arg.xclbin")


def test_older_pyxrt_without_enumerate_devices_probes_the_device(pyxrt_double, double_xclbin, monkeypatch):
    from eagle4.backends.xrt import board_missing

    monkeypatch.delattr(pyxrt_double, "enumerate_devices")
    assert board_missing(double_xclbin) is None
    assert "no FPGA device 3" in board_missing(double_xclbin, device_index=3)

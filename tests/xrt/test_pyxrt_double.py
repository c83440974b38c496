"""The pyxrt test double refuses the misuse real XRT refuses, so the backend cannot pass on it by luck."""

from __future__ import annotations

import pytest


@pytest.fixture
def dev(pyxrt_double, double_xclbin):
    d = pyxrt_double.device(0)
    u = d.load_xclbin(pyxrt_double.xclbin(str(double_xclbin)))
    k = pyxrt_double.kernel(d, u, "krnl_work_deltas")
    return pyxrt_double, d, k


def _bo(rt, d, k, i, n=256):
    return rt.bo(d, n, rt.bo.flags.normal, k.group_id(i))


def test_wrong_index_and_wrong_types(dev):
    rt, d, k = dev
    r = rt.run(k)
    with pytest.raises(RuntimeError, match="Bad argument index"):
        r.set_arg(99, 1)
    with pytest.raises(TypeError, match="global buffer"):
        r.set_arg(0, 5)
    with pytest.raises(TypeError, match="scalar"):
        r.set_arg(3, _bo(rt, d, k, 0))
    with pytest.raises(TypeError, match="32-bit"):
        r.set_arg(3, 2**40)


def test_bo_in_the_wrong_bank(dev):
    rt, d, k = dev
    wrong = (k.group_id(0) + 1) % 32
    with pytest.raises(RuntimeError, match="memory bank"):
        rt.run(k).set_arg(0, rt.bo(d, 64, rt.bo.flags.normal, wrong))


def _ready_run(rt, d, k):
    r = rt.run(k)
    bos = {}
    for i, a in enumerate(k._meta["args"]):
        if a["kind"] == "global":
            bos[a["name"]] = b = _bo(rt, d, k, i, 4096)
            b.sync(rt.xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE)
            r.set_arg(i, b)
        else:
            r.set_arg(i, 0)
    return r, bos


def test_unset_argument_unsynced_write_and_stale_read(dev):
    rt, d, k = dev
    with pytest.raises(RuntimeError, match="never set"):
        rt.run(k).start()
    r, bos = _ready_run(rt, d, k)
    bos["work_scores"].write(b"\1" * 8, 0)
    with pytest.raises(RuntimeError, match="not synced to the device"):
        r.start()
    r, bos = _ready_run(rt, d, k)
    r.start()
    assert r.wait(1000) == rt.ert_cmd_state.ERT_CMD_STATE_COMPLETED
    with pytest.raises(RuntimeError, match="stale"):
        bos["work_deltas"].read(8, 0)
    bos["work_deltas"].sync(rt.xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE, 8, 0)
    assert len(bos["work_deltas"].read(8, 0)) == 8


def test_start_before_the_previous_run_is_waited(dev):
    rt, d, k = dev
    r1, _ = _ready_run(rt, d, k)
    r1.start()
    r2, _ = _ready_run(rt, d, k)
    with pytest.raises(RuntimeError, match="not waited"):
        r2.start()
    r1.wait(1000)
    r2.start()
    r2.wait(1000)


def test_hung_kernel_times_out(dev):
    rt, d, k = dev
    rt.hang("krnl_work_deltas")
    r, _ = _ready_run(rt, d, k)
    r.start()
    assert r.wait(10) == rt.ert_cmd_state.ERT_CMD_STATE_TIMEOUT


def test_unknown_kernel_and_foreign_file(pyxrt_double, double_xclbin, tmp_path):
    rt = pyxrt_double
    d = rt.device(0)
    u = d.load_xclbin(str(double_xclbin))
    with pytest.raises(RuntimeError, match="No such kernel"):
        rt.kernel(d, u, "krnl_nope")
    bad = tmp_path / "real.xclbin"
    bad.write_bytes(b"xclbin2\0" + bytes(100))
    with pytest.raises(RuntimeError, match="not an xclbin"):
        rt.xclbin(str(bad))

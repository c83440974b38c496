"""The C++ testbenches ``tb_<key> <dump.npz>`` of K1-K4, built with -fsanitize=address,undefined.

* every catalog case of the kernel, dumped with the reference's outputs, passes (exit 0) with no
  sanitizer report;
* a bad file exits 2 with a message (garbage, truncated, compressed, wrong kernel, missing);
* a corrupted expected value exits 1 and names the output;
* the npz reader handles .npy v2/v3 headers and non-ASCII meta_json (UTF-32 decode).
"""

from __future__ import annotations

import importlib
import io
import json
import os
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from eagle4.backends import csim_build, get_backend
from eagle4.cases.dump import save_dump
from eagle4.parity import reference_outcome

pytestmark = [pytest.mark.csim, pytest.mark.slow]

MY_KERNELS = ("draft_tree_score", "update_draft_state", "work_deltas", "tree_mask")
GOLDENS = Path(__file__).resolve().parents[1] / "data" / "goldens" / "cuda"
PRODUCER = {"backend": "ref", "device": "cpu", "note": "tests/harness/test_csim_tb.py"}


@pytest.fixture(scope="module", autouse=True)
def _tools():
    missing = csim_build.tools_missing()
    if missing:
        pytest.fail(f"the C-simulation needs {missing}: install g++ and `pip install hls4ml`", pytrace=False)


def _tb():
    from eagle4.backends import csim_tb

    return csim_tb


def _cases(key):
    return importlib.import_module(f"eagle4.cases.{key}").cases()


def _dump(tmp_path, case, name=None):
    out = reference_outcome(case)
    if out.error:
        return None
    path = tmp_path / f"{name or case.case_id.replace('/', '__')}.npz"
    save_dump(path, case, out.outputs, PRODUCER)
    return path


@pytest.mark.parametrize("key", MY_KERNELS)
def test_testbench_passes_every_catalog_case_clean(tmp_path, key):
    tb = _tb()
    exe = tb.build_testbench(key, sanitize=True)
    assert exe.is_file()
    dumps = [(case, p) for case in _cases(key) if (p := _dump(tmp_path, case)) is not None]  # refused: skipped

    def run(item):
        case, path = item
        r = tb.run_testbench(key, path)
        if r.returncode != 0 or r.sanitizer_report:
            return f"{case.case_id}: exit {r.returncode}\n{r.stdout[-1500:]}\n{r.stderr[-3000:]}"
        return None

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as ex:
        failures = [f for f in ex.map(run, dumps) if f]
    assert len(dumps) >= 10
    assert not failures, "\n".join(failures[:5])


@pytest.mark.parametrize("fname,key", [("cost_draft_tree_score_case.txt", "draft_tree_score"),
                                       ("cost_draft_tree_score_case_hot.txt", "draft_tree_score"),
                                       ("cost_draft_tree_update_case.txt", "update_draft_state")])
def test_testbench_matches_cuda_goldens(tmp_path, fname, key):
    """The real CUDA outputs, as a dump, through the sanitized testbench."""
    from eagle4.cases.cdt_text import parse_cdt_text

    path = GOLDENS / fname
    if not path.is_file():
        pytest.fail(f"{path} is missing: the shared/ folder beside the checkout must hold it", pytrace=False)
    case = parse_cdt_text(path, key)
    dump = tmp_path / "golden.npz"
    save_dump(dump, case, case.expected, {"backend": "dump:cuda-original", "source": fname})
    r = _tb().run_testbench(key, dump)
    assert r.returncode == 0 and not r.sanitizer_report, (r.stdout, r.stderr)


@pytest.mark.parametrize("key", MY_KERNELS)
def test_testbench_with_raw_pointer_ports(tmp_path, key):
    """Built without EAGLE4_CSIM_COUNTERS (PORT(T) = T*, as Vitis csim_design compiles it), sanitized."""
    tb = _tb()
    cases = [c for c in _cases(key) if not reference_outcome(c).error][::7]
    for case in cases:
        path = _dump(tmp_path, case)
        r = tb.run_testbench(key, path, counters=False)
        assert r.returncode == 0 and not r.sanitizer_report, (case.case_id, r.stdout[-2000:], r.stderr[-2000:])
        assert "port " not in r.stdout  # no counters in this build


@pytest.fixture(scope="module")
def k3_dump(tmp_path_factory):
    case = _cases("work_deltas")[3]
    return _dump(tmp_path_factory.mktemp("k3"), case, "k3"), case


def test_bad_files_exit_2_with_a_message(tmp_path, k3_dump):
    tb = _tb()
    good, case = k3_dump
    data = good.read_bytes()
    bad = {
        "garbage.npz": b"this is not a zip file at all" * 4,
        "truncated.npz": data[: len(data) // 2],
        "empty.npz": b"",
    }
    for name, blob in bad.items():
        p = tmp_path / name
        p.write_bytes(blob)
        r = tb.run_testbench("work_deltas", p)
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert "BAD FILE" in r.stderr and name in r.stderr, (name, r.stderr)
        assert not r.sanitizer_report
    # compressed entries are refused by name
    comp = tmp_path / "compressed.npz"
    with np.load(good) as z:
        np.savez_compressed(comp, **{k: z[k] for k in z.files})
    r = tb.run_testbench("work_deltas", comp)
    assert r.returncode == 2 and "compressed" in r.stderr and "savez" in r.stderr
    # a dump of another kernel
    other = _dump(tmp_path, _cases("tree_mask")[0], "other")
    r = tb.run_testbench("work_deltas", other)
    assert r.returncode == 2 and "tree_mask" in r.stderr
    # missing file; usage
    r = tb.run_testbench("work_deltas", tmp_path / "nope.npz")
    assert r.returncode == 2 and "cannot open" in r.stderr


def test_mismatch_exits_1_and_names_the_output(tmp_path, k3_dump):
    tb = _tb()
    good, case = k3_dump
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files}
    wd = arrays["expected_work_deltas"].copy()
    wd[1] = np.float32(wd[1]) + np.float32(1.0)
    arrays["expected_work_deltas"] = wd
    p = tmp_path / "corrupt.npz"
    np.savez(p, **arrays)
    r = tb.run_testbench("work_deltas", p)
    assert r.returncode == 1, r.stdout
    assert "MISMATCH work_deltas[1]" in r.stdout


def _write_npz_versions(path, arrays: dict, meta: dict, version):
    """A stored .npz whose .npy entries use an explicit format version (numpy.savez writes v1)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for k, v in {**arrays, "meta_json": np.array(json.dumps(meta, ensure_ascii=False))}.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asarray(v, order="C"), version=version, allow_pickle=False)
            zf.writestr(f"{k}.npy", buf.getvalue())


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_npy_header_versions_and_unicode_meta(tmp_path, k3_dump, version):
    tb = _tb()
    good, case = k3_dump
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files if k != "meta_json"}
        meta = json.loads(str(z["meta_json"][()]))
    meta["note"] = "non-ASCII: é ✓ 𝔼 \"quoted\" \\ backslash"
    p = tmp_path / f"v{version[0]}.npz"
    _write_npz_versions(p, arrays, meta, version)
    r = tb.run_testbench("work_deltas", p)
    assert r.returncode == 0, (r.stdout, r.stderr)


def test_missing_param_exits_2(tmp_path, k3_dump):
    tb = _tb()
    good, _ = k3_dump
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files if k != "meta_json"}
        meta = json.loads(str(z["meta_json"][()]))
    del meta["params"]["verify_num"]
    p = tmp_path / "noparam.npz"
    np.savez(p, **arrays, meta_json=np.array(json.dumps(meta)))
    r = tb.run_testbench("work_deltas", p)
    assert r.returncode == 2 and "verify_num" in r.stderr


def test_csim_backend_and_testbench_agree_on_port_bytes(tmp_path, k3_dump):
    """The testbench prints the same per-port counters the Python backend reports."""
    tb = _tb()
    good, case = k3_dump
    b = get_backend("csim")
    b.run(case.kernel, case.inputs, case.params)
    r = tb.run_testbench("work_deltas", good)
    assert r.returncode == 0
    for port, (rd, wr) in b.last_port_bytes.items():
        line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith(f"port {port} "))
        assert f"read {rd:>10} B" in line and f"written {wr:>10} B" in line, line


def _tb_abi_tables():
    import re

    from eagle4.spec import KERNEL_ORDER

    out = []
    for key in KERNEL_ORDER:
        src = csim_build.HLS_DIR / key / f"tb_{key}.cpp"
        if not src.is_file() or "KernelAbi" not in src.read_text():
            continue
        text = src.read_text()
        body = text[text.index("KernelAbi"):]
        lists = re.findall(r"\{([^{}]*)\}", body[body.index("{") + 1:])[:3]
        out.append(pytest.param(key, [re.findall(r'"([^"]+)"', lst) for lst in lists], id=key))
    return out


@pytest.mark.parametrize("key,tables", _tb_abi_tables())
def test_testbench_argument_tables_follow_spec(key, tables):
    """Each tb_<key>.cpp's KernelAbi lists the tensors, int/bool scalars and f32 scalars in spec.py order."""
    from eagle4.spec import kernel_spec

    spec = kernel_spec(key)
    assert tables[0] == [a.name for a in spec.tensors]
    assert tables[1] == [a.name for a in spec.scalars if a.dtype != "f32"]
    assert tables[2] == [a.name for a in spec.scalars if a.dtype == "f32"]

"""A dump whose .npy header claims a huge shape, or whose entry inflates past the limit, is a one-line
DumpError before anything is allocated, and the remaining files of a multi-file `check` still run
(issue 43: 8 PiB / 32 GiB headers raised MemoryError and stopped the run)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from eagle4.cases.dump import DumpError, read_npz
from eagle4.cli import main as cli

REPO = Path(__file__).resolve().parents[2]
GOOD = REPO / "tests" / "goldens" / "h100" / "update_draft_state__vn_negative.npz"


def _lying_npz(path: Path, shape) -> Path:
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": "<f4", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("meta_json.npy", _npy(np.array('{"format": "eagle4-dump/1"}')))
        zf.writestr("x.npy", hdr.getvalue() + b"\0" * 64)
    return path


def _npy(a) -> bytes:
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


@pytest.mark.parametrize("shape", [(1 << 51,), (1 << 33,)])  # 8 PiB, 32 GiB of float32
def test_huge_header_is_one_line(tmp_path, shape):
    p = _lying_npz(tmp_path / "huge.npz", shape)
    with pytest.raises(DumpError) as e:
        read_npz(p)
    msg = str(e.value)
    assert "\n" not in msg and "huge.npz" in msg and "'x'" in msg and "header claims" in msg


def test_check_goes_on_after_a_lying_file(tmp_path, capsys):
    bad = _lying_npz(tmp_path / "huge.npz", (1 << 51,))
    rc = cli(["check", "--backend", "ref", str(bad), str(GOOD)])
    out = capsys.readouterr()
    assert rc == 1
    assert "huge.npz" in out.err and "header claims" in out.err
    assert "1 passed, 1 failed" in out.out, out.out

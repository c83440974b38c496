"""A stage dump (.npz) whose entry fails its CRC or holds an object array is a one-line StageDumpError
naming the file and the stage, never a traceback (issue 43, rough edges)."""

from __future__ import annotations

import numpy as np
import pytest

from eagle4.stage_parity import StageDumpError, _Dump


def _crc_broken(path):
    np.savez(path, logits=np.arange(64, dtype=np.float32))
    data = bytearray(path.read_bytes())
    i = data.index(np.arange(64, dtype=np.float32).tobytes()[40:48])  # inside the stored array data
    data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def test_crc_error_is_one_line(tmp_path):
    d = _Dump(_crc_broken(tmp_path / "stages.npz"), "stages.npz")
    with pytest.raises(StageDumpError) as e:
        d.get("logits")
    msg = str(e.value)
    assert "\n" not in msg and "stages.npz" in msg and "'logits'" in msg


def test_object_array_is_one_line(tmp_path):
    p = tmp_path / "obj.npz"
    np.savez(p, logits=np.array([{"a": 1}], dtype=object))
    with pytest.raises(StageDumpError, match=r"obj\.npz.*'logits'"):
        _Dump(p, "obj.npz").get("logits")

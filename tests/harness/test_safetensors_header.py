"""A hostile safetensors header (a shape whose byte size overflows, offsets past the end) is refused with
one line naming the file and the tensor, before any reader allocates for it."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from eagle4.models.llama import read_safetensors_dir

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.cpu


def _write(d: Path, header: dict, data: bytes) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    h = json.dumps(header).encode()
    p = d / "model.safetensors"
    p.write_bytes(struct.pack("<Q", len(h)) + h + data)
    return p


@pytest.mark.parametrize("info,want", [
    ({"dtype": "F32", "shape": [2**62, 2**62], "data_offsets": [0, 4]}, "needs"),
    ({"dtype": "F32", "shape": [1], "data_offsets": [0, 2**40]}, "data_offsets"),
    ({"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}, "shape"),
])
def test_a_shape_or_offset_the_file_cannot_hold_is_one_line_naming_file_and_tensor(tmp_path, info, want):
    p = _write(tmp_path / "m", {"w.weight": info}, b"\0" * 4)
    with pytest.raises(ValueError) as e:
        read_safetensors_dir(tmp_path / "m")
    msg = str(e.value)
    assert "\n" not in msg and str(p) in msg and "'w.weight'" in msg and want in msg, msg


def test_the_committed_checkpoints_pass_the_header_check():
    from eagle4.models.llama import check_safetensors_header

    for p in sorted((ROOT / "models" / "default").glob("*/model.safetensors")):
        check_safetensors_header(p)


def test_a_header_length_past_the_end_is_refused(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "model.safetensors").write_bytes(struct.pack("<Q", 2**60) + b"{}")
    with pytest.raises(ValueError, match="header length"):
        read_safetensors_dir(d)

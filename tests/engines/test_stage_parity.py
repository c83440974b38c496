"""Stagewise parity from npz/safetensors dumps: metrics against an independent computation, the first
diverging stage in model order, malformed dumps as one-line errors naming file and stage."""

from __future__ import annotations

import json
import struct

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

from eagle4.stage_parity import StageDumpError, StageParity, compare_stages

STAGES = [{"name": "fc_out", "min_cosine": 0.98}, {"name": "attn_out", "min_cosine": 0.98},
          {"name": "ffn_out", "min_cosine": 0.98, "max_abs_diff": 0.5},
          {"name": "logits", "min_cosine": 0.98, "top_k": 4, "min_topk_overlap": 0.75}]


def dumps(tmp_path, ref, cand, ref_name="ref.safetensors", cand_name="cand.npz"):
    save_file(ref, str(tmp_path / ref_name)) if ref_name.endswith(".safetensors") else np.savez(tmp_path / ref_name, **ref)
    np.savez(tmp_path / cand_name, **cand) if cand_name.endswith(".npz") else save_file(cand, str(tmp_path / cand_name))
    return StageParity(reference=ref_name, candidate=cand_name, stages=STAGES)


def tensors(seed=0):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal((3, 16)).astype(np.float32) for n in ("fc_out", "attn_out", "ffn_out", "logits")}


def test_metrics_match_a_hand_computation(tmp_path):
    ref = tensors()
    cand = {k: v.copy() for k, v in ref.items()}
    cand["logits"][0] = ref["logits"][0] * 0.5 + 0.1  # row 0 changes scale and shifts
    rep = compare_stages(dumps(tmp_path, ref, cand), tmp_path)
    lg = rep.stages[-1]
    r, c = ref["logits"].astype(np.float64), cand["logits"].astype(np.float64)
    cos0 = float(r[0] @ c[0] / np.linalg.norm(r[0]) / np.linalg.norm(c[0]))
    assert lg.cosine_min == pytest.approx(cos0)
    assert lg.max_abs_diff == pytest.approx(float(np.abs(r - c).max()))
    assert lg.mean_abs_diff == pytest.approx(float(np.abs(r - c).mean()))
    assert lg.topk_overlap == pytest.approx(1.0)  # an affine map with positive scale keeps the order
    assert rep.ok and rep.first_divergent is None


def test_first_diverging_stage_in_model_order(tmp_path):
    ref = tensors()
    cand = {k: v.copy() for k, v in ref.items()}
    cand["ffn_out"] = ref["ffn_out"] + 0.6  # max |d| 0.6 > 0.5
    rng = np.random.default_rng(9)
    cand["logits"] = rng.standard_normal((3, 16)).astype(np.float32)
    rep = compare_stages(dumps(tmp_path, ref, cand), tmp_path)
    assert rep.first_divergent.name == "ffn_out"
    assert [s.ok for s in rep.stages] == [True, True, False, False]
    assert "max |diff| 0.6" in " ".join(rep.stages[2].reasons)
    assert "first diverging stage: ffn_out" in rep.text()


def test_topk_overlap_counts_shared_indices(tmp_path):
    ref = tensors()
    cand = {k: v.copy() for k, v in ref.items()}
    row = ref["logits"][1]
    order = np.argsort(-row)
    cand["logits"][1, order[0]] = row.min() - 1  # the best token of row 1 falls out of the top 4
    rep = compare_stages(dumps(tmp_path, ref, cand), tmp_path)
    assert rep.stages[-1].topk_overlap == pytest.approx((1 + 0.75 + 1) / 3)


def test_bf16_safetensors_and_nan(tmp_path):
    ref = tensors()
    cand = {k: v.astype(ml_dtypes.bfloat16) for k, v in ref.items()}
    # write bf16 safetensors by hand (safetensors.numpy cannot), per the format: u64 header length, JSON, data
    header, blobs, off = {}, [], 0
    for k, v in cand.items():
        b = v.tobytes()
        header[k] = {"dtype": "BF16", "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    (tmp_path / "cand.safetensors").write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    np.savez(tmp_path / "ref.npz", **ref)
    spec = StageParity(reference="ref.npz", candidate="cand.safetensors", stages=STAGES)
    assert compare_stages(spec, tmp_path).ok
    ref["attn_out"][0, 0] = np.nan
    np.savez(tmp_path / "ref.npz", **ref)
    rep = compare_stages(spec, tmp_path)
    assert rep.first_divergent.name == "attn_out" and "non-finite" in rep.first_divergent.reasons[0]


@pytest.mark.parametrize("case, needles", [
    ("missing_stage", ["cand.npz", "'logits'", "stage missing"]),
    ("shape", ["cand.npz", "'fc_out'", "shape [3, 8]"]),
    ("absent", ["cand.npz", "does not exist"]),
    ("truncated", []),
    ("header", ["ref.safetensors", "(header)"]),
])
def test_malformed_dumps_one_line(tmp_path, case, needles):
    ref, cand = tensors(), tensors()
    spec = dumps(tmp_path, ref, cand)
    if case == "missing_stage":
        cand.pop("logits")
        np.savez(tmp_path / "cand.npz", **cand)
    elif case == "shape":
        cand["fc_out"] = cand["fc_out"][:, :8]
        np.savez(tmp_path / "cand.npz", **cand)
    elif case == "absent":
        (tmp_path / "cand.npz").unlink()
    elif case == "truncated":  # the last tensor's data runs past the end of the file
        b = (tmp_path / "ref.safetensors").read_bytes()
        (tmp_path / "ref.safetensors").write_bytes(b[:-1])
        hdr = json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])
        last = max((k for k in hdr if k != "__metadata__"), key=lambda k: hdr[k]["data_offsets"][1])
        spec = StageParity(reference="ref.safetensors", candidate="cand.npz",
                           stages=[{"name": last, "min_cosine": 0.9}])
        needles = ["ref.safetensors", f"'{last}'", "data_offsets"]
    elif case == "header":
        (tmp_path / "ref.safetensors").write_bytes(struct.pack("<Q", 10) + b"not json!!" + b"\0" * 8)
    with pytest.raises(StageDumpError) as e:
        compare_stages(spec, tmp_path)
    msg = str(e.value)
    assert "\n" not in msg
    for n in needles:
        assert n in msg, msg


def test_npz_entries_are_bounded_before_inflating(tmp_path, monkeypatch):
    """A stage .npz was inflated whatever its entries claimed: an entry over the limit, or an .npy header
    whose shape claims more bytes than its entry holds, is now one line naming file and stage, before
    anything is inflated or allocated."""
    import io
    import zipfile

    from eagle4 import stage_parity

    ref, cand = tensors(), tensors()
    spec = dumps(tmp_path, ref, cand)
    compare_stages(spec, tmp_path)  # within bounds: reads as before
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": (1 << 40,)})
    with zipfile.ZipFile(tmp_path / "cand.npz", "w") as zf:
        zf.writestr("logits.npy", buf.getvalue() + b"\0" * 64)
    with pytest.raises(StageDumpError) as e:
        compare_stages(spec, tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and "cand.npz" in msg and "'logits'" in msg and "header claims" in msg, msg
    np.savez(tmp_path / "cand.npz", **cand)
    monkeypatch.setattr(stage_parity, "MAX_STAGE_ENTRY_BYTES", 64)
    with pytest.raises(StageDumpError, match="byte limit of an entry"):
        compare_stages(spec, tmp_path)

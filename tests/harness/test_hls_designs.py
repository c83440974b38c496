"""The per-folder design descriptions (hls/**/design.desc): every folder has one, and a bad one is a
one-line error naming the file and the field."""

from __future__ import annotations

import pytest

from eagle4.backends import csim_build, hls_designs
from eagle4.backends.hls_designs import DesignDescriptionError
from eagle4.spec import KERNEL_ORDER


def test_every_kernel_and_fused_design_is_described():
    ds = csim_build.all_designs()
    assert set(KERNEL_ORDER) | {"fused_draft", "fused_verify"} == set(ds)
    for k in KERNEL_ORDER:
        assert ds[k].top == f"{k}_top" and ds[k].tb and ds[k].csim_entry
    assert hls_designs.synth_sources("fused_draft", ds)[0].name == "draft_pipeline_synth.cpp"
    # every .cpp of the design folders is some design's source: no file outside the lists (hls/xclbin
    # holds the v++ kernel wrappers of the board flow, which include the designs, not designs of their own)
    listed = {f for n in ds for f in hls_designs.testbench_sources(n, ds)}
    assert {p for p in csim_build.HLS_DIR.rglob("*.cpp") if "xclbin" not in p.relative_to(csim_build.HLS_DIR).parts} == listed


def _write(tmp_path, text, name="x"):
    d = tmp_path / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "x.cpp").write_text("")
    (d / "design.desc").write_text(text)
    return d / "design.desc"


@pytest.mark.parametrize("text,msg", [
    ("name x\ntop x_top\nsynth x.cpp\nsources y.cpp\n", "unknown field 'sources'"),
    ("name x\ntop x_top\n", "field 'synth' is missing"),
    ("name x\ntop x_top a\nsynth x.cpp\n", "field 'top' takes exactly one value"),
    ("name x\ntop x_top\nsynth x.cpp missing.cpp\n", "field 'synth' names 'missing.cpp'"),
    ("name x\ntop x_top\nsynth x.cpp\nuses nowhere\n", "field 'uses' names design 'nowhere'"),
])
def test_bad_description_is_a_one_line_error(tmp_path, text, msg):
    path = _write(tmp_path, text)
    with pytest.raises(DesignDescriptionError, match=msg) as e:
        hls_designs.designs(tmp_path)
    assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_two_designs_with_one_name_are_refused(tmp_path):
    _write(tmp_path, "name x\ntop x_top\nsynth x.cpp\n", "a")
    _write(tmp_path, "# comment\nname x\ntop x_top\nsynth x.cpp\n", "b")
    with pytest.raises(DesignDescriptionError, match="design name 'x' is also used"):
        hls_designs.designs(tmp_path)

"""The host-only successor record (eagle4.perf.source_successor): what it must show before the committed H100
rows may stand for a source they did not time. Synthetic records in a temporary folder; the committed one is
judged by test_committed_h100_results.py."""

from __future__ import annotations

import json

import pytest

from eagle4.perf import source_successor as ss

pytestmark = [pytest.mark.cpu]

OLD, NEW, SASS = "a" * 64, "b" * 64, "c" * 64
POINTS = {("default", "k/B1"), ("default", "k/B8")}


def _write(tmp_path, times: dict[str, tuple[float, float]], pytest_exit: int = 0, source_sha: str = NEW,
           digests: tuple[str, str] | None = None, **fields) -> ss.Successor:
    """A record, its compare-src CSV (with the digest column where ``digests`` = (old, new) is given) and its
    sign-off folder."""
    d_old, d_new = (f",{d}" for d in digests) if digests else ("", "")
    rows = ["contract,point,kernel_src" + (",kernel_src_sha256" if digests else "") + ",impl,form,median_us"]
    for point, (old, new) in times.items():
        rows += [f"default,{point},.old/x.cu{d_old},cuda,,{old}", f"default,{point},{ss.NEW_SRC}{d_new},cuda,,{new}",
                 f"default,{point},{',' if digests else ''},torch_anchor,,{old * 9}"]  # anchors are not ours: ignored
    (tmp_path / "cmp.csv").write_text("\n".join(rows) + "\n")
    rec = tmp_path / "rec"
    rec.mkdir(exist_ok=True)
    (rec / "bench_source.txt").write_text(f"cuda/cost_draft_tree_kernel.cu sha256 {source_sha} EAGLE4_CUDA_PDL=1\n")
    (rec / "pytest_log.txt").write_text(f"1155 passed\nexit {pytest_exit}\n")
    (rec / "memcheck_log.txt").write_text("========= ERROR SUMMARY: 0 errors\nexit 0\n")
    body = dict(rows_kernel_src_sha256=OLD, kernel_src_sha256=NEW, commit="30b6090", change="host code only",
                sass_tool="nvcc, cuobjdump", sass_sha256_rows_source=SASS, sass_sha256_source=SASS,
                compare_src=["cmp.csv"], record="rec")
    body.update(fields)
    (tmp_path / ss.SUCCESSOR).write_text(json.dumps(body))
    return ss.load(tmp_path / ss.SUCCESSOR)


def test_a_complete_record_carries_the_rows_over(tmp_path):
    rec = _write(tmp_path, {"k/B1": (10.0, 10.1), "k/B8": (20.0, 19.8)})
    assert ss.problems(rec, OLD, NEW, POINTS, tmp_path) == []


def test_a_point_outside_the_tolerance_is_named(tmp_path):
    rec = _write(tmp_path, {"k/B1": (10.0, 10.0), "k/B8": (20.0, 20.0 * (1 + ss.TOLERANCE) + 0.01)})
    (bad,) = ss.problems(rec, OLD, NEW, POINTS, tmp_path)
    assert "k/B8" in bad and "new/old 1.03" in bad


def test_a_row_point_without_a_before_after_is_named(tmp_path):
    rec = _write(tmp_path, {"k/B1": (10.0, 10.0)})
    (bad,) = ss.problems(rec, OLD, NEW, POINTS, tmp_path)
    assert "no before/after at 1 point" in bad and "k/B8" in bad


def test_different_sass_needs_a_new_bench(tmp_path):
    rec = _write(tmp_path, {"k/B1": (10.0, 10.0), "k/B8": (20.0, 20.0)}, sass_sha256_source="d" * 64)
    assert any("SASS differ" in p for p in ss.problems(rec, OLD, NEW, POINTS, tmp_path))


def test_the_record_must_name_the_manifest_source_and_the_current_one(tmp_path):
    rec = _write(tmp_path, {"k/B1": (10.0, 10.0), "k/B8": (20.0, 20.0)})
    bad = ss.problems(rec, "e" * 64, "f" * 64, POINTS, tmp_path)
    assert any("the manifest eeeeeeeeeeee" in p for p in bad)
    assert any("is ffffffffffff" in p for p in bad)


def test_the_successor_sign_off_must_be_its_own_and_clean(tmp_path):
    rec = _write(tmp_path, {"k/B1": (10.0, 10.0), "k/B8": (20.0, 20.0)}, pytest_exit=1, source_sha=OLD)
    bad = ss.problems(rec, OLD, NEW, POINTS, tmp_path)
    assert any("bench_source.txt does not name source" in p for p in bad)
    assert any("pytest_log.txt: exit 1" in p for p in bad)


def test_a_bad_field_is_named_with_its_file(tmp_path):
    _write(tmp_path, {"k/B1": (10.0, 10.0)})
    path = tmp_path / ss.SUCCESSOR
    body = json.loads(path.read_text())
    body["sass_sha256_source"] = "not a digest"
    path.write_text(json.dumps(body))
    with pytest.raises(ValueError, match=rf"{ss.SUCCESSOR}: field sass_sha256_source"):
        ss.load(path)
    path.write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        ss.load(path)


def test_the_csv_digests_must_be_the_record_sources(tmp_path):
    times = {"k/B1": (10.0, 10.0), "k/B8": (20.0, 20.0)}
    rec = _write(tmp_path, times, digests=(OLD, NEW))
    assert ss.problems(rec, OLD, NEW, POINTS, tmp_path) == []
    rec = _write(tmp_path, times, digests=("d" * 64, NEW))  # the old side built from another source
    (bad,) = ss.problems(rec, OLD, NEW, POINTS, tmp_path)
    assert ".old/x.cu is dddddddddddd, the record says aaaaaaaaaaaa" in bad

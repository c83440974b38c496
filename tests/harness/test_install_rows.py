"""eagle4.perf.install_rows on a synthetic repository and sign-off folder: what goes where, and that a failed check
names the file and changes nothing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from eagle4.perf.install_rows import BENCH_ROWS, DERIVED, ROW_FILES, main

pytestmark = [pytest.mark.cpu]

OLD, NEW = "a" * 40, "b" * 40
H100 = "NVIDIA H100 80GB HBM3"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _manifest(commit: str, src: str) -> str:
    return f"# H100 environment manifest\ngit_commit: {commit}\nkernel_src cost_draft_tree_kernel.cu {_sha(src)}\n"


def _setup(tmp_path: Path, **over) -> tuple[Path, Path]:
    """(repo, sign-off folder); ``over`` replaces a sign-off file's text (name -> text)."""
    repo, so = tmp_path / "repo", tmp_path / "signoff"
    (repo / "cuda").mkdir(parents=True)
    (repo / "cuda" / "cost_draft_tree_kernel.cu").write_text("new source")
    rep = repo / "reports"
    (rep / "h100_parity" / OLD[:7]).mkdir(parents=True)
    for n in ROW_FILES + DERIVED:
        (rep / n).write_text(f"old {n}")
    (rep / "h100_env_manifest.txt").write_text(_manifest(OLD, "old source"))
    files = {f"reports/{n}": f"new {n}" for n in BENCH_ROWS + DERIVED}
    files["reports/cuda_kernel_times.csv"] = f"point,device\nK5,{H100}\nK6,{H100}\n"  # the card is read from it
    files.update({"reports/h100_env_manifest.txt": _manifest(NEW, "new source"),
                  "bench_log.txt": "run 0 ...\nexit 0\n",
                  "bench_source.txt": f"cuda/cost_draft_tree_kernel.cu sha256 {_sha('new source')} EAGLE4_CUDA_PDL=1\n",
                  "pytest_log.txt": "106 passed\nexit 0\n", "memcheck_log.txt": "ERROR SUMMARY: 0 errors\nexit 0\n",
                  "build_new.txt": "built: True", "smoke.csv": "x", "compare_src.csv": "c",
                  "compare_src_log.txt": "compare ...\nexit 0 (EAGLE4_CUDA_PDL=1)\n"})
    files.update(over)
    for name, text in files.items():
        if text is not None:
            (so / name).parent.mkdir(parents=True, exist_ok=True)
            (so / name).write_text(text)
    (tmp_path / "stdout.txt").write_text("[22:31:03 t=0s] build\n")
    return repo, so


def _tree(root: Path) -> dict:
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_install_files_everything_in_its_place(tmp_path, capsys):
    repo, so = _setup(tmp_path)
    assert main([str(so), "--log", str(tmp_path / "stdout.txt"), "--repo", str(repo)]) == 0
    rep = repo / "reports"
    for n in ROW_FILES:  # the committed rows kept beside their record, the new ones in their place
        assert (rep / "h100_parity" / OLD[:7] / "bench" / n).read_text().startswith("old" if n != "h100_env_manifest.txt" else "#")
    assert (rep / "h100_parity" / OLD[:7] / "bench" / "h100_env_manifest.txt").read_text() == _manifest(OLD, "old source")
    for n in BENCH_ROWS + DERIVED:
        assert (rep / n).read_text() == (so / "reports" / n).read_text()
    assert (rep / "h100_kernel_bench_log.txt").read_text() == (so / "bench_log.txt").read_text()
    record = rep / "h100_parity" / NEW[:7]
    assert sorted(p.name for p in record.iterdir()) == ["bench_log.txt", "bench_source.txt", "build_new.txt",
                                                         "memcheck_log.txt", "pytest_log.txt", "signoff_log.txt"]
    ba = rep / "kernel_before_after"
    assert sorted(p.name for p in ba.iterdir()) == [f"compare_src_{NEW[:7]}.csv", f"compare_src_{NEW[:7]}_log.txt"]
    assert f"installed {NEW[:7]}'s rows" in capsys.readouterr().out


@pytest.mark.parametrize("over, says", [
    ({"memcheck_log.txt": "ERROR SUMMARY: 2 errors\nexit 0\n"}, "memcheck_log.txt: 2 memcheck errors"),
    ({"bench_log.txt": "run 0 ...\nexit 124\n"}, "bench_log.txt: exit 124"),
    ({"bench_log.txt": None}, "bench_log.txt: the bench did not finish"),  # a --no-bench record
    ({"bench_source.txt": f".gpu/old.cu sha256 {_sha('old source')} EAGLE4_CUDA_PDL=1\n"}, "bench_source.txt: the bench measured .gpu/old.cu"),
    ({"reports/h100_env_manifest.txt": _manifest(NEW, "another source")}, "h100_env_manifest.txt: kernel_src"),
    ({"reports/h100_env_manifest.txt": _manifest(OLD, "new source")}, "the committed rows are already aaaaaaa's"),
    ({"reports/cuda_kernel_times.csv": None}, "cuda_kernel_times.csv: missing"),
    # another card's bench never lands among the baseline's rows, nor does a bench pooled over cards
    ({"reports/cuda_kernel_times.csv": "point,device\nK5,NVIDIA H200\n"},
     "cuda_kernel_times.csv: device: the rows are the H200's, not the baseline card's (H100 SXM)"),
    ({"reports/cuda_kernel_times.csv": f"point,device\nK5,{H100}\nK6,NVIDIA H200\n"},
     "cuda_kernel_times.csv: device: bench rows from 2 devices"),
    ({"reports/cuda_kernel_times.csv": "point,device\nK5,\n"}, "cuda_kernel_times.csv: device: bench rows name no device"),
])
def test_a_failed_check_names_the_file_and_changes_nothing(tmp_path, capsys, over, says):
    repo, so = _setup(tmp_path, **over)
    before = _tree(repo)
    assert main([str(so), "--repo", str(repo)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("install_rows: ") and says in err and len(err.strip().splitlines()) == 1
    assert _tree(repo) == before


def test_an_install_does_not_run_twice(tmp_path, capsys):
    repo, so = _setup(tmp_path)
    (repo / "reports" / "h100_parity" / NEW[:7]).mkdir()
    before = _tree(repo)
    assert main([str(so), "--repo", str(repo)]) == 1
    assert "exists already" in capsys.readouterr().err and _tree(repo) == before

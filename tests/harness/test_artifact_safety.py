"""No lost artifacts, and tests never touch committed files (issue 10, points 7 and 8).

* every writer to reports/ goes through eagle4.report.atomic (temp file + rename): a writer that fails
  half-way leaves the previous file, a cut-off ledger line never swallows the next row;
* a failed ``eagle4 synth-report`` keeps summary.csv;
* a pytest run without ``--reports-dir`` writes into a scratch copy, never into the committed reports/;
  an interrupted run replaces no matrix.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from eagle4.cli import main as cli_main
from eagle4.report import atomic

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "hls-reports"


# -- the one atomic-write helper --------------------------------------------------------------------------
def test_failed_writer_keeps_the_previous_file(tmp_path):
    p = atomic.write_text(tmp_path / "a.csv", "complete\n")
    with pytest.raises(RuntimeError), atomic.atomic_open(p, "w") as fh:
        fh.write("half a fi")
        raise RuntimeError("writer crashed")
    assert p.read_text() == "complete\n"
    assert [x.name for x in tmp_path.iterdir()] == ["a.csv"]  # no temp file left behind


def test_atomic_write_keeps_permissions_and_creates_folders(tmp_path):
    p = atomic.write_text(tmp_path / "new" / "x.md", "one")
    p.chmod(0o640)
    atomic.write_text(p, "two")
    assert p.read_text() == "two" and p.stat().st_mode & 0o777 == 0o640


def test_append_after_a_cut_off_line_keeps_the_new_row_whole(tmp_path):
    p = tmp_path / "ledger.csv"
    p.write_text("a,b,c\n1,2,3\n4,5")  # the last write was cut off mid-line
    atomic.append_text(p, "7,8,9\n", header="a,b,c\n")
    rows = list(csv.DictReader(p.open()))
    assert rows[-1] == {"a": "7", "b": "8", "c": "9"}
    assert rows[1] == {"a": "4", "b": "5", "c": None}  # the broken row stays broken, on its own
    fresh = atomic.append_text(tmp_path / "fresh.csv", "1,2,3\n", header="a,b,c\n")
    assert fresh.read_text() == "a,b,c\n1,2,3\n"


def test_gate_ledger_survives_a_truncated_last_line(tmp_path):
    from eagle4.gates import consecutive_green
    from eagle4.gates.evaluate import LEDGER, GateResult, record

    sha = "b" * 64
    res = [GateResult("g", "m", "gate", "PASS", 1.0, 1.0, ">=")]
    p = record(res, tmp_path, sha, "cpu", tmp_path)
    p.write_text(p.read_text() + f"2026-01-01T00:00:00+00:00,x,{sha},g,PA")  # a crash mid-append
    record(res, tmp_path, sha, "cpu", tmp_path)
    rows = list(csv.DictReader((tmp_path / LEDGER).open()))
    assert [r["status"] for r in rows] == ["PASS", "PA", "PASS"]
    assert rows[-1]["contract_sha256"] == sha and rows[-1]["hw"] == "cpu"
    assert consecutive_green(tmp_path, "g", sha) == 1  # the broken row is no PASS


def test_failed_synth_report_keeps_summary_csv(tmp_path, capsys):
    out = tmp_path / "synth" / "summary.csv"
    good = DATA / "BojanFaletic__MA_HLS__csynth.xml"
    assert cli_main(["synth-report", str(good), "--csv", str(out)]) == 0
    before = out.read_text()
    assert "BojanFaletic" in before
    bad = tmp_path / "broken_csynth.xml"
    bad.write_text("<profile><ReportVersion>")
    assert cli_main(["synth-report", str(bad), "--csv", str(out)]) == 1
    assert out.read_text() == before
    assert "left as it was" in capsys.readouterr().err


WRITE_CALL = re.compile(r"\.write_text\(|\.write_bytes\(|open\([^)]*[\"'][wa]b?[\"']|\.savefig\([^f]|np\.save")
# build caches (hls build trees, csim libraries): written inside a temporary folder renamed as a whole
NOT_ARTIFACTS = {"src/eagle4/backends/csim_build.py": ("materialize", "build.json"),
                 "src/eagle4/budget/onchip.py": ("cache folder", "build.json"),
                 "src/eagle4/backends/csim_tb.py": ("build.json",),
                 "src/eagle4/report/atomic.py": ("def ",),
                 "src/eagle4/workload/tp_launch.py": ("rank{r}.out",)}  # a rank's streamed stdout/stderr


def test_every_writer_goes_through_the_atomic_helper():
    hits = []
    for top in ("src/eagle4", "plugins"):
        for f in sorted((REPO / top).rglob("*.py")):
            rel = str(f.relative_to(REPO))
            lines = f.read_text().splitlines()
            for n, line in enumerate(lines, 1):
                if not WRITE_CALL.search(line) or line.lstrip().startswith("#") or "atomic" in line:
                    continue
                context = "\n".join(lines[max(0, n - 8):n])
                if "atomic_open" in "\n".join(lines[max(0, n - 3):n - 1]):
                    continue  # writes into the helper's temporary file
                if any(k in context for k in NOT_ARTIFACTS.get(rel, ())):
                    continue
                hits.append(f"{rel}:{n}: {line.strip()}")
    assert not hits, "write through eagle4.report.atomic (temp + rename) instead:\n" + "\n".join(hits)


# -- tests never touch committed files --------------------------------------------------------------------
@pytest.fixture
def project(harness_pytester):
    """A throwaway project with the harness's plugins and a committed reports/ folder."""
    pytester = harness_pytester
    committed = pytester.path / "reports"
    committed.mkdir()
    for name in ("p0_parity_matrix.json", "p0_parity_matrix.md", "env_manifest.txt"):
        (committed / name).write_text(f"committed {name}\n")
    return pytester


RECORDING = """
import pytest
@pytest.mark.parity
def test_one(parity_record):
    parity_record("work_deltas", "work_deltas/x", "csim", "pass")
"""

INTERRUPTED = RECORDING + """
@pytest.mark.parity
def test_two(parity_record):
    parity_record("work_deltas", "work_deltas/y", "csim", "pass")
    raise KeyboardInterrupt
"""


def _snapshot(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def test_a_test_run_writes_a_scratch_copy_not_reports(project):
    before = _snapshot(project.path / "reports")
    res = project.runpytest_subprocess(project.makepyfile(RECORDING), "-p", "no:cacheprovider", "--keep-scratch")
    res.assert_outcomes(passed=1)
    assert _snapshot(project.path / "reports") == before
    (line,) = [x for x in res.outlines if "this run's artifacts went to" in x]
    scratch = Path(re.search(r"went to (\S+)", line).group(1))
    assert scratch != project.path / "reports"
    assert "work_deltas/x" in (scratch / "p0_parity_matrix.json").read_text()


def test_explicit_reports_dir_is_written(project):
    project.makepyfile(RECORDING)
    res = project.runpytest_subprocess("-p", "no:cacheprovider", "--reports-dir", str(project.path / "reports"))
    res.assert_outcomes(passed=1)
    assert "work_deltas/x" in (project.path / "reports" / "p0_parity_matrix.json").read_text()


def test_an_interrupted_parity_run_keeps_the_previous_matrix(project):
    before = _snapshot(project.path / "reports")
    project.makepyfile(INTERRUPTED)
    res = project.runpytest_subprocess("-p", "no:cacheprovider", "--reports-dir", str(project.path / "reports"))
    assert res.ret == pytest.ExitCode.INTERRUPTED
    assert _snapshot(project.path / "reports") == before


TOUCHES_COMMITTED = """
from pathlib import Path
def test_writes_a_committed_file(request):
    (Path(str(request.config.rootpath)) / "reports" / "p0_parity_matrix.md").write_text("overwritten")
"""


def test_a_run_that_changes_committed_files_fails_naming_them(project):
    res = project.runpytest_subprocess(project.makepyfile(TOUCHES_COMMITTED), "-p", "no:cacheprovider")
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    res.stdout.fnmatch_lines(["*committed files changed by this test run*", "*reports/p0_parity_matrix.md*"])


WORKER_WRITES = """
from pathlib import Path
from plugins.api import reports_dir
def test_writes_where_the_run_writes(request):
    (reports_dir(request.config) / "gate_ledger.csv").write_text("from a worker")
"""


def test_xdist_workers_write_the_controllers_scratch_copy(project):
    # a test writing through reports_dir (as tests/gates records its ledger) in an xdist worker: the scratch
    # copy the controller made, never the committed reports/ (workers parse the command line again)
    before = _snapshot(project.path / "reports")
    res = project.runpytest_subprocess(project.makepyfile(WORKER_WRITES), "-p", "no:cacheprovider", "-n", "1",
                                       "--keep-scratch")
    res.assert_outcomes(passed=1)
    assert _snapshot(project.path / "reports") == before
    (line,) = [x for x in res.outlines if "this run's artifacts went to" in x]
    assert (Path(re.search(r"went to (\S+)", line).group(1)) / "gate_ledger.csv").read_text() == "from a worker"

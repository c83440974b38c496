"""Log invariants: forbidden/required patterns and summary counters, failures quoting file:line,
bounded reading, malformed counters as one-line errors."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from eagle4.log_invariants import MAX_LINE, LogFormatError, LogInvariants, check_logs

SUMMARY = r"\[EAGLE3\]\[perf-summary\]"
GOOD = ("[TM][INFO] GEMM_TUNED loaded: 412 entries\n"
        "[TM][INFO] [EAGLE3] disable multi-token for request 0: reason=terminal\n"
        "[TM][INFO] [EAGLE3][perf-summary] steps=512 tuned_hits=995 total=1000 disabled_multitoken_other=0\n")


def spec(**kw):
    base = dict(files=["logs/*.log"], must_not=["No feasible kernel", "disable multi-token(?!.*reason=terminal)"],
                must=["GEMM_TUNED loaded"], summary=SUMMARY,
                counters=["disabled_multitoken_other == 0", "tuned_hits / total >= 0.99"])
    base.update(kw)
    return LogInvariants(**base)


def write(tmp_path, text, name="run.log"):
    p = tmp_path / "logs" / name
    p.parent.mkdir(exist_ok=True)
    p.write_text(text)
    return p


def test_clean_log_passes(tmp_path):
    write(tmp_path, GOOD)
    rep = check_logs(spec(), tmp_path)
    assert rep.ok, rep.reasons
    assert rep.summaries == 1 and list(rep.files) == ["logs/run.log"]


def test_forbidden_line_is_quoted_with_file_and_line(tmp_path):
    write(tmp_path, GOOD + "[TM][WARN] No feasible kernel for gemm m=7 n=4096 k=4096, fallback\n"
          "[TM][WARN] [EAGLE3] disable multi-token for request 2: reason=kv_span\n")
    rep = check_logs(spec(), tmp_path)
    assert not rep.ok
    text = " ".join(rep.reasons)
    assert "logs/run.log:4: [TM][WARN] No feasible kernel" in text
    assert "logs/run.log:5:" in text and "reason=kv_span" in text
    assert "request 0" not in text  # the terminal disable is allowed


def test_counter_violations_quote_the_summary_line(tmp_path):
    write(tmp_path, GOOD.replace("tuned_hits=995", "tuned_hits=900").replace("other=0", "other=2"))
    rep = check_logs(spec(), tmp_path)
    text = " ".join(rep.reasons)
    assert "counter tuned_hits / total >= 0.99" in text and "(= 0.9)" in text and "logs/run.log:3:" in text
    assert "counter disabled_multitoken_other == 0" in text and "(= 2)" in text


def test_missing_required_line_summary_and_files(tmp_path):
    write(tmp_path, "[TM][INFO] nothing here\n")
    rep = check_logs(spec(), tmp_path)
    assert "logs/run.log: no line matches required 'GEMM_TUNED loaded'" in " ".join(rep.reasons)
    assert "no summary line matches" in " ".join(rep.unproven)  # no evidence, not a violation
    rep = check_logs(spec(files=["other/*.log"]), tmp_path)
    assert not rep.ok and "no log file matches 'other/*.log'" in rep.unproven[0]


def test_malformed_counter_value_is_one_line_error(tmp_path):
    write(tmp_path, GOOD.replace("total=1000", "total=n/a"))
    with pytest.raises(LogFormatError) as e:
        check_logs(spec(), tmp_path)
    assert str(e.value) == f"{tmp_path / 'logs' / 'run.log'}:3: counter 'total': 'n/a' is not a number"


def test_bounded_reading_never_passes_a_cut_log(tmp_path):
    write(tmp_path, GOOD + "x" * 5000 + "\n" + "[TM][WARN] No feasible kernel late in the log\n")
    rep = check_logs(spec(max_bytes=len(GOOD) + 100), tmp_path)
    assert not rep.ok and "read limit" in " ".join(rep.unproven)
    assert "No feasible kernel late" not in " ".join(rep.reasons + rep.unproven)  # not read, and not claimed absent either


def test_long_lines_are_read_in_pieces_with_correct_numbers(tmp_path):
    write(tmp_path, GOOD + "y" * (3 * MAX_LINE) + "\nNo feasible kernel\n")
    rep = check_logs(spec(), tmp_path)
    assert "logs/run.log:5: No feasible kernel" in " ".join(rep.reasons)


def test_contract_side_validation():
    with pytest.raises(ValidationError, match="not a regex"):
        spec(must_not=["(unclosed"])
    with pytest.raises(ValidationError, match="name OP number"):
        spec(counters=["tuned_hits >= lots"])
    with pytest.raises(ValidationError, match="need 'summary'"):
        spec(summary=None)

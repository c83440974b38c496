"""The byte budget's measured accept lengths ([trace].measured_csv) are validated, never clipped or
replaced silently (issue 43: "abc" gave a bare ValueError, -7 and 1e9 were clipped, /etc/passwd was read
and silently replaced by the declared distribution)."""

from __future__ import annotations

import pytest

from eagle4.budget.trace import _measured_accepts

SHA = "a" * 64


def _csv(tmp_path, value):
    p = tmp_path / "acceptance_lengths.csv"
    p.write_text(f"contract_sha256,accept_length,provenance\n{SHA},2,measured\n{SHA},{value},measured\n")
    return p


@pytest.mark.parametrize("value, why", [("abc", "is not a number"), ("-7", "not an integer in"),
                                        ("1e9", "not an integer in"), ("2.5", "not an integer in")])
def test_bad_accept_length_names_file_row_and_field(tmp_path, value, why):
    with pytest.raises(ValueError) as e:
        _measured_accepts(_csv(tmp_path, value), SHA, most=5)
    msg = str(e.value)
    assert "acceptance_lengths.csv:3: field 'accept_length'" in msg and why in msg and "\n" not in msg


def test_a_file_that_is_not_an_acceptance_csv_is_refused(tmp_path):
    p = tmp_path / "passwd"
    p.write_text("root:x:0:0:root:/root:/bin/bash\n")
    with pytest.raises(ValueError, match=r"passwd: field 'accept_length': no such column"):
        _measured_accepts(p, SHA, most=5)


def test_good_values_are_kept(tmp_path):
    assert _measured_accepts(_csv(tmp_path, "5"), SHA, most=5) == [2, 5]


def test_budget_prints_accept_length_with_the_bonus_token():
    """One definition everywhere (docs/cli.md): accept length = tokens committed per verify step, the
    bonus token included. The trace holds accepted draft tokens (mean 0.981 was printed as the accept
    length while gates and workload used 1.981-like figures)."""
    from types import SimpleNamespace

    from eagle4.budget.bytes import BytesResult

    side = SimpleNamespace(bytes_per_token=2**20, prov={})
    trace = SimpleNamespace(accept_provenance="measured", mean_accept=0.981, prefix_len=64)
    res = SimpleNamespace(unfused=side, fused=side, ratio=1.0, ratio_p0=lambda: 1.0, trace=trace,
                          top_contributors=lambda n: [])
    line = BytesResult.summary_lines(res)[0]
    assert "mean 1.981 tokens per verify step" in line and "0.981" not in line


def test_a_measured_csv_outside_the_repository_is_noted(tmp_path, capsys):
    """A [trace].measured_csv outside the repository was read silently: one stderr line now names it."""
    from pathlib import Path

    from eagle4.budget.trace import build_trace
    from eagle4.contract import contract_sha256, load_contract

    root = Path(__file__).resolve().parents[2]
    c = load_contract(root / "contracts" / "default.toml", verify_files=False)
    p = tmp_path / "acc.csv"
    c = c.model_copy(update={"trace": c.trace.model_copy(update={"measured_csv": str(p)})})
    sha = contract_sha256(c)
    p.write_text("contract_sha256,accept_length,provenance\n" + f"{sha},2,measured\n" * 8)
    capsys.readouterr()
    build_trace(c, root=root)
    err = capsys.readouterr().err
    assert f"note: trace.measured_csv: {p.resolve()} lies outside the repository" in err, err

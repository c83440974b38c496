"""The one contract loader: every section validated by it ([fpga], [trace], [[gates]] included), bad
scalars and typos as one-line errors naming file and field, and the commands use it (no raw-TOML
fallback)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eagle4.contract import ContractError, contract_sha256, load_contract

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "contracts" / "default.toml"

pytestmark = pytest.mark.cpu


def _contract(tmp_path: Path, text: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("")
    shutil.copytree(ROOT / "data" / "prompts", tmp_path / "data" / "prompts")
    p = tmp_path / "c.toml"
    p.write_text(text)
    return p


def _one_line_error(p: Path) -> str:
    with pytest.raises(ContractError) as e:
        load_contract(p, verify_files=False)
    msg = str(e.value)
    assert "\n" not in msg and str(p) in msg, msg
    return msg


@pytest.mark.parametrize("old,new,field", [
    ("hbm_peak_gbps = 820.0", "hbm_peak_gbps = [820.0]", "fpga.hbm_peak_gbps"),
    ("ii_target = 1 ", "ii_target = 2.5 ", "fpga.ii_target"),
    ("cycles_per_batch = 4", "cycles_per_batch = 73786976294838206464", "trace.cycles_per_batch"),
    ("hbm_peak_gbps = 820.0", "hbm_peak_gbps = null", "hbm_peak_gbps"),
    ("threshold = 2.0", "threshold = \"2.0\"", "gates[0].threshold"),
    ("after_consecutive = 3", "after_consecutive = 3.5", "gates[5].after_consecutive"),
    ("hidden_size = 4096", "hidden_sise = 4096", "fpga.model.hidden_sise"),
    ("seed = 7", "seed = 7\nbogus = 1", "trace.bogus"),
    ("runs = 5", "runs = 5.0", "runs.runs"),
])
def test_bad_scalars_and_keys_in_owned_sections_name_file_and_field(tmp_path, old, new, field):
    text = DEFAULT.read_text()
    assert old in text
    msg = _one_line_error(_contract(tmp_path, text.replace(old, new, 1)))
    assert field in msg, msg


def test_typo_of_a_section_name_is_refused_and_extension_tables_kept(tmp_path):
    msg = _one_line_error(_contract(tmp_path, DEFAULT.read_text().replace("[trace]", "[trace_]")))
    assert "did you mean [trace]" in msg
    c = load_contract(_contract(tmp_path / "b", DEFAULT.read_text() + "\n[other_tool]\nx = 1\n"), verify_files=False)
    assert c.extra_sections == {"other_tool": {"x": 1}}


def test_gate_ordering_rules_are_checked_by_the_loader(tmp_path):
    text = DEFAULT.read_text().replace('after = ["bytes_reduction_early", "bytes_reduction_final"]',
                                       'after = ["bytes_reduction_erly"]', 1)
    assert "unknown gate" in _one_line_error(_contract(tmp_path, text))


def test_sections_are_typed_on_the_contract_and_the_hash_is_unchanged():
    c = load_contract(DEFAULT, verify_files=False)
    assert c.fpga.model.vocab_size == 128256 and c.trace.seed == 7 and len(c.gates) == 7
    # the hash covers the owned sections as written (adding their schema changed no committed hash)
    assert c.sha256 == contract_sha256(DEFAULT) == contract_sha256(c)
    assert "gates" in c.canonical() and "extensions" not in c.canonical()


@pytest.mark.parametrize("command", ["budget", "gates"])
def test_commands_refuse_a_bad_contract_with_one_line_and_write_nothing(tmp_path, capsys, command):
    from eagle4.cli import main

    p = _contract(tmp_path, DEFAULT.read_text().replace("hbm_peak_gbps = 820.0", "hbm_peak_gpbs = 820.0"))
    out = tmp_path / "reports"
    rc = main([command, "--contract", str(p), "--reports", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "fpga.hbm_peak_gpbs" in err and str(p) in err, err
    assert not out.exists() or not any(out.iterdir())


def test_trace_names_the_acceptance_csv_and_its_hash(tmp_path):
    import csv

    from eagle4.budget.trace import build_trace
    from eagle4.contract import sha256_file

    c = load_contract(DEFAULT, verify_files=False)
    (tmp_path / "reports").mkdir()
    p = tmp_path / "reports" / "acceptance_lengths.csv"
    with open(p, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["contract_sha256", "accept_length", "provenance"])
        w.writerows([[c.sha256, 2, "measured"]] * 4)
    t = build_trace(c, root=tmp_path)
    assert t.accept_provenance == "measured" and t.accept_source == "reports/acceptance_lengths.csv"
    assert t.accept_sha256 == sha256_file(p) and t.accept_sha256[:16] in " ".join(t.notes)
    assert build_trace(c, root=tmp_path / "nothing").accept_sha256 == ""


ENGINE = ROOT / "contracts" / "examples" / "eagle3-engine.toml"


def test_the_loader_returns_one_typed_model_per_kind():
    """A workload contract and an engine contract are different models; neither carries the other's
    sections, and every workload section is required of a workload contract."""
    from eagle4.contract import EngineContract, WorkloadContract

    w, e = load_contract(DEFAULT, verify_files=False), load_contract(ENGINE, verify_files=False)
    assert type(w) is WorkloadContract and w.kind == "workload"
    assert type(e) is EngineContract and e.kind == "engine"
    assert not hasattr(w, "engine") and not hasattr(e, "decode")
    assert all(WorkloadContract.model_fields[k].is_required() for k in ("model", "decode", "prompts", "runs"))
    assert EngineContract.model_fields["engine"].is_required()


@pytest.mark.parametrize("src, edit, want", [
    (DEFAULT, lambda t: t.replace("[decode]", "[decode_]"), "decode"),
    (DEFAULT, lambda t: t + '\n[[scenarios]]\nname = "x"\n', "need an [engine] section"),
    (ENGINE, lambda t: t + "\n[runs]\nwarmup = 1\n", "belong to a workload contract"),
])
def test_a_section_of_the_other_kind_is_a_one_line_error(tmp_path, src, edit, want):
    p = _contract(tmp_path, edit(src.read_text()))
    msg = _one_line_error(p)
    assert str(p) in msg and want in msg


def test_a_dict_of_sections_is_a_typed_partial_contract():
    from eagle4.contract import PartialContract, as_contract, fpga_section

    c = as_contract({"fpga": {"hbm_peak_gbps": 820}})
    assert isinstance(c, PartialContract)
    assert fpga_section(c).hbm_peak_gbps == 820 and c.gates == [] and c.baseline is None
    assert type(as_contract(load_contract(ENGINE, verify_files=False).canonical())).__name__ == "EngineContract"


def test_a_pinned_file_outside_the_repository_is_read_with_a_one_line_note(tmp_path, capsys):
    """A prompts path outside the repository was read silently: it is still read (a tool that takes paths
    does), but one stderr line names the field, the path and its sha256; a file inside stays quiet."""
    repo, outside = tmp_path / "repo", tmp_path / "elsewhere"
    outside.mkdir()
    src = ROOT / "data" / "prompts" / "default.jsonl"
    shutil.copy(src, outside / "p.jsonl")
    text = DEFAULT.read_text()
    p = _contract(repo, text)
    load_contract(p, require_models=False)
    assert "outside the repository" not in capsys.readouterr().err
    p.write_text(text.replace('path = "data/prompts/default.jsonl"', f'path = "{outside / "p.jsonl"}"'))
    c = load_contract(p, require_models=False)
    err = capsys.readouterr().err.strip().splitlines()
    want = (f"note: prompts.files[0].path: {(outside / 'p.jsonl').resolve()} lies outside the repository "
            f"{repo.resolve()} (sha256 {c.prompts.files[0].sha256}); read as pinned")
    assert err == [want]

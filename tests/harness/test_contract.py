"""Benchmark contract: load, validate (errors name the field), hash, render, compare refusal."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from eagle4.contract import (
    ContractError,
    ContractMismatch,
    ensure_same_contract,
    load_contract,
    render_markdown,
)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "contracts" / "default.toml"

pytestmark = pytest.mark.cpu


def _copy_tree(tmp_path: Path, text: str | None = None) -> Path:
    """A minimal repo copy (pyproject marker, prompts, contract) so relative paths resolve."""
    (tmp_path / "pyproject.toml").write_text("")
    shutil.copytree(ROOT / "data" / "prompts", tmp_path / "data" / "prompts")
    (tmp_path / "contracts").mkdir()
    p = tmp_path / "contracts" / "c.toml"
    p.write_text(text if text is not None else DEFAULT.read_text())
    return p


def test_default_contract_loads_and_verifies_files():
    c = load_contract(DEFAULT)
    assert c.runs.runs >= 5
    assert c.decode.S == c.decode.tree_depth + 1
    assert [p.batch for p in c.operating_points] == sorted(p.batch for p in c.operating_points)
    assert re.fullmatch(r"[0-9a-f]{64}", c.sha256)
    assert len(c.load_prompts()) >= 8


def test_hash_is_stable_and_content_sensitive(tmp_path):
    a = load_contract(DEFAULT, verify_files=False)
    p = _copy_tree(tmp_path)
    b = load_contract(p, verify_files=False)
    assert a.sha256 == b.sha256  # location does not matter
    # comments and whitespace do not matter
    p.write_text("# another comment\n" + DEFAULT.read_text().replace("batch = 4", "batch   =   4"))
    assert load_contract(p, verify_files=False).sha256 == a.sha256
    p.write_text(DEFAULT.read_text().replace("output_tokens = 32", "output_tokens = 33"))
    assert load_contract(p, verify_files=False).sha256 != a.sha256


@pytest.mark.parametrize("old,new,field", [
    ("node_top_k = 4", "node_top_k = 0", "decode.node_top_k"),
    ("runs = 5", "runs = 3", "runs.runs"),
    ("max_tree_width = 4 ", "max_tree_width = 8 ", "decode"),
    ("verify_num = 16", "verify_num = 64", "decode"),
    ("temperatures = [0.0, 1.0]", "temperatures = [0.0, -1.0]", "decode.temperatures"),
    ("name = \"b4\"", "name = \"b1\"", "operating_points"),
    ("batch = 8", "batch = 129", "operating_points[2].batch"),
    ("stop_on_eos = false", "stop_on_eos = false\nbogus = 1", "decode.bogus"),
])
def test_invalid_fields_are_named(tmp_path, old, new, field):
    text = DEFAULT.read_text()
    assert old in text
    p = _copy_tree(tmp_path, text.replace(old, new, 1))
    with pytest.raises(ContractError) as e:
        load_contract(p, verify_files=False)
    assert field in str(e.value), str(e.value)


def test_missing_section_and_bad_toml(tmp_path):
    text = DEFAULT.read_text()
    p = _copy_tree(tmp_path, text.replace("[runs]", "[runz]"))
    with pytest.raises(ContractError, match="runs"):
        load_contract(p, verify_files=False)
    p.write_text("[contract\nname=")
    with pytest.raises(ContractError, match="not valid TOML"):
        load_contract(p)
    with pytest.raises(ContractError, match="does not exist"):
        load_contract(tmp_path / "nope.toml")


def test_prompt_hash_is_verified(tmp_path):
    p = _copy_tree(tmp_path)
    (tmp_path / "data" / "prompts" / "default.jsonl").write_text('{"id": "x", "text": "changed"}\n')
    with pytest.raises(ContractError, match=r"prompts\.files\[0\]\.sha256"):
        load_contract(p)


def test_foreign_sections_are_kept_and_hashed(tmp_path):
    text = DEFAULT.read_text()
    p = _copy_tree(tmp_path, text + '\n[zz_other_owner]\nclock_mhz = 300\n\n[[zz_gates]]\nname = "g"\n')
    c = load_contract(p, verify_files=False)
    assert c.extra_sections["zz_other_owner"] == {"clock_mhz": 300}
    assert c.sha256 != load_contract(DEFAULT, verify_files=False).sha256
    assert "clock_mhz" in render_markdown(c)


def test_render_names_everything():
    c = load_contract(DEFAULT, verify_files=False)
    md = render_markdown(c)
    for s in (c.sha256, "node_top_k", "tree_depth", "verify_num", "max_tree_width", "temperatures",
              "data/prompts/default.jsonl", c.operating_points[-1].name, "seeds"):
        assert s in md


def test_ensure_same_contract():
    rows = [{"contract_sha256": "a" * 64, "v": 1}, {"contract_sha256": "a" * 64, "v": 2}]
    assert ensure_same_contract(rows) == "a" * 64
    with pytest.raises(ContractMismatch, match="different benchmark contracts"):
        ensure_same_contract(rows + [{"contract_sha256": "b" * 64}])
    with pytest.raises(ContractMismatch, match="no contract_sha256"):
        ensure_same_contract([{"v": 1}])
    with pytest.raises(ContractMismatch, match="expected"):
        ensure_same_contract(rows, expected="c" * 64)
    with pytest.raises(ContractMismatch, match="no result rows"):
        ensure_same_contract([])

"""A contract's pinned files are read only when they are regular files: a prompts path of /dev/zero or a
folder is a one-line error naming the contract and the field, never an endless read (issue 43, finding 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle4.contract import ContractError, load_contract

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("target", ["/dev/zero", "FOLDER"])
def test_prompts_path_that_is_not_a_file_is_one_line(tmp_path, target):
    folder = tmp_path / "prompts_dir"
    folder.mkdir()
    path = str(folder) if target == "FOLDER" else target
    text = (REPO / "contracts" / "default.toml").read_text().replace('path = "data/prompts/default.jsonl"',
                                                                      f'path = "{path}"')
    (tmp_path / "pyproject.toml").write_text("")
    c = tmp_path / "c.toml"
    c.write_text(text)
    with pytest.raises(ContractError) as e:
        load_contract(c, require_models=False)
    msg = str(e.value)
    assert "\n" not in msg and "c.toml" in msg and "prompts.files[0].path" in msg and "not a regular file" in msg


def test_binary_contract_is_one_line_naming_the_file(tmp_path):
    p = tmp_path / "bin.toml"
    p.write_bytes(b"\x00\xff\xfe binary")
    with pytest.raises(ContractError, match=r"bin\.toml: not a TOML contract: not UTF-8"):
        load_contract(p)

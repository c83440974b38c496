"""Result rows name the code that produced them: a commit sha (or "unknown"), never a ref like HEAD."""

from __future__ import annotations

import re

import pytest

from eagle4 import vcs
from eagle4.workload import runner

SHA = re.compile(r"^[0-9a-f]{40}(-dirty)?$")


def test_rows_get_the_checkouts_sha(monkeypatch):
    monkeypatch.delenv("EAGLE4_GIT_COMMIT", raising=False)
    assert SHA.match(runner.git_commit()), runner.git_commit()


@pytest.mark.parametrize("given", ["HEAD", "main", "HEAD~1", "v1.0", "12345"])
def test_a_ref_is_refused(monkeypatch, given):
    monkeypatch.setenv("EAGLE4_GIT_COMMIT", given)
    with pytest.raises(ValueError, match=r"EAGLE4_GIT_COMMIT=.* is not a commit sha"):
        runner.git_commit()
    with pytest.raises(ValueError, match="is not a commit sha"):
        vcs.git_state()


@pytest.mark.parametrize("given", ["85b05357f3a27966e971947642b681debbd36f28", "85b0535-dirty", "unknown"])
def test_a_sha_or_unknown_is_taken(monkeypatch, given):
    monkeypatch.setenv("EAGLE4_GIT_COMMIT", given)
    assert runner.git_commit() == given == vcs.git_state()["commit"]


def test_one_home_for_the_commit():
    assert runner.git_commit is vcs.git_commit


def test_dirty_means_code_not_the_artifact_pack(tmp_path, monkeypatch):
    """A publishing run rewrites reports/ while it runs: that alone does not make its rows -dirty;
    a changed tracked source file does."""
    import subprocess

    monkeypatch.delenv("EAGLE4_GIT_COMMIT", raising=False)

    def git(*a):
        subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True, timeout=30)

    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "r.csv").write_text("a\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    (tmp_path / "reports" / "r.csv").write_text("b\n")
    assert vcs.git_state(tmp_path)["dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert vcs.git_state(tmp_path)["dirty"] is True

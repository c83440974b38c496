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

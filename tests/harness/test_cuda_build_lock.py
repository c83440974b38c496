"""The CUDA build's wait on torch's build lock is bounded: a lock left by a killed build fails by name instead of
hanging every later build of that source (torch's FileBaton waits without end)."""

from __future__ import annotations

import os

import pytest

from eagle4.backends import cuda as cu

pytestmark = [pytest.mark.cpu]


class _Clock:
    def __init__(self, t0: float):
        self.t = t0

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


def test_no_lock_returns_at_once(tmp_path):
    cu.wait_for_build_lock(tmp_path, stale_s=10, sleep=lambda s: pytest.fail("slept without a lock"))


def test_a_lock_released_by_its_build_is_waited_for(tmp_path):
    lock = tmp_path / "lock"
    lock.write_text("")
    os.utime(lock, (1000.0, 1000.0))
    clock = _Clock(1000.0)
    polls = []

    def sleep(s):
        polls.append(s)
        clock.sleep(s)
        if len(polls) == 3:
            lock.unlink()  # the other process's build ends

    cu.wait_for_build_lock(tmp_path, stale_s=60, poll_s=1.0, clock=clock, sleep=sleep)
    assert len(polls) == 3 and lock.parent.is_dir()


def test_a_left_behind_lock_fails_by_name_within_the_bound_and_is_kept(tmp_path):
    lock = tmp_path / "lock"
    lock.write_text("")
    os.utime(lock, (1000.0, 1000.0))
    clock = _Clock(1000.0)
    with pytest.raises(cu.BuildLockError, match=str(lock).replace("/", ".")):
        cu.wait_for_build_lock(tmp_path, stale_s=30, poll_s=7.0, clock=clock, sleep=clock.sleep)
    assert clock.t - 1000.0 <= 31  # bounded by stale_s (plus one poll's rounding)
    assert lock.exists()  # never removed: whether its build still runs cannot be told


def test_load_extension_checks_the_lock_before_torch_builds(tmp_path, monkeypatch):
    # torch is a dependency of the harness: a missing torch fails this test, never skips it
    from torch.utils import cpp_extension

    monkeypatch.setenv("EAGLE4_CUDA_BUILD_DIR", str(tmp_path))
    src = tmp_path / "k.cu"
    src.write_text("// a source\n")
    bdir = tmp_path / cu.build_key(src)
    bdir.mkdir()
    (bdir / "lock").write_text("")
    os.utime(bdir / "lock", (0.0, 0.0))  # left behind long ago
    monkeypatch.setattr(cpp_extension, "load", lambda **kw: pytest.fail("torch's build reached despite the lock"))
    with pytest.raises(cu.BuildLockError, match="killed mid-way"):
        cu.load_extension(src)

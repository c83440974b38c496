"""The one parser of numeric environment settings (eagle4.envvars) and its users: a bad value fails the use that reads
it with one line naming the variable and the value; the modules still import."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from eagle4 import containers, envvars
from eagle4.backends import csim_build, cuda

pytestmark = [pytest.mark.cpu]

NAME = "EAGLE4_TEST_SECONDS"


@pytest.mark.parametrize("raw", [None, "", "   "])
def test_unset_or_blank_gives_the_default(monkeypatch, raw):
    monkeypatch.delenv(NAME, raising=False)
    if raw is not None:
        monkeypatch.setenv(NAME, raw)
    assert envvars.seconds(NAME, 7) == 7.0


@pytest.mark.parametrize("raw, want", [("12.5", 12.5), ("1e3", 1000.0), (" 3 ", 3.0)])
def test_positive_numbers_are_taken(monkeypatch, raw, want):
    monkeypatch.setenv(NAME, raw)
    assert envvars.seconds(NAME, 7) == want


@pytest.mark.parametrize("raw", ["soon", "0", "-3", "inf", "nan", "1s"])
def test_anything_else_is_refused_naming_variable_and_value(monkeypatch, raw):
    monkeypatch.setenv(NAME, raw)
    with pytest.raises(ValueError) as e:
        envvars.seconds(NAME, 7)
    msg = str(e.value)
    assert NAME in msg and repr(raw) in msg and "\n" not in msg


@pytest.mark.parametrize("name, read", [
    ("EAGLE4_CONTAINER_TIMEOUT_S", containers.run_timeout_s),
    ("EAGLE4_CONTAINER_SILENCE_S", containers.silence_timeout_s),
    ("EAGLE4_BASE_BUILD_TIMEOUT_S", containers.base_build_timeout_s),
    ("EAGLE4_CUDA_BUILD_LOCK_STALE_S", cuda.build_lock_stale_s),
    ("EAGLE4_CXX_TIMEOUT_S", csim_build.cxx_timeout_s),
])
def test_each_setting_is_read_where_used(monkeypatch, name, read):
    monkeypatch.setenv(name, "42")
    assert read() == 42.0
    monkeypatch.setenv(name, "forever")
    with pytest.raises(ValueError, match=name):
        read()


def test_a_bad_value_does_not_break_the_imports():
    """In a fresh interpreter (reloading the modules here would give other tests' imports stale classes)."""
    env = {**os.environ, "EAGLE4_CONTAINER_TIMEOUT_S": "forever", "EAGLE4_CUDA_BUILD_LOCK_STALE_S": "forever",
           "EAGLE4_CXX_TIMEOUT_S": "forever", "EAGLE4_XRT_TIMEOUT_S": "forever"}
    code = "import eagle4.containers, eagle4.backends.cuda, eagle4.backends.csim, eagle4.backends.xrt; print('ok')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


def test_the_xrt_backend_reads_its_timeout_when_made(monkeypatch, tmp_path):
    from eagle4.backends.xrt import XrtBackend

    monkeypatch.setenv("EAGLE4_XRT_TIMEOUT_S", "12")
    assert XrtBackend(xclbin=tmp_path / "k.xclbin").timeout_s == 12.0
    assert XrtBackend(xclbin=tmp_path / "k.xclbin", timeout_s=3).timeout_s == 3.0
    monkeypatch.setenv("EAGLE4_XRT_TIMEOUT_S", "forever")
    with pytest.raises(ValueError, match="EAGLE4_XRT_TIMEOUT_S"):
        XrtBackend(xclbin=tmp_path / "k.xclbin")


def test_the_build_lock_wait_reads_its_bound_when_called(monkeypatch, tmp_path):
    (tmp_path / "lock").write_text("")
    monkeypatch.setenv("EAGLE4_CUDA_BUILD_LOCK_STALE_S", "0.5")
    now = (tmp_path / "lock").stat().st_mtime + 10.0
    with pytest.raises(cuda.BuildLockError, match="EAGLE4_CUDA_BUILD_LOCK_STALE_S"):
        cuda.wait_for_build_lock(tmp_path, clock=lambda: now, sleep=lambda s: None)

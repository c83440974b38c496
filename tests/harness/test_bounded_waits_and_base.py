"""Bounded waits outside HTTP (issue 10.9) and the base image's apt sources on both layouts (10.13).

* a child process that runs past its limit is stopped with its whole process group;
* signoff's pytest step has a configurable timeout; container log following stops a container that
  runs too long or goes silent, saying which limit;
* docker/base/build_base.sh finds the mirror on deb822-only, one-line-only and mixed hosts and always
  says why it stops; tox passes DEBIAN_MIRROR through; `eagle4 replay`'s base build names the reason.
"""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eagle4 import containers
from eagle4.proc import run_bounded

REPO = Path(__file__).resolve().parents[2]
BUILD_BASE = REPO / "docker" / "base" / "build_base.sh"

DEB822 = """Types: deb
URIs: http://deb822.example/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://deb822.example/debian-security
Suites: bookworm-security
Components: main
"""
ONE_LINE = """# comment
deb [arch=amd64 signed-by=/usr/share/keyrings/debian.gpg] http://oneline.example/debian bookworm main
deb http://oneline.example/debian-security bookworm-security main
"""


# -- bounded child processes ------------------------------------------------------------------------------
def test_run_bounded_stops_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    script = f"import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); " \
             f"open({str(pidfile)!r}, 'w').write(str(p.pid)); print('started', flush=True); time.sleep(60)"
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as e:
        run_bounded([sys.executable, "-c", script], 3, grace_s=2)
    assert time.monotonic() - t0 < 20
    assert "started" in (e.value.output or "")
    grandchild = int(pidfile.read_text())
    for _ in range(50):  # the grandchild (an xdist worker, a g++) is gone too
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"grandchild {grandchild} survived the timeout")


def test_run_bounded_returns_like_subprocess_run():
    res = run_bounded([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"], 30)
    assert (res.returncode, res.stdout.strip(), res.stderr.strip()) == (3, "out", "err")


def test_signoff_parity_step_has_a_timeout(monkeypatch, tmp_path):
    from argparse import Namespace

    from eagle4.cli import build_parser, signoff

    args = build_parser().parse_args(["signoff"])
    assert args.parity_timeout == signoff.PARITY_TIMEOUT_S >= 3600  # a slow CI still meets the default

    def slow(cmd, timeout_s, **kw):
        raise subprocess.TimeoutExpired(cmd, timeout_s, output="....\n")
    monkeypatch.setattr(signoff, "run_bounded", slow)
    res = signoff._parity(Namespace(hw="cpu", workers=0, parity_timeout=7.0), tmp_path)
    assert res.status == "FAILED"
    assert "ran past --parity-timeout 7 s" in res.notes[0]


# -- container log following ------------------------------------------------------------------------------
class _FakeContainer:
    """Prints ``lines`` (one per ``every`` s) and exits after ``runtime`` s with code 0."""

    name = "fake"

    def __init__(self, lines, every, runtime):
        self.lines, self.every, self.runtime = lines, every, runtime
        self.t0 = time.monotonic()
        self.killed = False

    def logs(self, stream, follow):
        for ln in self.lines:
            time.sleep(self.every)
            if self.killed:
                return
            yield ln.encode()

    def wait(self, timeout):
        from requests.exceptions import ReadTimeout

        left = self.runtime - (time.monotonic() - self.t0)
        if self.killed:
            return {"StatusCode": 137}
        if left > timeout:
            time.sleep(timeout)
            raise ReadTimeout("read timed out")
        time.sleep(max(left, 0))
        return {"StatusCode": 0}

    def kill(self):
        self.killed = True


class _Out:
    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_follow_streams_the_log_and_returns_the_exit_code():
    out = _Out()
    rc = containers.follow(_FakeContainer(["a\n", "b\n"], 0.05, 0.3), timeout_s=30, silence_s=30, out=out, poll_s=0.1)
    assert rc == 0 and out.text == "a\nb\n"


def test_follow_kills_a_container_that_runs_too_long():
    c = _FakeContainer(["x\n"] * 1000, 0.05, 1000)
    with pytest.raises(containers.ContainerError, match=r"ran past 0.5 s \(EAGLE4_CONTAINER_TIMEOUT_S\)"):
        containers.follow(c, timeout_s=0.5, silence_s=30, out=_Out(), poll_s=0.1)
    assert c.killed


def test_follow_kills_a_silent_container():
    c = _FakeContainer([], 0, 1000)
    with pytest.raises(containers.ContainerError, match=r"printed nothing for 0.5 s \(EAGLE4_CONTAINER_SILENCE_S\)"):
        containers.follow(c, timeout_s=60, silence_s=0.5, out=_Out(), poll_s=0.1)
    assert c.killed


def test_container_defaults_are_bounded_and_generous(monkeypatch):
    for name in ("EAGLE4_CONTAINER_TIMEOUT_S", "EAGLE4_CONTAINER_SILENCE_S", "EAGLE4_BASE_BUILD_TIMEOUT_S"):
        monkeypatch.delenv(name, raising=False)
    assert 3600 <= containers.run_timeout_s() < float("inf")
    assert 600 <= containers.silence_timeout_s() < containers.run_timeout_s()
    assert 600 <= containers.base_build_timeout_s() < float("inf")


# -- the base image's mirror on both apt layouts ----------------------------------------------------------
def _layout(root: Path, deb822: str | None = None, one_line: str | None = None) -> Path:
    (root / "sources.list.d").mkdir(parents=True)
    if deb822 is not None:
        (root / "sources.list.d" / "debian.sources").write_text(deb822)
    if one_line is not None:
        (root / "sources.list").write_text(one_line)
    return root


def _mirror(apt_etc: Path, **env) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "DEBIAN_MIRROR"}
    e.update(APT_ETC=str(apt_etc), **env)
    return subprocess.run(["bash", str(BUILD_BASE), "--print-mirror"], capture_output=True, text=True, env=e,
                          timeout=60)


@pytest.mark.parametrize("deb822,one_line,want", [
    (DEB822, None, "http://deb822.example/debian"),  # current Debian: deb822 only, no sources.list
    (None, ONE_LINE, "http://oneline.example/debian"),  # older hosts: one-line only, [options] skipped
    (DEB822, ONE_LINE, "http://deb822.example/debian"),
])
def test_build_base_finds_the_mirror_on_both_layouts(tmp_path, deb822, one_line, want):
    res = _mirror(_layout(tmp_path / "apt", deb822, one_line))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == want


def test_build_base_without_sources_says_why(tmp_path):
    res = _mirror(_layout(tmp_path / "apt"))
    assert res.returncode == 2
    assert "no Debian mirror found" in res.stderr and "set DEBIAN_MIRROR" in res.stderr


def test_debian_mirror_overrides(tmp_path):
    res = _mirror(_layout(tmp_path / "apt"), DEBIAN_MIRROR="http://override.example/debian")
    assert res.stdout.strip() == "http://override.example/debian"


def test_build_base_never_fails_silently():
    text = BUILD_BASE.read_text()
    assert "trap '" in text and " ERR" in text  # every set -e exit prints the failing command


def test_tox_passes_the_mirror_override_through():
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(REPO / "tox.ini")
    passenv = ini["testenv"]["passenv"].split()
    assert "DEBIAN_MIRROR" in passenv


@pytest.mark.parametrize("deb822,one_line", [(DEB822, None), (None, ONE_LINE)])
def test_image_apt_sources_read_both_layouts(tmp_path, monkeypatch, deb822, one_line):
    monkeypatch.delenv("EAGLE4_APT_SOURCES", raising=False)
    monkeypatch.setenv("APT_ETC", str(_layout(tmp_path / "apt", deb822, one_line)))
    _, text = containers.apt_sources_text()
    assert "bookworm-security" in text and "URIs: http://" in text and "Types: deb" in text
    if one_line:
        assert "Signed-By: /usr/share/keyrings/debian.gpg" in text


def test_base_build_failure_names_a_reason(tmp_path, monkeypatch):
    class _NoImages:
        class images:  # noqa: N801 - mimics docker's client.images
            @staticmethod
            def get(tag):
                raise LookupError(tag)
    monkeypatch.setattr(containers, "client", lambda: _NoImages)
    monkeypatch.setattr(containers, "run_bounded",
                        lambda cmd, t: subprocess.CompletedProcess(cmd, 2, "", ""))
    with pytest.raises(containers.ContainerError, match=r"failed with exit 2:\n.*printed nothing"):
        containers.ensure_base()

"""docker/base/build_base.sh verifies the base lock, never rewrites it silently: a rebuild compares its
package list (name=version) with the lock and reports drift; only --update-lock changes the lock
(issue 43: `tox -e replay` rewrote image_id, rootfs_sha256 and built_utc on every rebuild)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD_BASE = REPO / "docker" / "base" / "build_base.sh"

FAKE_DEBOOTSTRAP = """#!/usr/bin/env bash
root="$3"
mkdir -p "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/info" "$root/var/cache/apt/archives" "$root/var/lib/apt/lists"
cat > "$root/var/lib/dpkg/status" <<EOS
Package: bash
Status: install ok installed
Architecture: amd64
Version: ${BASH_VERSION_PIN:-5.2.15-2}

Package: coreutils
Status: install ok installed
Architecture: amd64
Version: 9.1-1

EOS
"""

FAKE_DOCKER = """#!/usr/bin/env bash
case "$1 $2" in
  "image inspect") exit 1 ;;
esac
[ "$1" = import ] && { echo "sha256:$(date +%s%N)"; exit 0; }
exit 1
"""


def _build(tmp_path, lock, *args, **env):
    missing = [tool for tool in ("dpkg-query", "tar", "sha256sum") if shutil.which(tool) is None]
    assert not missing, f"{', '.join(missing)} not installed (needed to run build_base.sh)"
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    for name, text in (("debootstrap", FAKE_DEBOOTSTRAP), ("docker", FAKE_DOCKER)):
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)
    e = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "DEBIAN_MIRROR": "http://x.example/debian",
         "BASE_LOCK": str(lock), **env}
    return subprocess.run(["bash", str(BUILD_BASE), *args], capture_output=True, text=True, env=e, timeout=120)


def test_rebuild_reports_drift_and_keeps_the_lock(tmp_path):
    lock = tmp_path / "base.lock"
    first = _build(tmp_path, lock, "--update-lock")
    assert first.returncode == 0, first.stderr
    assert "package=bash=5.2.15-2" in lock.read_text()
    pinned = lock.read_bytes()
    same = _build(tmp_path, lock)
    assert same.returncode == 0 and "packages match" in same.stderr, same.stderr
    drift = _build(tmp_path, lock, BASH_VERSION_PIN="5.2.15-3")
    assert drift.returncode == 0, drift.stderr
    assert "package drift" in drift.stderr and "-bash=5.2.15-2" in drift.stderr.replace(" ", "") \
        and "+bash=5.2.15-3" in drift.stderr.replace(" ", "")
    assert lock.read_bytes() == pinned  # verified, not rewritten


def test_committed_lock_is_not_rewritten_without_the_flag(tmp_path):
    lock = tmp_path / "base.lock"
    shutil.copy(REPO / "docker" / "base" / "base.lock", lock)
    before = lock.read_bytes()
    res = _build(tmp_path, lock)
    assert res.returncode == 0, res.stderr
    assert lock.read_bytes() == before and "--update-lock" in res.stderr

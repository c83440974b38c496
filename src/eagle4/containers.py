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
import time
from dataclasses import dataclass
from pathlib import Path

from eagle4 import envvars
from eagle4.proc import run_bounded
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


def _one_line_to_deb822(text: str) -> str:
    """``deb [opts] URI suite comp...`` lines (the old sources.list format) as deb822 stanzas."""
    stanzas = []
    for line in text.splitlines():
        f = line.split("#", 1)[0].split()
        if not f or f[0] != "deb":
            continue
        opts, rest = [], f[1:]
        if rest and rest[0].startswith("["):
            end = next(i for i, x in enumerate(rest) if x.endswith("]"))
            opts, rest = " ".join(rest[:end + 1]).strip("[] ").split(), rest[end + 1:]
        if len(rest) < 2:
            continue
        s = ["Types: deb", f"URIs: {rest[0]}", f"Suites: {rest[1]}"]
        if rest[2:]:
            s.append(f"Components: {' '.join(rest[2:])}")
        s += [f"Signed-By: {o.split('=', 1)[1]}" for o in opts if o.startswith("signed-by=")]
        stanzas.append("\n".join(s))
    return "\n\n".join(stanzas) + "\n" if stanzas else ""


def apt_sources_text() -> tuple[Path, str]:
    """The host's Debian apt sources as deb822 text: EAGLE4_APT_SOURCES, else the deb822 file
    (<APT_ETC>/sources.list.d/debian.sources, current Debian's default), else the one-line
    <APT_ETC>/sources.list converted. ContainerError names what is missing."""
    etc = Path(os.environ.get("APT_ETC", "/etc/apt"))
    if os.environ.get("EAGLE4_APT_SOURCES"):
        candidates = [Path(os.environ["EAGLE4_APT_SOURCES"])]
    else:
        candidates = [etc / "sources.list.d" / "debian.sources", etc / "sources.list"]
    for src in candidates:
        if src.is_file():
            text = src.read_text()
            if src.suffix != ".sources":
                text = _one_line_to_deb822(text)
            break
    else:
        raise ContainerError(f"no Debian apt sources at {' or '.join(map(str, candidates))}: set EAGLE4_APT_SOURCES "
                             "to a deb822 .sources file listing bookworm, bookworm-updates and bookworm-security")
    for suite in ("bookworm", "bookworm-security"):
        if suite not in text:
            raise ContainerError(f"{src} does not list the {suite} suite the images are pinned against")
    return src, text


def _stage_apt_sources() -> None:
    """The images use the host's own Debian sources (the mirror this site reaches), copied into the
    build context as deb822 (either format on the host)."""
    _, text = apt_sources_text()
    dest = DOCKER / "apt-sources.sources"
    if not dest.is_file() or dest.read_text() != text:
        atomic.write_text(dest, text)


# debootstrap of a minimal bookworm takes minutes; an hour means a dead mirror, not a slow one.
DEFAULT_BASE_BUILD_TIMEOUT_S = 3600.0


def base_build_timeout_s() -> float:
    return envvars.seconds("EAGLE4_BASE_BUILD_TIMEOUT_S", DEFAULT_BASE_BUILD_TIMEOUT_S)


def ensure_base() -> str:
    c = client()
    try:
        return c.images.get(os.environ.get("EAGLE4_BASE_IMAGE", BASE_TAG)).id
    except Exception:
        pass
    script = DOCKER / "base" / "build_base.sh"
    limit = base_build_timeout_s()
    try:
        out = run_bounded([str(script), BASE_TAG], limit)
    except subprocess.TimeoutExpired as e:
        raise ContainerError(f"building the pinned base ({script}) ran past {limit:g} s "
                             f"(EAGLE4_BASE_BUILD_TIMEOUT_S) and was stopped:\n{(e.stderr or '')[-3000:]}") from None
    if out.returncode != 0:
        why = (out.stderr.strip() or out.stdout.strip())[-3000:] or "it printed nothing"
        raise ContainerError(f"building the pinned base ({script}) failed with exit {out.returncode}:\n{why}")
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


# A replay of the whole artifact pack in cpu-csim takes well under an hour on a 2-core runner; 4 h total
# and 30 min without a line of output leave a slow CI room while never waiting forever.
DEFAULT_RUN_TIMEOUT_S, DEFAULT_SILENCE_TIMEOUT_S = 4 * 3600.0, 1800.0


def run_timeout_s() -> float:
    return envvars.seconds("EAGLE4_CONTAINER_TIMEOUT_S", DEFAULT_RUN_TIMEOUT_S)


def silence_timeout_s() -> float:
    return envvars.seconds("EAGLE4_CONTAINER_SILENCE_S", DEFAULT_SILENCE_TIMEOUT_S)


_POLL_S = 5.0


def follow(container, *, timeout_s: float, silence_s: float, out=None, poll_s: float = _POLL_S) -> int:
    """Stream the container's log to ``out`` until it exits; returns its exit code. A container that runs
    past ``timeout_s`` or prints nothing for ``silence_s`` is killed and ContainerError says which limit."""
    import threading

    from requests.exceptions import ConnectionError as ReqConnectionError
    from requests.exceptions import ReadTimeout

    out = out or sys.stdout
    last = [time.monotonic()]

    def pump():
        try:
            for chunk in container.logs(stream=True, follow=True):
                last[0] = time.monotonic()
                out.write(chunk.decode(errors="replace"))
                out.flush()
        except Exception:  # noqa: BLE001 - the log stream ends when the container is killed; wait() decides
            pass

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    start = time.monotonic()
    while True:
        try:
            result = container.wait(timeout=poll_s)
            break
        except (ReadTimeout, ReqConnectionError):
            now = time.monotonic()
            why = (f"ran past {timeout_s:g} s (EAGLE4_CONTAINER_TIMEOUT_S)" if now - start > timeout_s else
                   f"printed nothing for {silence_s:g} s (EAGLE4_CONTAINER_SILENCE_S)" if now - last[0] > silence_s
                   else None)
            if why:
                try:
                    container.kill()
                except Exception:  # noqa: BLE001 - it may have exited meanwhile; the error below stands
                    pass
                raise ContainerError(f"container {getattr(container, 'name', '?')} {why}; killed") from None
    reader.join(timeout=10)  # the log's tail
    return int(result.get("StatusCode", 1))


def run(image: str, command: list[str], *, gpus: bool | None = None, env: dict | None = None, log=print,
        timeout_s: float | None = None, silence_s: float | None = None) -> int:
    """Run ``command`` in the image with the checkout mounted at /work/repo; returns its exit code.
    Bounded: see :func:`follow` (defaults run_timeout_s() and silence_timeout_s())."""
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
        "HOME": "/tmp",  # the images import the mounted checkout's library themselves (PYTHONPATH in each Dockerfile)
        **(env or {}),
    }
    volumes = {str(REPO): {"bind": MOUNT, "mode": "rw"}}  # test data lives in the checkout (tests/data)
    log(f"running in {built.tag} ({built.image_id[:19]}): {' '.join(command)}")
    container = c.containers.run(built.tag, command, detach=True, network_mode="host", working_dir=MOUNT,
                                 volumes=volumes, environment=environment,
                                 device_requests=device_requests, user=f"{os.getuid()}:{os.getgid()}")
    try:
        return follow(container, timeout_s=run_timeout_s() if timeout_s is None else timeout_s,
                      silence_s=silence_timeout_s() if silence_s is None else silence_s)
    finally:
        try:
            container.remove(force=True)
        except Exception:
            pass

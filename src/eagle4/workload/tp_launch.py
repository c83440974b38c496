"""Start the ranks of a tensor-parallel run and end a failed one with a one-line error naming the rank.

:func:`launch` starts ``nproc`` copies of a command with the environment ``torchrun`` gives its
workers (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT``; NVLink multicast off: ``NCCL_NVLS_ENABLE=0``), so a worker runs the same under
``torchrun`` and here. What ``torchrun`` lacks, and the bench needs, is the culprit: when one rank
dies, the others fail in their next collective and torchrun reports whichever failed first. Here a
worker runs under :func:`rank_main`, which exits with :data:`PEER_FAILED_EXIT` when a collective
failed (another rank's fault) and with 1 on its own error, and :func:`launch` names

* the rank that exited with its own error or a signal (``died``; an NCCL watchdog abort on a
  collective timeout counts as a bystander's);
* else, once ranks have failed in collectives (the process group's timeout,
  ``EAGLE4_TP_TIMEOUT_S``) and ``hang_grace_s`` has passed with others still running, those (``hung``);
* else, past ``timeout_s``, every rank still running.

The remaining ranks are then killed (their process groups), so the whole run ends within
``timeout_s`` (a hang within the collective timeout + ``hang_grace_s``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from eagle4.models.tensor_parallel import PEER_FAILED_EXIT, PeerFailure


class TPRunError(RuntimeError):
    """A rank died, hung or overran: the message is one line naming it."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _last_line(path: Path) -> str:
    try:
        lines = [x.strip() for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


# how a bystander's failure reads where it does not exit through rank_main: NCCL's watchdog aborts the
# process (SIGABRT) when a collective times out
_PEER_TEXT = ("Watchdog caught collective operation timeout", "collective failed:")


def _peer_failed(code: int | None, err: Path) -> bool:
    if code == PEER_FAILED_EXIT:
        return True
    if code in (None, 0):
        return False
    try:
        tail = err.read_text(errors="replace")[-20000:]
    except OSError:
        return False
    return any(t in tail for t in _PEER_TEXT)


def rank_main(fn: Callable[[], int | None]) -> None:
    """Run a worker's body and exit: 0 on success, :data:`PEER_FAILED_EXIT` when a collective failed
    (a bystander of another rank's failure), 1 on this rank's own error; one stderr line either way."""
    import torch.distributed as dist

    rank = os.environ.get("RANK", "0")
    try:
        rc = fn() or 0
    except (PeerFailure, dist.DistError) as e:
        print(f"tp rank {rank}: collective failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
              file=sys.stderr, flush=True)
        os._exit(PEER_FAILED_EXIT)  # no teardown: the process group may hang on a dead peer
    except Exception as e:  # noqa: BLE001 -- every other failure is this rank's own, named by the launcher
        msg = str(e).splitlines()[0] if str(e) else ""
        print(f"tp rank {rank}: {type(e).__name__}: {msg}", file=sys.stderr, flush=True)
        os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(rc))  # skip the process group's teardown, which waits on the other ranks


def launch(cmd: Sequence[str], nproc: int, *, timeout_s: float, env: dict | None = None,
           hang_grace_s: float = 10.0, poll_s: float = 0.05, log_dir: str | Path | None = None) -> list[str]:
    """Run ``cmd`` as ranks ``0..nproc-1``; return each rank's stdout. Raises :class:`TPRunError`."""
    port = _free_port()
    own_dir = None if log_dir is not None else tempfile.TemporaryDirectory(prefix="eagle4-tp-")
    logs = Path(log_dir if log_dir is not None else own_dir.name)
    logs.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen] = []
    files = []
    try:
        for r in range(nproc):
            e = {**os.environ, **(env or {}), "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(nproc),
                 "LOCAL_WORLD_SIZE": str(nproc), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                 "NCCL_NVLS_ENABLE": "0"}
            out, err = open(logs / f"rank{r}.out", "w"), open(logs / f"rank{r}.err", "w")  # noqa: SIM115
            files += [out, err]
            procs.append(subprocess.Popen(list(cmd), env=e, stdout=out, stderr=err, start_new_session=True))
        t0, first_peer = time.monotonic(), None
        while True:
            codes = [p.poll() for p in procs]
            now = time.monotonic() - t0
            peer = [r for r, c in enumerate(codes) if _peer_failed(c, logs / f"rank{r}.err")]
            own = [r for r, c in enumerate(codes) if c not in (None, 0) and r not in peer]
            if own:
                r = own[0]
                how = f"signal {-codes[r]}" if codes[r] < 0 else f"exit {codes[r]}"
                raise TPRunError(f"tp rank {r} died ({how}): {_last_line(logs / f'rank{r}.err') or 'no message'}")
            if all(c == 0 for c in codes):
                return [(logs / f"rank{r}.out").read_text() for r in range(nproc)]
            alive = [r for r, c in enumerate(codes) if c is None]
            if peer and first_peer is None:
                first_peer = now
            if peer and not alive:
                raise TPRunError(f"tp ranks {peer} failed in a collective and none named a cause: "
                                 f"{_last_line(logs / f'rank{peer[0]}.err')}")
            if peer and now - first_peer > hang_grace_s:
                raise TPRunError(f"tp rank {', '.join(map(str, alive))} hung: rank {', '.join(map(str, peer))} "
                                 f"timed out waiting for it in a collective")
            if now > timeout_s:
                raise TPRunError(f"tp rank {', '.join(map(str, alive))} did not finish within {timeout_s:g} s")
            time.sleep(poll_s)
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    p.kill()
        for p in procs:
            p.wait()
        for f in files:
            f.close()
        if own_dir is not None:
            own_dir.cleanup()


__all__ = ["TPRunError", "launch", "rank_main"]

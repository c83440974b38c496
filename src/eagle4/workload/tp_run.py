"""Tensor-parallel runs of a ``load = "dummy"`` contract: the rank workers and the bench.

Workers (one process per rank; ``torchrun`` or :mod:`eagle4.workload.tp_launch` sets the ranks)::

    torchrun --standalone --nproc-per-node 2 -m eagle4.workload.tp_run check --contract contracts/deployment-70b.toml --batch 1
    torchrun --standalone --nproc-per-node 4 -m eagle4.workload.tp_run point --contract contracts/deployment-70b.toml --tp 4 \\
        --point b1 --run-index 0 --result r.json

``check`` runs a fixed generation and saves each rank's committed tokens and kernel outputs (what the
TP equivalence test compares against TP=1); ``point`` is one measured process of the serving bench
(:func:`eagle4.workload.runner.run_serving_once`, rank 0 writes the result). The bench::

    python -m eagle4.workload.tp_run bench --contract contracts/deployment-70b.toml --tp 4 --out reports/...

is the device runner (:func:`eagle4.workload.runner.run_serving`: its files under the prefix ``tp<N>_e2e``,
``--resume``, ``--deadline``) with every (point, run) started as ``tp`` ranks through
:func:`~eagle4.workload.tp_launch.launch` (a dead or hung rank is a one-line error naming it); the
manifest adds ``nvidia-smi topo -m`` and the TP degree. Fewer visible GPUs than ``tp`` is a
one-line error naming the machine kind needed. ``--tp`` overrides the contract's ``[model] tp`` (the
rows then carry that contract's hash).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

KINDS = {1: "nvidia-h200", 2: "nvidia-h200-x2", 4: "nvidia-h200-x4", 8: "nvidia-h200-x8"}


def with_tp(contract, tp: int | None):
    """``contract`` with ``[model] tp = tp`` (validated; the hash follows)."""
    if tp is None or tp == contract.model.tp:
        return contract
    from pydantic import ValidationError

    from eagle4.contract import ContractError, ModelPair

    try:
        m = ModelPair.model_validate({**contract.model.model_dump(), "tp": tp})
    except ValidationError as e:
        msg = e.errors()[0]["msg"].removeprefix("Value error, ")
        raise ContractError(f"{contract.source_path}: model.tp: {msg} (got {tp})") from None
    return contract.model_copy(update={"model": m})


def kind_for(n: int) -> str:
    return next((k for g, k in sorted(KINDS.items()) if g >= n), f"a machine with {n} GPUs")


def require_gpus(n: int, visible: int | None = None) -> None:
    """Fewer visible CUDA devices than ranks: a one-line error naming the machine kind needed."""
    if visible is None:
        import torch

        visible = torch.cuda.device_count()
    if visible < n:
        raise ValueError(f"tp={n} needs {n} GPUs but {visible} {'is' if visible == 1 else 'are'} visible: "
                         f"run it on {kind_for(n)}")


def topology() -> str:
    """``nvidia-smi topo -m`` as printed (the GPU interconnect of the run), or why it is missing."""
    try:
        cp = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return f"unavailable: nvidia-smi topo -m: {e}"
    if cp.returncode:
        return f"unavailable: nvidia-smi topo -m exited {cp.returncode}: {cp.stderr.strip()}"
    return cp.stdout


def _backend(name: str | None, device: str) -> str:
    """The kernel backend of a TP run: ``name``, else cuda on CUDA and ref elsewhere."""
    return name or ("cuda" if device == "cuda" else "ref")


def _rank() -> tuple[int, int]:
    return int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))


def _device(device: str) -> str:
    return f"cuda:{_rank()[1]}" if device == "cuda" else device


def check(contract, *, batch: int, steps: int, seed: int = 0, device: str = "cpu", backend: str = "ref") -> dict:
    """A fixed generation (prompts from ``seed``): per step the committed ``out`` rows and every
    kernel site's output buffers, as CPU tensors."""
    import torch

    from eagle4.models.tensor_parallel import for_contract
    from eagle4.workload.engine import DeviceEngine

    dev = _device(device)
    eng = DeviceEngine(contract, backend, device=dev, tp=for_contract(contract, dev))
    eng.setup(batch)
    V, P = contract.model.target_arch.vocab_size, contract.prompts.prompt_tokens
    prompts = torch.randint(0, V, (batch, P), generator=torch.Generator().manual_seed(seed))
    first = eng.prefill(prompts.to(eng.device), torch.arange(batch, device=eng.device) * 257).cpu()
    rec = {"first": first, "out": [], "kernels": []}
    for _ in range(steps):
        rec["out"].append(eng.step().clone())
        rec["kernels"].append({label: {k: v.detach().cpu().clone() for k, v in bufs.items()
                                       if isinstance(v, torch.Tensor)} for label, bufs in eng._bufs.items()})
    return rec


def _worker(argv) -> int:
    ap = argparse.ArgumentParser(prog="python -m eagle4.workload.tp_run " + argv[0])
    ap.add_argument("--contract", required=True)
    ap.add_argument("--tp", type=int, default=None)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--backend", default=None)
    if argv[0] == "check":
        ap.add_argument("--batch", type=int, default=1)
        ap.add_argument("--steps", type=int, default=3)
        ap.add_argument("--dump", default=None, help="folder: rank<r>.pt per rank")
    else:
        ap.add_argument("--point", required=True)
        ap.add_argument("--run-index", type=int, required=True)
        ap.add_argument("--runs-total", type=int, default=None)
        ap.add_argument("--duration", type=float, default=None)
        ap.add_argument("--commit", default="unknown")
        ap.add_argument("--result", required=True)
    a = ap.parse_args(argv[1:])
    import torch

    from eagle4.contract import load_contract
    from eagle4.models.tensor_parallel import init

    c = with_tp(load_contract(a.contract), a.tp)
    if a.device == "cuda":
        require_gpus(c.model.tp)
    else:
        torch.set_num_threads(1)
    init(c.model.tp, _device(a.device))  # join the group first: every later failure is a rank's
    rank, local = _rank()
    backend = _backend(a.backend, a.device)
    if argv[0] == "check":
        rec = check(c, batch=a.batch, steps=a.steps, device=a.device, backend=backend)
        if a.dump:
            Path(a.dump).mkdir(parents=True, exist_ok=True)
            torch.save(rec, Path(a.dump) / f"rank{rank}.pt")
        line = json.dumps({"rank": rank, "out": [o.tolist() for o in rec["out"]]})  # [committed, trace, ids...]
        sys.stdout.write(line + "\n")  # one write: the ranks share torchrun's stdout
        sys.stdout.flush()
        return 0
    from eagle4.workload.runner import run_serving_once

    res = run_serving_once(c, a.point, a.run_index, backend=backend, device=_device(a.device), duration_s=a.duration,
                   commit=a.commit, core=1 + local, runs_total=a.runs_total)
    res["run"]["tp"] = c.model.tp  # the run row says the degree it was measured at
    if rank == 0:
        from eagle4.report import atomic

        atomic.write_text(a.result, json.dumps(res))
    return 0


def bench(contract_path, out_dir, *, tp=None, points=None, runs=None, duration_s=None, device="cuda",
          backend=None, timeout_s=900.0, resume=False, deadline=None, log=print) -> list[dict]:
    """Every (point, run) of the contract as ``tp`` ranks, through the device runner
    (:func:`eagle4.workload.runner.run_serving`: its files, ``resume`` and ``deadline``) + the topology."""
    from eagle4.contract import load_contract
    from eagle4.workload.runner import run_serving
    from eagle4.workload.tp_launch import launch

    c = with_tp(load_contract(contract_path), tp)
    n = c.model.tp
    if device == "cuda":
        require_gpus(n)
    src = str(Path(__file__).resolve().parents[2])
    env = {"PYTHONPATH": src + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")}

    def ranks(args: list[str], what: str) -> dict:
        with tempfile.TemporaryDirectory() as td:
            res_path = Path(td) / "result.json"
            launch([sys.executable, "-m", "eagle4.workload.tp_run", "point", "--tp", str(n), *args,
                    "--result", str(res_path)], n, timeout_s=timeout_s, env=env)
            return json.loads(res_path.read_text())

    manifest = {"tp": n, "launcher": "eagle4.workload.tp_launch (torchrun's environment; NCCL_NVLS_ENABLE=0)",
             "topology": topology(), "energy_note": "NVML power of rank 0's GPU only"}
    return run_serving(c, out_dir, points=points, runs=runs, duration_s=duration_s,
                       backend=_backend(backend, device), device=device, prefix=f"tp{n}_e2e", timeout_s=timeout_s,
                       resume=resume, deadline=deadline, launch=ranks, manifest_extra=manifest, log=log)["stats"]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("check", "point"):
        from eagle4.workload.tp_launch import rank_main

        rank_main(lambda: _worker(argv))  # exits
    ap = argparse.ArgumentParser(prog="python -m eagle4.workload.tp_run bench")
    ap.add_argument("mode", choices=["bench"])
    ap.add_argument("--contract", required=True)
    ap.add_argument("--tp", type=int, default=None, help="override [model] tp")
    ap.add_argument("--out", default="reports")
    ap.add_argument("--points", default=None, help="comma-separated (default: all)")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--duration", type=float, default=None)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--backend", default=None)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per (point, run) before its ranks are killed")
    ap.add_argument("--resume", action="store_true", help="keep the rows already in --out (same contract and commit)")
    ap.add_argument("--deadline", type=float, default=None, help="Unix time: start no process expected to end after it")
    a = ap.parse_args(argv)
    from eagle4.workload.tp_launch import TPRunError

    try:
        stats = bench(a.contract, a.out, tp=a.tp, points=a.points.split(",") if a.points else None, runs=a.runs,
                      duration_s=a.duration, device=a.device, backend=a.backend, timeout_s=a.timeout,
                      resume=a.resume, deadline=a.deadline)
    except (ValueError, TPRunError) as e:
        print(f"tp_run: {e}", file=sys.stderr)
        return 2
    return 0 if all(s["status"] == "VALID" for s in stats) else 1


if __name__ == "__main__":
    sys.exit(main())

"""End-to-end speculative decoding workload: the engine, the contract runner, HTTP client/server."""

from __future__ import annotations


def run_contract(contract, backend="ref", out_dir="reports", **kw):
    """Run every operating point of ``contract`` on the engine; see :mod:`eagle4.workload.runner`."""
    from eagle4.workload.runner import run_contract as _run

    return _run(contract, backend, out_dir, **kw)


__all__ = ["run_contract"]

"""A client wheel that cannot be fetched fails the interop tests, naming it; it never skips."""

from __future__ import annotations

import pytest

from . import clients

pytestmark = [pytest.mark.interop, pytest.mark.cpu]


def test_unfetchable_wheel_fails_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(clients, "CACHE", tmp_path)
    monkeypatch.setitem(clients.CLIENTS, "vllm", ("vllm", "0.0.0.dev0", ("vllm/benchmarks/serve.py",)))
    with pytest.raises(pytest.fail.Exception, match=r"could not fetch the vllm==0\.0\.0\.dev0 wheel"):
        clients.install("vllm")

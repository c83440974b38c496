"""Fixtures shared by the suites (the plugins are registered by the root conftest.py)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _torch_threads():
    """Kernel cases are many small calls: one torch thread per process is fastest and keeps xdist
    workers from oversubscribing the cores (EAGLE4_TORCH_THREADS overrides). A suite setting, so it
    lives here, not in a plugin."""
    import torch

    torch.set_num_threads(int(os.environ.get("EAGLE4_TORCH_THREADS", "1")))


@pytest.fixture(scope="session")
def csim_backend():
    """The C-simulation library, built once (cached by source hash); FAILS when g++ or hls4ml is missing."""
    from eagle4.backends import csim_build
    from eagle4.backends.csim import CsimBackend

    missing = csim_build.tools_missing()
    if missing:
        pytest.fail(f"the C-simulation needs {missing}: install g++ and `pip install hls4ml`", pytrace=False)
    b = CsimBackend()
    b.build()
    return b


@pytest.fixture
def harness_pytester(pytester, monkeypatch):
    """pytester set up as a project using the harness's plugins (this checkout's eagle4 and plugins)."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    monkeypatch.setenv("PYTHONPATH", f"{repo / 'src'}:{repo}")  # not an installed eagle4
    # the child's temporary files (a --keep-scratch copy of reports/ included) stay in this test's folder
    (pytester.path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(pytester.path / "tmp"))
    pytester.makeini("[pytest]\naddopts = --strict-markers\nmarkers =\n    parity: p\n    cuda: c\n    fpga: f\n"
                     "    csim: s\n    docker: d\n")
    pytester.makeconftest('pytest_plugins = ["plugins.hardware", "plugins.parity", "plugins.artifacts"]\n')
    return pytester

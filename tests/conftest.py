"""Fixtures shared by the suites (the plugins are registered by the root conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def csim_backend():
    """The C-simulation library, built once (cached by source hash); FAILS when g++ or hls4ml is missing."""
    from eagle4.backends import csim
    from eagle4.backends.csim import CsimBackend

    missing = csim.tools_missing()
    if missing:
        pytest.fail(f"the C-simulation needs {missing}: install g++ and `pip install hls4ml`", pytrace=False)
    b = CsimBackend()
    b.build()
    return b

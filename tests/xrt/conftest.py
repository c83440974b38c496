"""Fixtures of the board-backend tests: the pyxrt test double (tests/xrt_double) on sys.path, and its xclbin."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

DOUBLE_DIR = Path(__file__).resolve().parents[1] / "xrt_double"


@pytest.fixture
def pyxrt_double(monkeypatch):
    """The test double imported as ``pyxrt`` for this test only (removed from sys.modules afterwards)."""
    monkeypatch.syspath_prepend(str(DOUBLE_DIR))
    monkeypatch.delitem(sys.modules, "pyxrt", raising=False)
    import pyxrt

    assert pyxrt.EAGLE4_TEST_DOUBLE
    pyxrt.hang(None)
    yield pyxrt
    pyxrt.hang(None)
    sys.modules.pop("pyxrt", None)


@pytest.fixture(scope="session")
def double_xclbin(tmp_path_factory) -> Path:
    """The double's xclbin of the current entry points (metadata only; linking needs no double import)."""
    sys.path.insert(0, str(DOUBLE_DIR))
    try:
        import pyxrt

        return pyxrt.link(tmp_path_factory.mktemp("xclbin") / "eagle4_double.xclbin")
    finally:
        sys.path.remove(str(DOUBLE_DIR))
        sys.modules.pop("pyxrt", None)


@pytest.fixture
def xrt_backend(pyxrt_double, double_xclbin):
    from eagle4.backends.xrt import XrtBackend

    b = XrtBackend(xclbin=double_xclbin, timeout_s=2)
    b.open()
    return b

"""Moved to :mod:`eagle4.backends.fused_csim` (driving the fused designs of the one C-sim library is
a backend's job; the budget and the xrt backend both use it). This name is that module, private names
included, for existing callers."""

import sys

from eagle4.backends import fused_csim as _moved

sys.modules[__name__] = _moved

"""Moved to :mod:`eagle4.budget.trace` (the byte and budget accounting is its only reader, and the
budget no longer imports the workload package). This name is that module, private names included,
for existing callers."""

import sys

from eagle4.budget import trace as _moved

sys.modules[__name__] = _moved

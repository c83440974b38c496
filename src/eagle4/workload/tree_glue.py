"""Moved to :mod:`eagle4.kernels.tree_glue` (the host glue sits beside the kernels it chains, below
the cases and the workload that both use it); this name stays for existing callers."""

from eagle4.kernels.tree_glue import *  # noqa: F403
from eagle4.kernels.tree_glue import __all__  # noqa: F401

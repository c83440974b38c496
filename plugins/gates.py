"""Options of the gate suite (``tests/gates``): which contract, which engine results, which stage.

``pytest tests/gates --contract their.toml --results DIR [--stage micro|full]`` judges an engine
contract (``[engine]``) on the result files, logs and stage dumps under DIR; without ``--results``
the FPGA contract's gates read the artifact pack (``--reports-dir``). The ledger lives in the
reports folder (``--reports-dir``, default ``reports/``).
"""

from __future__ import annotations

import os


def pytest_addoption(parser):
    group = parser.getgroup("eagle4 gates")
    group.addoption("--contract", default=os.environ.get("EAGLE4_CONTRACT"),
                    help="contract whose [[gates]] tests/gates evaluates (default contracts/default.toml, "
                         "or $EAGLE4_CONTRACT)")
    group.addoption("--results", default=None,
                    help="engine contracts: the folder of engine benchmark results, logs and stage dumps")
    group.addoption("--stage", default=None, choices=("micro", "full"),
                    help="evaluate the gates of one stage (under 'full', micro gates stand on the ledger)")

"""Sign-off gates: `pytest tests/gates` (hw=cpu: byte gates from C-sim counters),
`pytest tests/gates --hw=fpga` (sign-off: measured FPGA numbers required) and
`pytest tests/gates --contract their.toml --results DIR` (an engine contract judged on the results,
logs and stage dumps a GPU engine wrote; options in plugins/gates.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BOARD_MISSING = "__board_missing__"  # key of gate_results when --hw=fpga has no usable board


def contract_path(config) -> Path:
    try:
        c = config.getoption("--contract")
    except ValueError:  # the gates plugin is not loaded
        c = None
    return Path(c) if c else REPO / "contracts" / "default.toml"


def _option(config, name):
    try:
        return config.getoption(name)
    except ValueError:
        return None


def gate_mode(config) -> str:
    try:
        kinds = {k.strip() for k in str(config.getoption("--hw")).split(",")}
    except ValueError:  # the hardware plugin is not loaded
        kinds = {"cpu"}
    return "fpga" if "fpga" in kinds else ("cuda" if "cuda" in kinds else "cpu")


def _reports_dir(config) -> Path:
    d = _option(config, "--reports-dir")
    return Path(d) if d else REPO / "reports"


def _fresh(reports: Path, sha: str) -> bool:
    import csv

    p = reports / "bytes_per_token.csv"
    if not p.is_file() or not (reports / "budget_sheet.csv").is_file() or not (reports / "hw_counters.csv").is_file():
        return False
    with open(p, newline="") as f:
        rows = list(csv.DictReader(f))
    return bool(rows) and all(r.get("contract_sha256") == sha for r in rows)


def _load(config):
    from eagle4.contract import load_contract

    try:
        return load_contract(contract_path(config))
    except ValueError as e:  # a malformed contract: its one line, not a traceback
        raise pytest.UsageError(str(e)) from None


def pytest_generate_tests(metafunc):
    """One test per [[gates]] entry of the contract given with --contract."""
    if "gate_name" not in metafunc.fixturenames:
        return
    params = []
    for g in _load(metafunc.config).gates:
        marks = [pytest.mark.gate]
        if "cpu" not in g.hw and "fpga" in g.hw:
            marks.append(pytest.mark.fpga)
        elif "cpu" not in g.hw and "cuda" in g.hw:
            marks.append(pytest.mark.cuda)
        params.append(pytest.param(g.name, marks=marks, id=g.name))
    metafunc.parametrize("gate_name", params)


def pytest_collection_modifyitems(config, items):
    """An engine contract has no FPGA design: only its own [[gates]] (test_signoff_gates) apply here; the
    FPGA design tests are deselected and counted in the summary, never silently dropped."""
    here = Path(__file__).parent
    if not any(Path(str(i.fspath)).parent == here for i in items) or _load(config).kind != "engine":
        return
    keep = [i for i in items if Path(str(i.fspath)).parent != here or "gate_name" in getattr(i, "fixturenames", ())]
    drop = [i for i in items if i not in keep]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
        config.stash[_DESELECTED] = sorted({Path(str(i.fspath)).name for i in drop})


@pytest.fixture(scope="session")
def contract_file(pytestconfig) -> Path:
    """The contract the gate suite judges (--contract, $EAGLE4_CONTRACT, else contracts/default.toml)."""
    return contract_path(pytestconfig)


@pytest.fixture(scope="session")
def gate_results(pytestconfig):
    """Every gate of the contract evaluated once and recorded in the ledger. FPGA contracts: the
    artifacts are regenerated from C-sim counters when absent or produced under another contract
    (hw=cpu only: sign-off never recomputes). Engine contracts: read from --results."""
    from eagle4.gates import evaluate_all

    contract = _load(pytestconfig)
    mode = gate_mode(pytestconfig)
    reports = _reports_dir(pytestconfig)
    results = _option(pytestconfig, "--results")
    engine = contract.kind == "engine"
    if not engine and results:
        raise pytest.UsageError(f"--results is for engine contracts ([engine]); {contract_path(pytestconfig)} has none")
    if not engine and mode == "cpu" and not _fresh(reports, contract.sha256):
        from eagle4.budget import run_budget

        run_budget(contract, reports)
    if not engine and mode == "fpga":  # sign-off: the workload on the board first, or every gate fails naming why
        from eagle4.backends.xrt import board_missing, resolve_xclbin

        xclbin = resolve_xclbin(None, contract)
        why = board_missing(xclbin)
        if why:
            msg = f"--hw=fpga: the FPGA board is not usable: {why}"
            pytestconfig.stash[_KEY] = dict(mode=mode, refused=msg)  # the summary still ends with a verdict
            return {BOARD_MISSING: msg}
        from eagle4.workload.board import run_board_signoff

        run_board_signoff(contract, reports, xclbin=xclbin)
    try:
        res = evaluate_all(contract, reports, hw=mode, record_ledger=True, results_dir=results,
                           stage=_option(pytestconfig, "--stage"))
    except ValueError as e:  # a malformed result file, log or dump: its one line naming file and field
        pytestconfig.stash[_KEY] = dict(mode=mode, refused=str(e))
        pytest.fail(str(e), pytrace=False)
    pytestconfig.stash[_KEY] = dict(mode=mode, sha=contract.sha256, results=res, results_dir=results if engine else None)
    return {r.name: r for r in res}


_KEY = pytest.StashKey[dict]()
_DESELECTED = pytest.StashKey[list]()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    dropped = config.stash.get(_DESELECTED, None)
    if dropped:
        terminalreporter.write_line(f"eagle4: engine contract: deselected the FPGA design tests of {dropped}")
    got = config.stash.get(_KEY, None)
    if got and got.get("refused"):  # nothing was evaluated: say so, and that this cannot sign off
        terminalreporter.write_sep("=", "EAGLE4 gate summary")
        terminalreporter.write_line("VERDICT: NOT SIGNED OFF")
        terminalreporter.write_line(f"* no gate evaluated: {got['refused']}")
    elif got and got.get("results"):
        from eagle4.gates import summary

        terminalreporter.write_sep("=", "EAGLE4 gate summary")
        text = summary(got["results"], contract_sha256=got["sha"], hw=got["mode"], results_dir=got["results_dir"])
        for line in text.splitlines():
            terminalreporter.write_line(line)

"""`eagle4 signoff --hw=fpga`: fails fast naming the missing piece; on the pyxrt test double it runs end to
end, every gate is evaluated, and no row claims to be a board measurement."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOUBLE = REPO / "tests" / "xrt_double"


def _env(with_double: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("EAGLE4_XCLBIN", "PYTHONPATH")}
    paths = [str(REPO / "src"), str(REPO)] + ([str(DOUBLE)] if with_double else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _signoff(tmp_path, *args, with_double: bool, timeout=1800):
    return subprocess.run([sys.executable, "-m", "eagle4.cli", "signoff", "--hw=fpga", "--reports",
                           str(tmp_path / "reports"), *args], capture_output=True, text=True, cwd=REPO,
                          env=_env(with_double), timeout=timeout)


def test_without_pyxrt_signoff_fails_fast_naming_it(tmp_path):
    out = _signoff(tmp_path, with_double=False, timeout=300)
    assert out.returncode == 2, out.stdout + out.stderr
    text = " ".join(out.stdout.split())
    assert "pyxrt" in text and "setup.sh" in text
    assert "── parity" not in out.stdout and "workload:" not in out.stdout  # nothing else ran
    summary = (tmp_path / "reports" / "signoff_summary.md").read_text()
    assert "**VERDICT: NOT SIGNED OFF**" in summary and "pyxrt" in summary


def test_without_xclbin_or_device_signoff_fails_fast_naming_it(tmp_path):
    out = _signoff(tmp_path, with_double=True, timeout=300)
    assert out.returncode == 2 and "no xclbin" in " ".join(out.stdout.split())
    out = _signoff(tmp_path, "--xclbin", str(tmp_path / "missing.xclbin"), with_double=True, timeout=300)
    assert out.returncode == 2 and "does not exist" in " ".join(out.stdout.split())


def _small_contract(tmp_path: Path) -> Path:
    """The default contract at one operating point, short generations, absolute paths (a tmp folder)."""
    text = (REPO / "contracts" / "default.toml").read_text()
    for rel in ("models/default/target", "models/default/draft", "data/prompts/default.jsonl"):
        text = text.replace(f'"{rel}"', f'"{REPO / rel}"')
    text = re.sub(r'\[\[operating_points\]\]\nname = "b(8|32|128)"\nbatch = \d+\n\n', "", text)
    text = re.sub(r"(?m)^warmup = 2 ", "warmup = 0 ", text)
    text = text.replace("min_duration_s = 3.0", "min_duration_s = 0.0").replace("output_tokens = 64", "output_tokens = 16")
    p = tmp_path / "fpga_ci.toml"
    p.write_text(text)
    return p


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_signoff_runs_end_to_end_on_the_double_and_evaluates_every_gate(tmp_path):
    sys.path.insert(0, str(DOUBLE))
    try:
        import pyxrt

        xclbin = pyxrt.link(tmp_path / "double.xclbin")
    finally:
        sys.path.remove(str(DOUBLE))
        sys.modules.pop("pyxrt", None)
    contract = _small_contract(tmp_path)
    out = _signoff(tmp_path, "--contract", str(contract), "--xclbin", str(xclbin), "--bench-points", "smoke",
                   "--workers", "0", with_double=True)
    assert out.returncode == 1, out.stdout[-4000:] + out.stderr[-4000:]  # NOT SIGNED OFF (docs/cli.md)
    rep = tmp_path / "reports"
    flat = " ".join(out.stdout.split())
    for step in ("workload", "budget", "gates"):
        assert re.search(rf"│ {step} +│ OK", out.stdout), f"step {step} did not run OK:\n{out.stdout[-3000:]}"
    # every gate of the contract reached its evaluation; none passed on numbers from the double
    from eagle4.gates import load_gates

    for g in load_gates(contract):
        assert g.name in flat, g.name
    ledger = [r for r in _rows(rep / "gate_ledger.csv") if r["hw"] == "fpga"]
    assert ledger and all(r["status"] != "PASS" for r in ledger)
    assert "VERDICT: NOT SIGNED OFF" in flat
    # the rows: labelled double, never measured
    for name in ("e2e_runs.csv", "e2e_raw.csv", "acceptance_lengths.csv", "throughput.csv", "fpga_kernel_times_raw.csv"):
        provs = {r["provenance"] for r in _rows(rep / name)}
        assert provs == {"double"}, (name, provs)
    runs = _rows(rep / "e2e_runs.csv")
    assert len(runs) >= 5 and {r["backend"] for r in runs} == {"xrt"}
    times = _rows(rep / "fpga_kernel_times.csv")
    assert times and all(int(r["n_runs"]) >= 5 and r["cov"] and r["correct"] == "true" for r in times)
    assert all(int(r["bytes_read"]) > 0 for r in times)  # bytes from the counters block
    assert {r["run"] for r in _rows(rep / "throughput.csv")} >= {"spec"}
    manifest = (rep / "env_manifest.txt").read_text()
    for key in ("fpga_board", "fpga_shell", "fpga_xrt_version", "fpga_xclbin_sha256", "fpga_clock_mhz"):
        assert f"{key}: " in manifest, key
    # the parity step ran the xrt backend (over the double) on the whole catalog
    matrix = json.loads((rep / "p0_parity_matrix.json").read_text())
    xrt = [r["backends"]["xrt"]["status"] for r in matrix["rows"] if "xrt" in r["backends"]]
    assert xrt and "fail" not in xrt

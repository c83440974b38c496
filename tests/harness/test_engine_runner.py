"""run_contract: CSV rows (one per request-run) with the contract hash, provenance, device and
commit; markdown summary rendered from them; the CLI subcommands."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eagle4.contract import load_contract
from eagle4.workload import run_contract
from eagle4.workload.runner import RAW_FIELDS, read_csv

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.cpu


def small_contract(tmp_path: Path, output_tokens: int = 12):
    """The default contract with absolute model paths and a short output length."""
    (tmp_path / "pyproject.toml").write_text("")
    shutil.copytree(ROOT / "data" / "prompts", tmp_path / "data" / "prompts")
    text = (ROOT / "contracts" / "default.toml").read_text()
    text = text.replace('"models/default/target"', f'"{ROOT}/models/default/target"')
    text = text.replace('"models/default/draft"', f'"{ROOT}/models/default/draft"')
    text = re.sub(r"^output_tokens = \d+", f"output_tokens = {output_tokens}", text, count=1, flags=re.M)
    text = text.replace("min_duration_s = 3.0", "min_duration_s = 0.0")  # one generation per run: fast tests
    (tmp_path / "contracts").mkdir()
    p = tmp_path / "contracts" / "small.toml"
    p.write_text(text)
    return load_contract(p)


def test_run_contract_in_process(tmp_path):
    import torch

    torch.set_num_threads(1)
    c = small_contract(tmp_path)
    res = run_contract(c, "ref", tmp_path / "out", points=["b1", "b8"], runs=5, isolate=False, log=lambda *_: None)
    raw = read_csv(res["paths"]["raw"])
    assert len(raw) == 5 * 1 + 5 * 8
    assert list(raw[0]) == RAW_FIELDS
    for r in raw:
        assert r["contract_sha256"] == c.sha256
        assert r["provenance"] == "measured" and r["device"] and r["commit"]
        assert int(r["output_tokens"]) == 12
        assert len(r["itl_s"].split(";")) == int(r["verify_steps"])  # one ITL per streamed chunk (verify step)
        assert float(r["acceptance_length"]) >= 1.0
        assert float(r["tpot_s"]) == pytest.approx((float(r["e2e_s"]) - float(r["ttft_s"])) / 11, rel=1e-6)
    md = res["paths"]["summary"].read_text()
    assert c.sha256 in md and "| b8 | 8 | 5 |" in md and "Time share" in md
    acc = read_csv(res["paths"]["accepts"])
    assert acc and all(int(r["tokens_committed"]) == int(r["accept_length"]) + 1 for r in acc)
    assert all(0 <= int(r["accept_length"]) <= c.decode.tree_depth for r in acc)
    prof = read_csv(res["paths"]["profile"])
    assert {r["region"] for r in prof} >= {"K6_reject_sample", "target_verify"}


def test_acceptance_is_the_runs_seed_not_how_many_iterations_the_minimum_duration_needed(tmp_path):
    """A run repeats its generation (seed, seed + 7919, ...) until the minimum duration is covered, so a faster
    machine runs more iterations; its acceptance rows and mean are still the first iteration's, as on a slower one
    (they had come from the last iteration: republishing the pack on one machine changed them)."""
    import torch

    from eagle4.workload.runner import make_engine, run_point_once

    torch.set_num_threads(1)
    c = small_contract(tmp_path)
    eng = make_engine(c, "ref", "cpu")

    class Faster:  # the engine, its first `n` generations reported as taking no time (so more iterations follow)
        def __init__(self, n):
            self.n = n

        def __getattr__(self, name):
            return getattr(eng, name)

        def generate(self, *a, **k):
            res = eng.generate(*a, **k)
            if self.n > 0:
                self.n -= 1
                for r in res:
                    r.token_times = [0.0] * len(r.token_times)
            return res

    one = run_point_once(c, "b8", 4, engine=Faster(0), warmup=0, min_duration_s=1e-9)
    three = run_point_once(c, "b8", 4, engine=Faster(2), warmup=0, min_duration_s=1e-9)
    assert (one["run"]["iterations"], three["run"]["iterations"]) == (1, 3)
    per_iteration = [[r["acceptance_length"] for r in three["rows"] if r["iteration"] == k] for k in range(3)]
    assert per_iteration[0] != per_iteration[2]  # the seeds' acceptance differs: the check below can tell
    assert three["accepts"] == one["accepts"]
    assert three["run"]["mean_acceptance_length"] == one["run"]["mean_acceptance_length"]


@pytest.mark.slow
def test_run_contract_separate_processes(tmp_path):
    c = small_contract(tmp_path, output_tokens=8)
    res = run_contract(c, "ref", tmp_path / "out", points=["b1"], runs=5, isolate=True, threads=1,
                       log=lambda *_: None)
    runs = read_csv(res["paths"]["runs"])
    assert [int(r["run_index"]) for r in runs] == [0, 1, 2, 3, 4]


def test_cli_contract_render(tmp_path):
    out = tmp_path / "benchmark_contract.md"
    cp = subprocess.run([sys.executable, "-m", "eagle4.cli.workload", "contract", "--contract",
                         str(ROOT / "contracts" / "default.toml"), "--out", str(out)],
                        capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert load_contract(ROOT / "contracts" / "default.toml").sha256 in out.read_text()


def test_cli_bad_contract_names_field(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text((ROOT / "contracts" / "default.toml").read_text().replace("runs = 5", "runs = 2"))
    cp = subprocess.run([sys.executable, "-m", "eagle4.cli.workload", "contract", "--contract", str(p),
                         "--out", str(tmp_path / "x.md")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert cp.returncode == 2 and "runs.runs" in cp.stderr


def test_min_duration_repeats_the_measured_generation(tmp_path):
    import torch

    torch.set_num_threads(1)
    c = small_contract(tmp_path, output_tokens=6)
    c = c.model_copy(update={"runs": c.runs.model_copy(update={"min_duration_s": 0.5})})
    res = run_contract(c, "ref", tmp_path / "out", points=["b1"], runs=5, isolate=False, log=lambda *_: None)
    runs = read_csv(res["paths"]["runs"])
    assert all(float(r["wall_s"]) >= 0.5 for r in runs)
    assert any(int(r["iterations"]) > 1 for r in runs)
    raw = read_csv(res["paths"]["raw"])
    assert len(raw) == sum(int(r["iterations"]) for r in runs)  # one row per request per iteration


def test_run_mode_is_a_parameter_and_a_phased_profile_is_refused(tmp_path):
    """One runner: the run mode defaults to the contract's batch_profile.mode (static here) and may be
    given; a phased profile belongs to the HTTP client and is refused with the field named."""
    c = small_contract(tmp_path)
    with pytest.raises(ValueError, match="batch_profile.mode = 'phases'"):
        run_contract(c, "ref", tmp_path / "out", mode="phases", isolate=False, log=lambda *_: None)
    cp = subprocess.run([sys.executable, "-m", "eagle4.workload.runner", "--contract", str(c.source_path), "--mode",
                         "offline"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert cp.returncode == 2 and "--mode" in cp.stderr

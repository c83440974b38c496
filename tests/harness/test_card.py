"""One card per measurement, and each card's own roofline (eagle4.cards, eagle4.perf.card): a bench's rows name the
card that ran, its roofline divides by that card's declared HBM peak, rows of two cards are never one measurement,
and the card a contract is judged on is the contract's ``[baseline] card``, outside its hash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from eagle4.cards import CARDS, card_named
from eagle4.contract import ContractError, baseline_card, load_contract
from eagle4.perf.card import UnknownCard, card_of, main
from eagle4.perf.kernel_report import anchors_md, summarize
from eagle4.perf.points import BenchShape, shape_from_contract
from eagle4.validity import RunRule, summarize_runs

pytestmark = [pytest.mark.cpu]
REPO = Path(__file__).resolve().parents[2]
H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
K5V1 = "logits_to_probas/verify/B1/Q64/V128256"
K5V1_BYTES = 2 * 4 * 64 * 128256 + 4 + 8 * 64  # logits read once, probas written once, 4 B of temperature, 8 B a row


@pytest.mark.parametrize("device, card, tbps", [
    (H100, "H100 SXM", 3.35), ("NVIDIA H100 PCIe", "H100 PCIe", 2.0), ("NVIDIA H100 NVL", "H100 NVL", 3.9),
    (H200, "H200", 4.8), ("NVIDIA H200 NVL", "H200", 4.8)])
def test_device_names_map_to_their_card_and_datasheet_peak(device, card, tbps):
    c = card_of(device)
    assert (c.name, c.hbm_tbps) == (card, pytest.approx(tbps))


@pytest.mark.parametrize("device", ["NVIDIA GH200 480GB", "NVIDIA A100-SXM4-80GB", "cpu", ""])
def test_a_card_without_a_declared_peak_is_refused_by_name(device):
    with pytest.raises(UnknownCard, match="with a declared HBM peak"):
        card_of(device)


def test_card_names_and_folder_names_are_unique():
    assert len({c.name for c in CARDS}) == len({c.slug for c in CARDS}) == len(CARDS)
    assert card_named("H100 SXM") == card_of(H100) and card_named("H100 SXM").slug == "h100-sxm"
    with pytest.raises(UnknownCard, match="no card named 'H300'"):
        card_named("H300")


@pytest.mark.parametrize("contract", sorted((REPO / "contracts").glob("*.toml")), ids=lambda p: p.name)
def test_every_contract_names_the_card_it_is_judged_on(contract):
    assert baseline_card(load_contract(contract, verify_files=False)) in CARDS


def _with_baseline(tmp_path, card: str | None) -> Path:
    text = (REPO / "contracts" / "default.toml").read_text()
    head, _, rest = text.partition("[baseline]")
    rest = rest.split("\n", 2)[2]  # drop the section's card line
    path = tmp_path / "c.toml"
    path.write_text(head + (f'[baseline]\ncard = "{card}"\n' if card else "") + rest)
    return path


def test_the_baseline_card_is_outside_the_contract_hash(tmp_path):
    """The card a contract is judged on is a judgement parameter: switching it keeps every committed row's
    contract_sha256 valid (each card's rows stay in their own record), and a contract without it hashes the same."""
    shas = {card: load_contract(_with_baseline(tmp_path, card), verify_files=False).sha256
            for card in ("H100 SXM", "H200", None)}
    assert len(set(shas.values())) == 1, shas
    assert shas["H200"] == load_contract(REPO / "contracts" / "default.toml", verify_files=False).sha256
    assert baseline_card(load_contract(_with_baseline(tmp_path, "H200"), verify_files=False)).name == "H200"


def test_a_card_outside_the_table_or_none_is_refused_by_name(tmp_path):
    with pytest.raises(ContractError, match=r"baseline\.card.*'H300' is not a card of eagle4\.cards\.CARDS"):
        load_contract(_with_baseline(tmp_path, "H300"), verify_files=False)
    with pytest.raises(ContractError, match=r"no \[baseline\] card"):
        baseline_card(load_contract(_with_baseline(tmp_path, None), verify_files=False))


def _raw(device_of_run) -> tuple[list[dict], BenchShape]:
    shape = shape_from_contract(REPO / "contracts" / "deployment-8b.toml")
    return [{"contract": "deployment-8b", "contract_sha256": shape.contract_hash, "kernel": "logits_to_probas",
             "point": K5V1, "impl": impl, "B": "1", "mode": "graph", "same_computation": "true", "run_index": str(i),
             "median_us": str(us), "device": device_of_run(i)}
            for impl, us in (("cuda", 26.0), ("torch_softmax_temp", 40.0)) for i in range(shape.runs)], shape


def test_the_roofline_is_the_peak_of_the_card_that_ran():
    for device, tbps in ((H100, 3.35), (H200, 4.8)):
        raw, shape = _raw(lambda i, d=device: d)
        ours = next(s for s in summarize(raw, [shape]) if s["impl"] == "cuda")
        floor_us = K5V1_BYTES / (tbps * 1e12) * 1e6  # 19.60 us on the H100 SXM, 13.68 on the H200
        assert float(ours["roofline_us"]) == pytest.approx(floor_us, rel=1e-4)
        assert float(ours["ours_over_roofline"]) == pytest.approx(26.0 / floor_us, rel=1e-3)
        md = anchors_md(summarize(raw, [shape]))
        assert md.startswith(f"# {card_of(device).name} kernels") and f"HBM {tbps:g} TB/s" in md


def test_a_bench_pooled_over_two_cards_is_refused():
    raw, shape = _raw(lambda i: H100 if i % 2 else H200)
    with pytest.raises(ValueError, match="rows from 2 devices .* one measurement is one card"):
        summarize(raw, [shape])


def test_validity_never_pools_runs_of_two_cards():
    rows = [{"tokens_per_s": 100.0 + i, "provenance": "measured", "device": H100 if i < 3 else H200}
            for i in range(5)]
    s = summarize_runs(rows, value="tokens_per_s", rule=RunRule(5, 0.05), require_hash=False)
    assert not s.valid and any("rows from 2 devices" in r for r in s.reasons), s.reasons
    one = summarize_runs([dict(r, device=H100) for r in rows], value="tokens_per_s", rule=RunRule(5, 0.05),
                         require_hash=False)
    assert one.valid, one.reasons


def test_the_card_check_asks_the_contracts_baseline_card(capsys, tmp_path):
    assert main(["--device", H200]) == 0 and "H200, HBM 4.8 TB/s" in capsys.readouterr().out
    h100 = ["--contract", str(_with_baseline(tmp_path, "H100 SXM"))]
    assert main(["--device", H200, "--require-baseline", *h100]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not the baseline card of c.toml (H100 SXM)" in err
    assert main(["--device", H100, "--require-baseline", *h100]) == 0
    h200 = tmp_path / "h200"
    h200.mkdir()
    assert main(["--device", H200, "--require-baseline", "--contract", str(_with_baseline(h200, "H200"))]) == 0
    assert main(["--device", "NVIDIA GH200 480GB"]) == 2


def test_the_bench_checks_the_card_before_any_run(tmp_path):
    """scripts/bench_h100_kernels.sh asks eagle4.perf.card before its first run, with --require-baseline exactly when
    it writes into reports/ (the script's own line, run in bash with each --out)."""
    script = (REPO / "scripts" / "bench_h100_kernels.sh").read_text()
    check, first_run = script.index("python3 -m eagle4.perf.card"), script.index("for i in $(seq 0 $((RUNS-1)))")
    assert check < first_run
    line = next(ln for ln in script.splitlines() if ln.startswith("CARD_ARGS="))
    for out, want in (("reports", "--require-baseline"), ("./reports/", "--require-baseline"), (str(tmp_path), "")):
        got = subprocess.run(["bash", "-c", f'cd "{REPO}"; OUT={out}; mkdir -p "$OUT"; {line}; echo "${{CARD_ARGS[@]}}"'],
                             capture_output=True, text=True, check=True).stdout.strip()
        assert got == want, (out, got)


def test_card_module_runs_as_a_program_without_a_gpu():
    r = subprocess.run([sys.executable, "-m", "eagle4.perf.card", "--device", "NVIDIA GH200 480GB"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and r.stderr.startswith("eagle4.perf.card: ")


def test_no_module_reads_a_peak_from_the_contract():
    """A roofline divides by the declared peak of the card that ran (eagle4.cards); ``[measurement] hbm_peak_tbps``
    stays only so that the contracts that set it keep their hash, and nothing may read it."""
    readers = [p for p in (REPO / "src").rglob("*.py") if ".hbm_peak_tbps" in p.read_text()]
    readers += [p for p in (REPO / "scripts").glob("*.py") if ".hbm_peak_tbps" in p.read_text()]
    assert not readers, readers


def test_the_e2e_bench_and_self_check_take_the_cards_peak():
    e2e = (REPO / "scripts" / "bench_h100_e2e.sh").read_text()
    assert e2e.index("eagle4.perf.card --require-baseline") < e2e.index('"$PY" scripts/gpu_selfcheck_e2e.py')
    selfcheck = (REPO / "scripts" / "gpu_selfcheck_e2e.py").read_text()
    assert "3.35e12" not in selfcheck and 'roofline(c, B, L, card_of(out["device"]))' in selfcheck


def test_summarize_refuses_two_cards_in_one_line_and_writes_nothing(tmp_path, capsys):
    from eagle4.perf import kernel_bench
    from eagle4.perf.rows import RAW_FIELDS, write_csv

    raw, _ = _raw(lambda i: H100 if i % 2 else H200)
    for r in raw:
        r["label"] = "K5"
    write_csv(tmp_path / "raw_0.csv", raw, RAW_FIELDS)
    out = tmp_path / "reports"
    rc = kernel_bench.main(["summarize", str(tmp_path / "raw_0.csv"), "--contract",
                            str(REPO / "contracts" / "deployment-8b.toml"), "--reports", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "raw_0.csv" in err and "2 devices" in err
    assert not out.exists() or not any(out.iterdir())

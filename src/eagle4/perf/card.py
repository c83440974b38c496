"""Which GPU card a kernel bench ran on (the card table is :mod:`eagle4.cards`), and the check a bench script runs
before its first run.

Rows of one measurement from more than one card are refused (``eagle4.validity``): a median across cards, or a ratio
to an anchor timed on another card, means nothing. Which card a contract's GPU figures are judged on is the
contract's ``[baseline] card``; a bench of any card of the table is kept as that card's record
(``reports/cards/<card>/<contract>/``, :mod:`eagle4.perf.records`).

    python -m eagle4.perf.card [--require-baseline [--contract FILE ...]]   # on the GPU machine; exit 2 if refused
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from eagle4.cards import CARDS, Card, UnknownCard, card_of
from eagle4.validity import check_one_device

__all__ = ["CARDS", "Card", "UnknownCard", "bench_card", "card_of", "main"]

REPO = Path(__file__).resolve().parents[3]


def bench_card(rows: Sequence[Mapping]) -> Card:
    """The one card a bench's rows (raw or summary) were measured on; UnknownCard (a ValueError) where they name
    several, none, or a card without a declared peak."""
    mixed = check_one_device(rows)
    if mixed:
        raise UnknownCard(f"bench {mixed[0]}: summarize each card's runs apart")
    devices = {r.get("device") for r in rows} - {None, ""}
    if not devices:
        raise UnknownCard("bench rows name no device: the roofline needs the card that ran")
    return card_of(str(devices.pop()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eagle4.perf.card", description=__doc__.split("\n\n")[0])
    ap.add_argument("--require-baseline", action="store_true",
                    help="exit 2 unless the GPU is the [baseline] card of every --contract")
    ap.add_argument("--contract", action="append", type=Path,
                    help="a contract whose [baseline] card the GPU must be (default: contracts/*.toml)")
    ap.add_argument("--device", help="a device name instead of GPU 0's (for checks without a GPU)")
    args = ap.parse_args(argv)
    device = args.device
    if device is None:
        import torch

        if not torch.cuda.is_available():
            print("eagle4.perf.card: no CUDA device visible", file=sys.stderr)
            return 2
        device = torch.cuda.get_device_name(0)
    try:
        card = card_of(device)
    except UnknownCard as e:
        print(f"eagle4.perf.card: {e}", file=sys.stderr)
        return 2
    if args.require_baseline:
        from eagle4.contract import ContractError, baseline_card, load_contract

        paths = args.contract or sorted((REPO / "contracts").glob("*.toml"))
        for path in paths:
            try:
                want = baseline_card(load_contract(path, verify_files=False, require_models=False))
            except ContractError as e:
                print(f"eagle4.perf.card: {e}", file=sys.stderr)
                return 2
            if card != want:
                print(f"eagle4.perf.card: this GPU is {device!r} ({card.name}), not the baseline card of {path.name} "
                      f"({want.name}): write this card's bench to its own record (--out DIR)", file=sys.stderr)
                return 2
    print(f"{device}: {card.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Which GPU card a kernel bench ran on, and the HBM peak its roofline divides by.

A roofline ratio is only meaningful against the peak of the card that ran: K5's 65.7 MB verify call has a floor of
19.6 us at an H100 SXM's 3.35 TB/s and 13.7 us at an H200's 4.8 TB/s, so a time measured on one card over the
other's floor flatters or condemns it by 1.43x. The peaks are the vendors' datasheet figures: declared, not measured
here (the bench measures one copy of the same bytes beside every K5 point for the achieved ceiling).

The harness's baseline is the H100 SXM (``BASELINE``): ``reports/`` holds its rows alone, and a bench from any
other card is refused there (``install_rows``, ``scripts/bench_h100_kernels.sh --out reports``) and kept beside them
instead (``reports/cards/``). Rows of one measurement from more than one card are refused by ``eagle4.validity``.

    python -m eagle4.perf.card [--require-baseline]   # on the GPU machine: the card, its peak; exit 2 if refused
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from eagle4.validity import check_one_device


@dataclass(frozen=True)
class Card:
    name: str  # short name used in reports, e.g. "H100 SXM"
    pattern: str  # regex over the device name the driver reports (torch.cuda.get_device_name)
    hbm_bps: float  # datasheet HBM bandwidth, bytes/s
    source: str  # where the peak comes from

    @property
    def slug(self) -> str:
        """The card's folder name under ``reports/cards/`` (e.g. "h200", "h100-sxm")."""
        return self.name.lower().replace(" ", "-")

    @property
    def hbm_tbps(self) -> float:
        return self.hbm_bps / 1e12

    def describe(self) -> str:
        return f"{self.name}, HBM {self.hbm_tbps:g} TB/s ({self.source}; declared)"


class UnknownCard(ValueError):
    """The device name matches no card with a declared HBM peak, or several."""


# Device names as the driver reports them: "NVIDIA H100 80GB HBM3" (SXM5), "NVIDIA H100 PCIe", "NVIDIA H100 NVL",
# "NVIDIA H200" (SXM; the NVL part reports "NVIDIA H200 NVL" and has the same 4.8 TB/s).
CARDS: tuple[Card, ...] = (
    Card("H100 SXM", r"\bH100\b(?!.*\b(?:PCIe|NVL)\b)", 3.35e12, "NVIDIA H100 datasheet, SXM5 80 GB HBM3"),
    Card("H100 PCIe", r"\bH100\b.*\bPCIe\b", 2.0e12, "NVIDIA H100 datasheet, PCIe 80 GB HBM2e"),
    Card("H100 NVL", r"\bH100\b.*\bNVL\b", 3.9e12, "NVIDIA H100 datasheet, NVL 94 GB HBM3"),
    Card("H200", r"\bH200\b", 4.8e12, "NVIDIA H200 datasheet, 141 GB HBM3e"),
)
BASELINE = CARDS[0]


def card_of(device: str) -> Card:
    """The card whose pattern matches ``device``; UnknownCard (naming it) where none or several do."""
    hits = [c for c in CARDS if re.search(c.pattern, device or "")]
    if len(hits) != 1:
        why = "matches no card" if not hits else f"matches {', '.join(c.name for c in hits)}"
        raise UnknownCard(f"device {device!r} {why} with a declared HBM peak (eagle4.perf.card.CARDS): a roofline "
                          "needs the peak of the card that ran; add its datasheet figure there")
    return hits[0]


def bench_card(rows: Sequence[Mapping]) -> Card:
    """The one card a bench's rows (raw or summary) were measured on; UnknownCard (a ValueError) where they name
    several (a median across cards, or a ratio to an anchor timed on another card, means nothing), none, or a card
    without a declared peak."""
    mixed = check_one_device(rows)
    if mixed:
        raise UnknownCard(f"bench {mixed[0]}: summarize each card's runs apart")
    devices = {r.get("device") for r in rows} - {None, ""}
    if not devices:
        raise UnknownCard("bench rows name no device: the roofline needs the card that ran")
    return card_of(str(devices.pop()))


def is_baseline(device: str) -> bool:
    try:
        return card_of(device) == BASELINE
    except UnknownCard:
        return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eagle4.perf.card", description=__doc__.split("\n\n")[0])
    ap.add_argument("--require-baseline", action="store_true",
                    help=f"exit 2 unless the GPU is the baseline card ({BASELINE.name})")
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
    if args.require_baseline and card != BASELINE:
        print(f"eagle4.perf.card: this GPU is {device!r} ({card.name}), not the baseline card ({BASELINE.name}): "
              "reports/ holds the baseline's rows alone; write this card's bench elsewhere (--out DIR)",
              file=sys.stderr)
        return 2
    print(f"{device}: {card.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

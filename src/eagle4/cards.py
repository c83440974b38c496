"""The card table: every GPU card a measurement may come from, with the HBM peak its roofline divides by.

A roofline ratio is only meaningful against the peak of the card that ran: K5's 65.7 MB verify call has a floor of
19.6 us at an H100 SXM's 3.35 TB/s and 13.7 us at an H200's 4.8 TB/s, so a time measured on one card over the
other's floor flatters or condemns it by 1.43x. The peaks are the vendors' datasheet figures: declared, not measured
here (the bench measures one copy of the same bytes beside every K5 point for the achieved ceiling).

Which card a contract's GPU figures are judged on is the contract's (``[baseline] card``, a name of this table);
no card is the baseline here. The table has no dependency inside eagle4, so the contract can validate against it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Card:
    name: str  # short name used in reports and contracts, e.g. "H100 SXM"
    pattern: str  # regex over the device name the driver reports (torch.cuda.get_device_name)
    hbm_bps: float  # datasheet HBM bandwidth, bytes/s
    source: str  # where the peak comes from
    bf16_dense_flops: float = float("nan")  # datasheet dense (no sparsity) bf16 tensor-core FLOP/s

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
    # dense bf16: the datasheets' sparsity figures halved (H100 SXM / H200 SXM 1,979 -> 989.4 TFLOP/s)
    Card("H100 SXM", r"\bH100\b(?!.*\b(?:PCIe|NVL)\b)", 3.35e12, "NVIDIA H100 datasheet, SXM5 80 GB HBM3", 989.4e12),
    Card("H100 PCIe", r"\bH100\b.*\bPCIe\b", 2.0e12, "NVIDIA H100 datasheet, PCIe 80 GB HBM2e", 756.0e12),
    Card("H100 NVL", r"\bH100\b.*\bNVL\b", 3.9e12, "NVIDIA H100 datasheet, NVL 94 GB HBM3", 835.0e12),
    Card("H200", r"\bH200\b", 4.8e12, "NVIDIA H200 datasheet, 141 GB HBM3e", 989.4e12),
)


def card_named(name: str) -> Card:
    """The card of the table called ``name`` (as a contract's ``[baseline] card`` names it); UnknownCard if none."""
    for c in CARDS:
        if c.name == name:
            return c
    raise UnknownCard(f"no card named {name!r} in eagle4.cards.CARDS ({', '.join(c.name for c in CARDS)})")


def card_of_slug(slug: str) -> Card:
    """The card whose folder name under ``reports/cards/`` is ``slug``; UnknownCard if none."""
    for c in CARDS:
        if c.slug == slug:
            return c
    raise UnknownCard(f"no card with folder name {slug!r} in eagle4.cards.CARDS ({', '.join(c.slug for c in CARDS)})")


def card_of(device: str) -> Card:
    """The card whose pattern matches ``device``; UnknownCard (naming it) where none or several do."""
    hits = [c for c in CARDS if re.search(c.pattern, device or "")]
    if len(hits) != 1:
        why = "matches no card" if not hits else f"matches {', '.join(c.name for c in hits)}"
        raise UnknownCard(f"device {device!r} {why} with a declared HBM peak (eagle4.cards.CARDS): a roofline "
                          "needs the peak of the card that ran; add its datasheet figure there")
    return hits[0]

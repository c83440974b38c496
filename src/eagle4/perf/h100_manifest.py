"""The lines of ``h100_env_manifest.txt`` (written by ``scripts/bench_h100_kernels.sh``) that say what the committed H100
rows timed and how: read here for every reader (the committed-results tests, ``install_rows``)."""

from __future__ import annotations

import re
from pathlib import Path

NAME = "h100_env_manifest.txt"
GIT_COMMIT = r"^git_commit: ([0-9a-f]{40})$"
KERNEL_SRC = r"^kernel_src cost_draft_tree_kernel\.cu ([0-9a-f]{64})$"
TIMER = r"^timer: (.*)$"
CREATED = r"^created_utc: (\S+)$"
DEVICE = r"^device (.+?) sm \d+"  # torch's name of GPU 0
CONTRACT = r"^contract: contracts/(\S+)\.toml sha256 ([0-9a-f]{64})$"  # one line per contract benched (re.findall)


def field(path: Path, pattern: str) -> str | None:
    """The first group of ``pattern`` on a line of the manifest at ``path``; None where no line matches."""
    m = re.search(pattern, path.read_text(errors="replace"), re.M)
    return m.group(1) if m else None

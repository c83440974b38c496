"""Writes the hunk variants of the second call: b9940e6's kernel source with subsets of 7c0b899.patch's hunks
(0-based, in the patch's order). Usage: python3 make_hunk_variants.py BASE OUTDIR (BASE: cuda/cost_draft_tree_kernel.cu
as b9940e6 committed it; needs `patch`). v23, with one comment more, is the source committed after these calls (README.md)."""
import re
import subprocess
import sys
from pathlib import Path

HUNKS = {
    "v1": [0],  # ld_f4_l2_policy not volatile (no SASS change)
    "v2": [0, 1, 2],  # + amax_better as one template (amax_better32 folded in)
    "v3": [0, 3, 4, 6],  # v1 + k5_exp_rel through k5_each (k5_exp_rel_rcp's parameters)
    "v4": [0, 7, 8],  # v1 + the two-round exp loop and the greedy one-hot loop through k5_each
    "v5": [0, 5],  # v1 + the loads through k5_each and the greedy rows' first pass without the |logit| min / max
    "v34": [0, 3, 4, 6, 7, 8],
    "v23": [0, 1, 2, 3, 4, 6],
}
base, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
head, *hunks = re.split(r"(?m)^(?=@@ )", (Path(__file__).parent / "7c0b899.patch").read_text())
for name, idx in HUNKS.items():
    diff = out / f"{name}.diff"
    diff.write_text(head + "".join(hunks[i] for i in idx))
    subprocess.run(["patch", "-s", "-o", str(out / f"{name}.cu"), str(base), str(diff)], check=True)
    print(out / f"{name}.cu")

"""K5's sweep at one contract with a few choices only: automatic (the pipelined kernel where it applies), without
it (the L2 prefetch where it applies), and the pipelined kernel with a forced number of clusters in flight;
argv: contract, then 'rev' to run them in reverse."""
import sys

from eagle4.perf import kernel_bench as kb

settings = ((0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, -1),
            *((0, 0, 0, 0, 0, 0, 0, gy) for gy in (22, 32, 43, 64, 86, 132, 256)))
if sys.argv[2:] == ["rev"]:
    settings = (settings[0], *settings[:0:-1], settings[0])
_, apply, label = kb.SWEEPS["logits_to_probas"]
kb.SWEEPS["logits_to_probas"] = (settings, apply, label)
sys.exit(kb.main(["sweep", "--kernel", "logits_to_probas", "--contract", sys.argv[1]]))

"""A rank body for the launcher's failure tests: all-reduces, with rank ``who`` dying, hanging or
raising in the second one (``python tp_fault_worker.py MODE WHO``; MODE: ok, die, hang, raise)."""

from __future__ import annotations

import os
import sys
import time

import torch

from eagle4.models.tensor_parallel import init
from eagle4.workload.tp_launch import rank_main


def body() -> int:
    mode, who = sys.argv[1], int(sys.argv[2])
    tp = init(int(os.environ["WORLD_SIZE"]), "cpu")
    x = torch.ones(4)
    for i in range(3):
        if i == 1 and tp.rank == who:
            if mode == "die":
                os._exit(13)
            if mode == "hang":
                time.sleep(600)
            if mode == "raise":
                raise ValueError("bad shard")
        tp.all_reduce(x)
    print(float(x.sum()))
    return 0


if __name__ == "__main__":
    rank_main(body)

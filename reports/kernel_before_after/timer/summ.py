import sys, collections, numpy as np
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    _, run, c, pid, m, w, g, med, mn = line.strip().split(",")
    d[(c, pid, m, int(run))].append(float(med))
keys = sorted({(c, pid) for c, pid, m, r in d})
print(f"{'point':60s} " + " ".join(f"{m:>16s}" for m in ("cur", "lead", "pipe", "realloc")))
worst = collections.Counter()
for c, pid in keys:
    cells = []
    for m in ("cur", "lead", "pipe", "realloc"):
        per = [np.median(d[(c, pid, m, r)]) for r in range(5) if (c, pid, m, r) in d]
        if not per:
            cells.append(" " * 16); continue
        cov = np.std(per) / np.mean(per)
        if cov > 0.02: worst[m] += 1
        cells.append(f"{np.median(per):8.3f} {100*cov:5.2f}%")
    print(f"{c[:6]} {pid:53s} " + " ".join(cells))
print("rows over 2% CoV per method:", dict(worst))

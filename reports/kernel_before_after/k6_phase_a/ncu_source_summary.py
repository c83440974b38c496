# warp-stall samples of an `ncu --page source --csv --print-source cuda,sass` export, summed per CUDA source line
import csv, io, collections, sys
lines = open(sys.argv[1]).read().splitlines()
idx = [i for i, l in enumerate(lines) if l.startswith('"File Path"')] + [len(lines)]
per = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.Counter()))
src = {}
for a, b in zip(idx, idx[1:]):
    fp = next(csv.reader([lines[a]]))[1]
    fn = next(csv.reader([lines[a + 1]]))[1]
    rows = list(csv.reader(io.StringIO("\n".join(lines[a + 2:b]))))
    hdr = rows[0]
    col = {h: i for i, h in enumerate(hdr)}
    stall = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    for r in rows[1:]:
        if len(r) < len(hdr) or not r[col["Line No"]].strip():
            continue
        try:
            n = int(float(r[col["Warp Stall Sampling (All Samples)"]] or 0))
        except ValueError:
            continue
        key = (fp.split("/")[-1], int(r[col["Line No"]]))
        src[key] = r[1].strip()
        c = per[fn][key]
        c["_all"] += n
        for h in stall:
            try:
                v = int(float(r[col[h]] or 0))
            except ValueError:
                v = 0
            if v:
                c[h[6:]] += v
for fn, d in per.items():
    tot = sum(c["_all"] for c in d.values())
    print(f"TOTAL {tot} {fn[:90]}")
    for key, c in sorted(d.items(), key=lambda kv: -kv[1]["_all"])[:int(sys.argv[2]) if len(sys.argv) > 2 else 18]:
        reasons = ", ".join(f"{k}={v}" for k, v in c.most_common() if k != "_all")[:70]
        print(f"  {c['_all']:5d} {key[0]}:{key[1]:5d}  {src[key][:90]:90s} | {reasons}")

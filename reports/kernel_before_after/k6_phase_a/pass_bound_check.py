# k6_pass_bound (every coin, t finite > 0) against numpy's IEEE float32 division, on the CPU:
# x >= P(c, t) must equal c <= RN(x / t) for every float x.  python3 pass_bound_check.py
import numpy as np
f32 = np.float32; f64 = np.float64
FLT_MAX = np.finfo(np.float32).max
up = lambda v: np.nextafter(f32(v), f32(np.inf))
down = lambda v: np.nextafter(f32(v), f32(-np.inf))

def div(x, t):
    with np.errstate(all="ignore"):
        return f32(f32(x) / f32(t))

def rd(x):  # __double2float_rd
    with np.errstate(all="ignore"):
        y = f32(x)
    return down(y) if f64(y) > x else y

def bound(c, t):  # the kernel's k6_pass_bound, operation for operation
    c = f32(c)
    if np.isnan(c) or c == -np.inf:
        return c
    hi = 2.0 ** 128 if c == np.inf else f64(c)
    lo = -(2.0 ** 128) if c == -FLT_MAX else f64(down(c))
    mt = (hi + lo) * 0.5 * f64(t)
    d = rd(mt)
    even = (np.array(c).view(np.uint32) & 1) == 0
    return d if (f64(d) == mt and even) else up(d)

def least(c, t):  # the least float passing, by search from RN(c * t)
    with np.errstate(all="ignore"):
        x = f32(c * t)
    if not np.isfinite(x):
        x = f32(np.sign(c) * FLT_MAX) if np.isfinite(c) else f32(c)
    for _ in range(200):
        y = down(x)
        if y == x or not (c <= div(y, t)):
            break
        x = y
    for _ in range(200):
        if c <= div(x, t):
            break
        x = up(x)
    return x

rng = np.random.default_rng(7)
sp = [0.0, -0.0, 1.0, 1e-45, 3e-45, 1e-40, 1e-9, 3e38, 0.5, 0.3, 1 - 2 ** -24, 2 ** -126, FLT_MAX / 2, FLT_MAX]
coins = list(rng.random(1500).astype(np.float32)) + sp + [-v for v in sp] + [np.inf, -np.inf, np.nan]
coins += list((rng.random(200) * 1e-38).astype(np.float32)) + list((rng.random(200) * 3e38).astype(np.float32))
ts = [1.0, 0.5, 0.3, 1e-9, 0.7, 1.3, 3e38, 1e30, 2 ** -126, 1e-38, 0.999999, FLT_MAX, float(f32(1e-9))]
ts += list(rng.random(8).astype(np.float32))
n = bad = 0
with np.errstate(all="ignore"):
    for t in map(f32, ts):
        for c in map(f32, coins):
            P = bound(c, t)
            xs = [f32(0), f32(-0.0), f32(np.inf), f32(-np.inf), f32(np.nan), FLT_MAX, -FLT_MAX, f32(1e-45), f32(-1e-45)]
            xs += list((rng.random(8) * 4).astype(np.float32))
            if not np.isnan(P):
                xs += [P, down(P), up(P)]
            if np.isfinite(c):
                L = least(c, t)
                xs += [L, down(L), up(L)]
            ct = f32(c * t)
            xs += [ct, down(ct), up(ct)]
            for x in xs:
                n += 1
                want = bool(c <= div(x, t))
                got = bool(f32(x) >= P)
                if want != got:
                    bad += 1
                    if bad < 10:
                        print("BAD c", repr(c), "t", repr(t), "x", repr(x), "want", want, "P", repr(P))
print("checked", n, "bad", bad)

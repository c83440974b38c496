"""Writes the variants of 7c0b899's kernel source that tell its K5 changes apart (issue 14). Usage:
python3 make_variants.py SRC OUTDIR (SRC: cuda/cost_draft_tree_kernel.cu as 7c0b899 committed it)."""
import sys
from pathlib import Path

src = Path(sys.argv[1]).read_text()
out = Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)

EACH_LDCS = "    each([&](int u, int i) { x[u] = __ldcs(reinterpret_cast<const float4*>(row + i)); });\n"
PRED_LDCS = """#pragma unroll
    for (int u = 0; u < NV; ++u) {
      const int64_t i = ((int64_t)u * nt + tid) * 4;
      x[u] = i < n ? __ldcs(reinterpret_cast<const float4*>(row + i)) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
"""
EACH_PF = "    each([&](int u, int i) { x[u] = ld_f4_l2_policy(row + i, normal); });\n"
PRED_PF = """#pragma unroll
    for (int u = 0; u < NV; ++u) {
      const int64_t i = ((int64_t)u * nt + tid) * 4;
      x[u] = i < n ? ld_f4_l2_policy(row + i, normal) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
"""
SPLIT = """  if (need_exp) {
    each([&](int u, int) {
      const float* e = reinterpret_cast<const float*>(&x[u]);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        asm("max.NaN.f32 %0, %0, %1;" : "+f"(mx) : "f"(e[k]));
        lo = fminf(lo, fabsf(e[k]));
        hi = fmaxf(hi, fabsf(e[k]));
      }
    });
  } else {
    each([&](int u, int) {
      const float* e = reinterpret_cast<const float*>(&x[u]);
#pragma unroll
      for (int k = 0; k < 4; ++k) asm("max.NaN.f32 %0, %0, %1;" : "+f"(mx) : "f"(e[k]));
    });
  }
"""
NOSPLIT = """  each([&](int u, int) {
    const float* e = reinterpret_cast<const float*>(&x[u]);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      asm("max.NaN.f32 %0, %0, %1;" : "+f"(mx) : "f"(e[k]));
      lo = fminf(lo, fabsf(e[k]));
      hi = fmaxf(hi, fabsf(e[k]));
    }
  });
"""
for s in (EACH_LDCS, EACH_PF, SPLIT):
    assert src.count(s) == 1, s
variants = {
    # the plain build's loads as b9940e6 issued them (predicated, 64-bit tests); the prefetching build's through k5_each
    "ldpred": src.replace(EACH_LDCS, PRED_LDCS),
    # both builds' loads predicated as in b9940e6 (ld_f4_l2_policy stays non-volatile)
    "ldpred2": src.replace(EACH_LDCS, PRED_LDCS).replace(EACH_PF, PRED_PF),
    # the first pass not split by need_exp (every row takes the |logit| min / max)
    "nosplit": src.replace(SPLIT, NOSPLIT),
    # both of the above
    "ldpred_nosplit": src.replace(EACH_LDCS, PRED_LDCS).replace(SPLIT, NOSPLIT),
}
for name, text in variants.items():
    (out / f"{name}.cu").write_text(text)
    print(out / f"{name}.cu")

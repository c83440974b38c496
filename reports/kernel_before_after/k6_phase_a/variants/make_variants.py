# variant sources of K6's phase A (experiment; base = HEAD's kernel source)
import re, sys
from pathlib import Path
d = Path(__file__).parent
cur = (d / "cur.cu").read_text()

def sub(s, old, new, n=1):
    assert s.count(old) == n, (old[:60], s.count(old))
    return s.replace(old, new)

OLD_BOUND_FN = cur[cur.index("__device__ __forceinline__ bool k6_pass_bound("):cur.index("struct K6Walk {")]
NEW_BOUND_FN = '''__device__ __forceinline__ float k6_pass_bound(float c, float t) {
  if (isnan(c) || c == -INFINITY) return c;  // NaN: nothing passes; -inf: all but a NaN sum
  const double hi = c == INFINITY ? 0x1p128 : (double)c;
  const double lo = c == -FLT_MAX ? -0x1p128 : (double)nextafterf(c, -INFINITY);
  const double mt = (hi + lo) * 0.5 * (double)t;
  const float d = __double2float_rd(mt);
  return ((double)d == mt && (__float_as_uint(c) & 1u) == 0u) ? d : nextafterf(d, INFINITY);
}

'''
OLD_CALL = '''    const float coin = s_coin[r];
    float P = 0.0f;
    const bool bound = !gr && k6_pass_bound(coin, thr_acc, P);
'''
OLD_SEL = '''    const int acc_c = bound ? resolve([&](float pa) { return pa >= P; })
                            : resolve([&](float pa) { return coin <= __fdiv_rn(pa, thr_acc); });
'''
# nodiv: timing only
nodiv = sub(cur, OLD_SEL, "    const int acc_c = resolve([&](float pa) { return coin <= pa; });\n")
# A: extended bound, per row in phase A, one form per launch (t finite)
A = sub(cur, OLD_BOUND_FN, NEW_BOUND_FN)
A = sub(A, OLD_CALL, '''    const float coin = s_coin[r];
    const float P = k6_pass_bound(coin, thr_acc);
''')
A = sub(A, OLD_SEL, '''    const int acc_c = tfin ? resolve([&](float pa) { return pa >= P; })
                           : resolve([&](float pa) { return coin <= __fdiv_rn(pa, thr_acc); });
''')
A = sub(A, "  for (int i = tid; i < Q; i += nt) {\n    const int64_t o = b * Q + i;",
        "  const bool tfin = thr_acc <= FLT_MAX;  // the host makes thr_acc >= 1e-9\n  for (int i = tid; i < Q; i += nt) {\n    const int64_t o = b * Q + i;")
# S: staged bound
S = sub(A, "s_tpred[i] = tpred[o]; s_coin[i] = coins[o];",
        "s_tpred[i] = tpred[o];\n    const float c = coins[o];\n    s_coin[i] = tfin ? k6_pass_bound(c, thr_acc) : c;")
S = sub(S, '''    const float coin = s_coin[r];
    const float P = k6_pass_bound(coin, thr_acc);
''', '''    const float coin = s_coin[r];  // P (tfin) or the coin
    const float P = coin;
''')
# R: phase A from registers (the prefetch records the chain; no second chase)
a0 = A.index("  constexpr int PK = 8;\n  for (int r = tid; r < Q; r += nt) {")
a1 = A.index("    s_acc[r] = acc_c;\n  }")
R_BODY = '''  constexpr int PK = 8;
  for (int r = tid; r < Q; r += nt) {
    float pv[PK];
    int ck[PK];          // the chain's k-th child, -1 once it ends, leaves [0, Q) or passes the guard
    unsigned inr = 0u;   // bit k: child k's token is in [0, V)
    unsigned gacc = 0u;  // greedy rows: bit k: child k's token is target_predict[b, r]
    int64_t cur = s_next[r];
    const int64_t tp = s_tpred[r];
#pragma unroll
    for (int k = 0; k < PK; ++k) {
      pv[k] = 0.0f;
      ck[k] = -1;
      if (cur >= 0 && cur < Q && k <= Q) {
        ck[k] = (int)cur;
        const int64_t tok = s_cand[cur];
        if (tok >= 0 && tok < V) {
          inr |= 1u << k;
          if (gr) gacc |= (tok == tp ? 1u : 0u) << k;
          else pv[k] = probs[(b * Q + r) * V + tok];
        }
        cur = s_sib[cur];
      } else {
        cur = -1;
      }
    }
    const float coin = s_coin[r];
    const float P = k6_pass_bound(coin, thr_acc);
    auto resolve = [&](auto passes) {
      int acc_c = -1;
      float pacc = 0.0f;
      bool done = false;
#pragma unroll
      for (int k = 0; k < PK; ++k) {
        if (!done) {
          if (ck[k] < 0) {
            done = true;
          } else if ((inr >> k) & 1u) {
            bool acc;
            if (gr) {
              acc = (gacc >> k) & 1u;
            } else {
              pacc = __fadd_rn(pacc, pv[k]);
              acc = passes(pacc) || (pv[k] >= thr_single);
            }
            if (acc) { acc_c = ck[k]; done = true; }
          }
        }
      }
      for (int guard = PK; !done && cur != -1 && guard <= Q; ++guard) {
        if (cur < 0 || cur >= Q) break;
        const int64_t tok = s_cand[cur];
        if (tok < 0 || tok >= V) { cur = s_sib[cur]; continue; }
        bool acc;
        if (gr) {
          acc = tok == tp;
        } else {
          const float p = probs[(b * Q + r) * V + tok];
          pacc = __fadd_rn(pacc, p);
          acc = passes(pacc) || (p >= thr_single);
        }
        if (acc) { acc_c = (int)cur; break; }
        cur = s_sib[cur];
      }
      return acc_c;
    };
    const int acc_c = tfin ? resolve([&](float pa) { return pa >= P; })
                           : resolve([&](float pa) { return coin <= __fdiv_rn(pa, thr_acc); });
'''
R = A[:a0] + R_BODY + A[a1:]
# W: the walk and rank 0's initial global writes off warp 0 (the exchange's releasing warp)
def W_of(s):
    s = sub(s, "    if (rank == 0) predicts[o] = -1;\n  }\n  if (rank == 0)\n    for (int j = tid; j < S; j += nt) acc_idx[b * S + j] = -1;",
            "  }\n  if (rank == 0) {  // by the block's last warps first: warp 0 releases the cluster exchange\n    const int tw = (tid + nt - 32) % nt;\n    for (int i = tw; i < Q; i += nt) predicts[b * Q + i] = -1;\n    for (int j = tw; j < S; j += nt) acc_idx[b * S + j] = -1;\n  }")
    s = sub(s, "  // the walk itself: S-1 lookups (thread 0 of every block; rank 0 writes)\n  if (tid == 0) {",
            "  // the walk itself: S-1 lookups (lane 0 of the last warp of every block; rank 0 writes)\n  if (tid == nt - 32) {")
    return s
W = W_of(A)
RW = W_of(R)
for name, s in dict(nodiv=nodiv, A=A, S=S, R=R, W=W, RW=RW).items():
    (d / f"{name}.cu").write_text(s)
    print(name, len(s))
# SR (kept, the next commit): S's staged bound on R's register scan
SR = sub(R, "s_tpred[i] = tpred[o]; s_coin[i] = coins[o];",
         "s_tpred[i] = tpred[o];\n    const float c = coins[o];\n    s_coin[i] = tfin ? k6_pass_bound(c, thr_acc) : c;")
SR = sub(SR, "    const float coin = s_coin[r];\n    const float P = k6_pass_bound(coin, thr_acc);\n",
         "    const float coin = s_coin[r];  // P (tfin) or the coin\n    const float P = coin;\n")
(d / "SR.cu").write_text(SR)

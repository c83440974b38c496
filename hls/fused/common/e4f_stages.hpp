// Stage code of the EAGLE4 chain that has no per-kernel HLS folder of its own, shared by the fused
// dataflow designs (hls/fused/draft_pipeline, hls/fused/verify_pipeline) and by the unfused
// reference chain they are checked against (draft_unfused.cpp, verify_unfused.cpp):
//   * the draft LM head and the external draft top-K (fused-only stages, not P0 kernels);
//   * K5's row statistics / probabilities and K6's walk + final sampling in the on-demand form the
//     fused verify pipeline needs. NOT yet folded onto hls/logits_to_probas / hls/reject_sample:
//     row_stats sums exp in a different association (16 lanes, sequential fold) than the
//     per-kernel K5 (ACC_DEPTH x 16 lanes, neighbours-first tree), so folding changes the fused
//     designs' probability bits; K6 here takes its probabilities through a lazy on-chip row.
//   * the host glue moved on chip: verify-set selection (§8.2 step 1) and the finish rule.
// K1, K2, K3, K4 and K7 are NOT here: the stages call the per-kernel cores of
// hls/{draft_tree_score,update_draft_state,work_deltas,tree_mask,update_verify}/<key>_core.hpp,
// and the unfused chain calls the per-kernel tops.
//
// Every function is templated on its buffer accessors: an accessor is anything indexable like
// a pointer: a raw pointer / on-chip array (fused: the data never leaves the chip) or a
// PORT(T) m_axi port (eagle4_port.h; in counted C-sim builds each element access adds to that
// port's byte counter). The same arithmetic in the same order therefore runs in both chains,
// which is what makes the fused designs EXACT against the unfused chain.
//
// Floating point: no FMA contraction (build with -ffp-contract=off), IEEE division, expf.
#ifndef E4F_STAGES_HPP
#define E4F_STAGES_HPP

#include <cmath>
#include <cstdint>
#include <cstring>

#include "e4f_bounds.h"
#include "e4f_perf.h"

namespace e4f {

static const float kInf = __builtin_inff();

inline bool isnan_f(float x) { return x != x; }
inline float sort_key(float x) { return isnan_f(x) ? -kInf : x; }
// (a, ia) sorts before (b, ib): key descending, index ascending (§1.5 step 3, D1/D2/D24).
inline bool before(float a, int64_t ia, float b, int64_t ib) {
  const float ka = sort_key(a), kb = sort_key(b);
  if (ka > kb) return true;
  if (ka < kb) return false;
  return ia < ib;
}

inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// ---- element conversions for the LM head (hidden and weight operands) -------------------
inline float to_f(float x) { return x; }
inline float to_f(int8_t x) { return static_cast<float>(x); }
inline float bf16_to_f(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }
inline float f16_to_f(uint16_t h) {
  const uint32_t s = uint32_t(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);
    return s ? -v : v;
  }
  if (e == 31) return f32_from_bits(s | 0x7f800000u | (m << 13));
  return f32_from_bits(s | ((e + 112) << 23) | (m << 13));
}
// hidden code: 0 = f32 (uint32 bits), 1 = bf16, 2 = f16 (uint16 bits)
inline float hid_to_f(uint32_t bits, int) { return f32_from_bits(bits); }
inline float hid_to_f(uint16_t bits, int code) { return code == 2 ? f16_to_f(bits) : bf16_to_f(bits); }
// weight: int8 (scaled per row), bf16 bits, or f32
inline float w_to_f(int8_t w) { return static_cast<float>(w); }
inline float w_to_f(uint16_t w) { return bf16_to_f(w); }
inline float w_to_f(float w) { return w; }
// int4 weights (scaled per row like int8), two per byte: weight h of a row is the low nibble of byte h / 2
// when h is even, the high nibble when odd, two's complement (the layout of
// eagle4.workload.approximations.int4.pack_int4_rows). A distinct type so the templates tell it from int8.
struct i4x2 {
  uint8_t b;
  i4x2() = default;
  explicit i4x2(uint8_t v) : b(v) {}
};
inline float i4_lo(i4x2 w) { return static_cast<float>(static_cast<int>(w.b & 0xF) - ((w.b & 0x8) ? 16 : 0)); }
inline float i4_hi(i4x2 w) { return static_cast<float>(static_cast<int>(w.b >> 4) - ((w.b & 0x80) ? 16 : 0)); }
// weights per element of the weight port, the port's element type (int4: the packed bytes), and port
// elements per weight row of H weights
template <typename WT>
struct WPack {
  static const int kPer = 1;
  typedef WT Elem;
};
template <>
struct WPack<i4x2> {
  static const int kPer = 2;
  typedef uint8_t Elem;
};
template <typename WT>
using WElem = typename WPack<WT>::Elem;
template <typename WT>
inline int64_t w_row_elems(int64_t H) {
  return (H + WPack<WT>::kPer - 1) / WPack<WT>::kPer;
}
// element e of a weight row -> the f32 weights it holds (h = e * kPer ...), those below H
inline void w_unpack(int8_t w, float* row, int64_t e, int64_t) { row[e] = w_to_f(w); }
inline void w_unpack(uint16_t w, float* row, int64_t e, int64_t) { row[e] = w_to_f(w); }
inline void w_unpack(float w, float* row, int64_t e, int64_t) { row[e] = w; }
inline void w_unpack(i4x2 w, float* row, int64_t e, int64_t H) {
  row[2 * e] = i4_lo(w);
  if (2 * e + 1 < H) row[2 * e + 1] = i4_hi(w);
}

// ---- draft LM head: logits[r, v] = scale_v * sum_h w[v, h] * x[r, h] ------------------------
// The weight row v is read ONCE and applied to all R on-chip hidden rows (weights streamed).
// wrow: on-chip buffer of H floats.
// One logit, in the order of the fused design's MAC array (draft_pipeline.cpp, e4f_perf.h): lane k of
// E4F_LMH_LANES sums the products of h = k, k + LANES, ... in ascending h (f32, from +0), the lanes are
// combined by lm_tree, then the per-row scale (int8, int4). The LM head is a fused-only stage (no P0 kernel
// fixes its order); this order is its definition for both chains.
inline float lm_tree(const float (&p)[E4F_LMH_LANES]) {
  // pairwise: level s adds lane l + s into lane l (l < s), s = LANES/2 .. 1 (a fixed tree of LANES - 1 adders)
  float t[E4F_LMH_LANES];
  for (int l = 0; l < E4F_LMH_LANES; ++l) t[l] = p[l];
  for (int s = E4F_LMH_LANES / 2; s > 0; s >>= 1)
    for (int l = 0; l < s; ++l) t[l] = t[l] + t[l + s];
  return t[0];
}
inline float lm_dot(const float* wrow, const float* x, int64_t H, bool use_scale, float sc) {
  float part[E4F_LMH_LANES];
  for (int l = 0; l < E4F_LMH_LANES; ++l) part[l] = 0.0f;
  for (int h = 0; h < H; ++h) {
    const float prod = wrow[h] * x[h];
    part[h % E4F_LMH_LANES] = part[h % E4F_LMH_LANES] + prod;
  }
  float acc = lm_tree(part);
  if (use_scale) acc = acc * sc;
  return acc;
}
template <typename WT, typename PW>
inline float load_wrow(PW w, int64_t v, int64_t H, float* wrow) {
  const int64_t E = w_row_elems<WT>(H);  // a packed int4 row is ceil(H / 2) bytes
  for (int64_t e = 0; e < E; ++e) w_unpack(static_cast<WT>(w[v * E + e]), wrow, e, H);
  return 0.0f;
}
template <typename WT, typename PW, typename PS, typename PL>
void lm_head(PW w, PS scales, bool use_scale, const float* x, int64_t R, int64_t H, int64_t V, PL logits,
             int64_t logit_stride, float* wrow) {
  for (int v = 0; v < V; ++v) {
    load_wrow<WT>(w, v, H, wrow);
    const float sc = use_scale ? static_cast<float>(scales[v]) : 1.0f;
    for (int r = 0; r < R; ++r) logits[r * logit_stride + v] = lm_dot(wrow, x + r * H, H, use_scale, sc);
  }
}

// ---- K5 row statistics (§5.4): argmax on raw logits, m = max(x/temp), s = sum exp(x/temp - m)
// with 16 partial sums folded in a fixed order. p_v = expf(l_v/temp - m) / s.
struct RowStats {
  float m;
  float s;
  int64_t amax;
};
inline bool greedy_temp(float t) { return t < 1e-6f; }
// exp used by K5/K6. Variant 0 (every synthesized design): expf. Variant 1 (testbench only):
// exp2f(x * log2(e)) in f32, the few-ulp formulation of fast GPU / HLS exp cores, standing in for
// another platform's exp in the K5 -> K6 agreement measurement (§9.2 caveat).
#ifdef EAGLE4_SYNTHESIS
inline float exp_f(float x) { return std::exp(x); }
#else
inline int& exp_variant() {  // the testbench's switch: not part of the synthesized design
  static int v = 0;
  return v;
}
inline float exp_f(float x) {
  return exp_variant() == 1 ? std::exp2(x * 1.44269504f) : std::exp(x);
}
#endif

// E4F_ROW_LANES elements per iteration (the row buffers the callers pass are partitioned cyclically by 16:
// draft_pipeline.cpp row, verify_pipeline.cpp rowbuf): lane j takes v = j, j + LANES, ... in ascending order and the
// lanes are combined in index order, so every result is bit-identical to one sequential pass: the argmax
// and the max are the first NaN, else the first index of the maximum (the same rule per lane, then the
// smallest index across lanes); the exp sum's 16 partials are exactly the lanes (part[v & 15]).
#define E4F_ROW_LANES 16
static_assert(E4F_ROW_LANES == 16 && E4F_LANES_ROW_AMAX == E4F_ROW_LANES && E4F_LANES_ROW_MAX == E4F_ROW_LANES &&
                  E4F_LANES_ROW_EXP == E4F_ROW_LANES,
              "the exp sum's 16 partial sums are the lanes, and the cycle model's lanes are these");

struct LaneBest {  // the first NaN, else the first maximum, of the values a lane has seen
  float x;
  int64_t i;  // -1: none yet
};
inline void lane_take(LaneBest& b, float x, int64_t i) {
  if (b.i < 0) {
    b.x = x;
    b.i = i;
  } else if (!isnan_f(b.x) && (isnan_f(x) || x > b.x)) {
    b.x = x;
    b.i = i;
  }
}
inline LaneBest lanes_first_best(const LaneBest* l) {
  LaneBest r{0.0f, -1};
  for (int j = 0; j < E4F_ROW_LANES; ++j)  // the first NaN overall
    if (l[j].i >= 0 && isnan_f(l[j].x) && (r.i < 0 || l[j].i < r.i)) r = l[j];
  if (r.i >= 0) return r;
  for (int j = 0; j < E4F_ROW_LANES; ++j)  // else the first index of the maximum
    if (l[j].i >= 0 && (r.i < 0 || l[j].x > r.x || (l[j].x == r.x && l[j].i < r.i))) r = l[j];
  return r;
}

template <typename PR>
RowStats row_stats(PR row, int64_t V, float temp, bool greedy) {
  RowStats st;
  LaneBest la[E4F_ROW_LANES];
#pragma HLS ARRAY_PARTITION variable = la type = complete dim = 1
  for (int j = 0; j < E4F_ROW_LANES; ++j) la[j] = LaneBest{0.0f, -1};
  for (int v0 = 0; v0 < V; v0 += E4F_ROW_LANES) {
#pragma HLS PIPELINE II = E4F_II_ROW_AMAX
    E4F_TRIPS(ROW_AMAX, E4F_LANES_ROW_AMAX);
    for (int j = 0; j < E4F_ROW_LANES; ++j) {
#pragma HLS UNROLL factor = E4F_LANES_ROW_AMAX
      if (v0 + j < V) lane_take(la[j], static_cast<float>(row[v0 + j]), v0 + j);
    }
  }
  st.amax = lanes_first_best(la).i;
  st.m = 0.0f;
  st.s = 1.0f;
  if (greedy) return st;
  LaneBest lm[E4F_ROW_LANES];
#pragma HLS ARRAY_PARTITION variable = lm type = complete dim = 1
  for (int j = 0; j < E4F_ROW_LANES; ++j) lm[j] = LaneBest{-kInf, -1};
  for (int v0 = 0; v0 < V; v0 += E4F_ROW_LANES) {
#pragma HLS PIPELINE II = E4F_II_ROW_MAX
    E4F_TRIPS(ROW_MAX, E4F_LANES_ROW_MAX);
    for (int j = 0; j < E4F_ROW_LANES; ++j) {
#pragma HLS UNROLL factor = E4F_LANES_ROW_MAX
      if (v0 + j < V) lane_take(lm[j], static_cast<float>(row[v0 + j]) / temp, v0 + j);
    }
  }
  // m starts at -inf: a row of -inf (or an empty one) keeps it
  const LaneBest mb = lanes_first_best(lm);
  const float m = (mb.i < 0 || (!isnan_f(mb.x) && !(mb.x > -kInf))) ? -kInf : mb.x;
  float part[E4F_ROW_LANES];
#pragma HLS ARRAY_PARTITION variable = part type = complete dim = 1
  for (int i = 0; i < E4F_ROW_LANES; ++i) part[i] = 0.0f;
  for (int v0 = 0; v0 < V; v0 += E4F_ROW_LANES) {
#pragma HLS PIPELINE II = E4F_II_ROW_EXP
    E4F_TRIPS(ROW_EXP, E4F_LANES_ROW_EXP);
    for (int j = 0; j < E4F_ROW_LANES; ++j) {
#pragma HLS UNROLL factor = E4F_LANES_ROW_EXP
      if (v0 + j < V) {
        const float x = static_cast<float>(row[v0 + j]) / temp;
        part[j] = part[j] + exp_f(x - m);
      }
    }
  }
  float s = 0.0f;
  for (int i = 0; i < E4F_ROW_LANES; ++i) s = s + part[i];
  st.m = m;
  st.s = s;
  return st;
}
inline float proba(float logit, float temp, const RowStats& st) {
  return exp_f(logit / temp - st.m) / st.s;
}

// ---- external draft top-K (§5.4 step 6, D24): best K of a probability row, (p desc, v asc) ----
// E4F_LANES_TOPK_SCAN lanes: lane j keeps the best K of the elements v = j, j + LANES, ... (a sorted list
// of K registers, one insertion per cycle: every entry compares with the new element at once), then the
// lanes' lists merge, best head first. `before` is a total order (ties broken by the unique index), so
// the K selected and their order are exactly those of one sequential scan.
#define E4F_TOPK_LANES E4F_LANES_TOPK_SCAN
inline void topk_insert(float* lp, int32_t* li, int& n, int K, float p, int v) {
  int pos = 0;  // entries ranked before the new element (the list is sorted)
  for (int q = 0; q < E4F_MAX_K; ++q)
    if (q < n && before(lp[q], li[q], p, v)) ++pos;
  if (pos >= K) return;
  for (int q = E4F_MAX_K - 1; q > 0; --q)  // shift the entries after pos one down (the K-th falls off)
    if (q > pos && q < K && q - 1 < n) {
      lp[q] = lp[q - 1];
      li[q] = li[q - 1];
    }
  lp[pos] = p;
  li[pos] = v;
  if (n < K) ++n;
}
template <typename PR>
void topk_row(PR row, int64_t V, int K, float* op, int64_t* oi) {
  float tk_p[E4F_TOPK_LANES][E4F_MAX_K];
  int32_t tk_i[E4F_TOPK_LANES][E4F_MAX_K];
  int tk_n[E4F_TOPK_LANES];
#pragma HLS ARRAY_PARTITION variable = tk_p type = complete dim = 0
#pragma HLS ARRAY_PARTITION variable = tk_i type = complete dim = 0
#pragma HLS ARRAY_PARTITION variable = tk_n type = complete dim = 0
  for (int j = 0; j < E4F_TOPK_LANES; ++j) tk_n[j] = 0;
  for (int v0 = 0; v0 < V; v0 += E4F_TOPK_LANES) {
#pragma HLS PIPELINE II = E4F_II_TOPK_SCAN
    E4F_TRIPS(TOPK_SCAN, E4F_LANES_TOPK_SCAN);
    for (int j = 0; j < E4F_TOPK_LANES; ++j) {
#pragma HLS UNROLL factor = E4F_LANES_TOPK_SCAN
      if (v0 + j < V) topk_insert(tk_p[j], tk_i[j], tk_n[j], K, row[v0 + j], v0 + j);  // the row's tail: masked
    }
  }
  int head[E4F_TOPK_LANES];
#pragma HLS ARRAY_PARTITION variable = head type = complete dim = 0
  for (int j = 0; j < E4F_TOPK_LANES; ++j) head[j] = 0;
  const int n = V < K ? static_cast<int>(V) : K;
  for (int k = 0; k < n; ++k) {  // the merge: the best head of the lanes, K times
#pragma HLS PIPELINE II = E4F_II_TOPK_MERGE
    E4F_TRIPS(TOPK_MERGE, 1);
    int best = -1;
    for (int j = 0; j < E4F_TOPK_LANES; ++j)
      if (head[j] < tk_n[j] &&
          (best < 0 || before(tk_p[j][head[j]], tk_i[j][head[j]], tk_p[best][head[best]], tk_i[best][head[best]])))
        best = j;
    op[k] = tk_p[best][head[best]];
    oi[k] = tk_i[best][head[best]];
    ++head[best];
  }
}

// ---- verify-set selection (§8.2 step 1, D14/D16/D18) for one request ----------------------
// Reads the request's cumulative state through accessors; writes the verify tree of Q tokens.
struct VerifyTree {
  int64_t node[E4F_MAX_Q];
  int64_t cand[E4F_MAX_Q];
  int64_t parent[E4F_MAX_Q];
  int64_t next_tok[E4F_MAX_Q];
  int64_t next_sib[E4F_MAX_Q];
};
template <typename PSc, typename PTok, typename PPrev>
void select_verify(PSc scores, PTok tokens, PPrev prev, int64_t n_nodes, int64_t Q, VerifyTree& vt) {
  // best Q-1 among nodes 1..n_nodes-1: insertion into a sorted list (key desc, id asc)
  float bs[E4F_MAX_Q];
  int64_t bi[E4F_MAX_Q];
  int n = 0;
  const int want = static_cast<int>(Q - 1);
  for (int g = 1; g < n_nodes && want > 0; ++g) {
    const float s = scores[g];
    if (n == want && !before(s, g, bs[want - 1], bi[want - 1])) continue;
    int pos = (n < want) ? n++ : want - 1;
    while (pos > 0 && before(s, g, bs[pos - 1], bi[pos - 1])) {
      bs[pos] = bs[pos - 1];
      bi[pos] = bi[pos - 1];
      --pos;
    }
    bs[pos] = s;
    bi[pos] = g;
  }
  // ascending node id: root first, then the selected ids sorted
  vt.node[0] = 0;
  for (int i = 0; i < n; ++i) {
    int64_t g = bi[i];
    int pos = i + 1;
    while (pos > 1 && vt.node[pos - 1] > g) {
      vt.node[pos] = vt.node[pos - 1];
      --pos;
    }
    vt.node[pos] = g;
  }
  for (int t = 0; t < Q; ++t) {
    vt.cand[t] = tokens[vt.node[t]];
    vt.next_tok[t] = -1;
    vt.next_sib[t] = -1;
    if (t == 0) {
      vt.parent[t] = -1;
      continue;
    }
    const int64_t pg = prev[vt.node[t]];
    int64_t pl = -1;
    for (int u = 0; u < t; ++u)
      if (vt.node[u] == pg) pl = u;
    vt.parent[t] = pl;
  }
  for (int t = Q - 1; t >= 1; --t) {  // smallest child first, siblings ascending
    const int64_t p = vt.parent[t];
    if (p < 0) continue;
    vt.next_sib[t] = vt.next_tok[p];
    vt.next_tok[p] = t;
  }
}

// ---- K6 walk (§6.5) and final sampling (§6.6) for one request ------------------------------
// prob(row, tok) returns target_probs[b,row,tok] (unfused: an HBM read; fused: recomputed from
// the logit and the row's (m, s)). final_row(row, buf) fills buf[0..V) with the final row's
// probabilities and returns nothing (unfused: an HBM row read; fused: logits row re-read).
struct K6Out {
  int64_t row_pred;  // greedy: target_predict of the final row (read once per visited row)
  int64_t n;
  int64_t last;
  int64_t row;
  int32_t acc_row[E4F_MAX_S];
  int64_t rej[E4F_MAX_Q];
  int nrej;
};
template <typename FProb, typename PPred>
void k6_walk(const int64_t* cand, const int64_t* ridx, const int64_t* next_tok, const int64_t* next_sib,
             const float* coins, int64_t Q, int64_t S, int64_t V, bool greedy, PPred predict_rows,
             float thr_single, float thr_acc_in, FProb prob, int32_t* pred /*[Q] local*/, K6Out& o) {
  const float thr_acc = (thr_acc_in < 1e-9f) ? 1e-9f : thr_acc_in;
  for (int i = 0; i < Q; ++i) pred[i] = -1;
  for (int j = 0; j < S; ++j) o.acc_row[j] = -1;
  int64_t row = 0, last = ridx[0], n = 0, cur = 0;
  o.acc_row[0] = static_cast<int32_t>(last);
  float prob_acc = 0.0f, coin = coins[0];
  int64_t row_pred = greedy ? static_cast<int64_t>(predict_rows[0]) : 0;
  o.nrej = 0;
  for (int j = 1; j < S; ++j) {
    cur = next_tok[cur];
    bool accepted = false;
    while (cur != -1) {
      const int64_t tok = cand[cur];
      if (tok < 0 || tok >= V) {
        cur = next_sib[cur];
        continue;
      }
      bool acc;
      if (greedy) {
        acc = (tok == row_pred);
      } else {
        const float p = prob(row, tok);
        prob_acc = prob_acc + p;
        acc = (coin <= prob_acc / thr_acc) || (p >= thr_single);
      }
      if (acc) {
        pred[last - ridx[0]] = static_cast<int32_t>(tok);
        ++n;
        last = ridx[cur];
        o.acc_row[n] = static_cast<int32_t>(last);
        row = cur;
        if (greedy) row_pred = predict_rows[cur];
        coin = coins[cur];
        prob_acc = 0.0f;
        o.nrej = 0;
        accepted = true;
        break;
      }
      o.rej[o.nrej++] = tok;
      cur = next_sib[cur];
    }
    if (!accepted) break;
  }
  // sort + dedupe Rej (ascending) for the one-pointer exclusion while streaming the row
  for (int i = 1; i < o.nrej; ++i) {
    int64_t x = o.rej[i];
    int k = i;
    while (k > 0 && o.rej[k - 1] > x) {
      o.rej[k] = o.rej[k - 1];
      --k;
    }
    o.rej[k] = x;
  }
  int u = 0;
  for (int i = 0; i < o.nrej; ++i)
    if (u == 0 || o.rej[u - 1] != o.rej[i]) o.rej[u++] = o.rej[i];
  o.nrej = u;
  o.n = n;
  o.last = last;
  o.row = row;
  o.row_pred = row_pred;
}
inline uint64_t quant(float t) {
  if (!(t > 0.0f)) return 0;
  return static_cast<uint64_t>(t * 4294967296.0f);
}
// §5.4 step 1 argmax rule (NaN largest, first NaN wins, lowest index on ties): the K6 fallback
inline int64_t argmax_row(const float* t, int64_t V) {
  float best = t[0];
  int64_t bi = 0;
  for (int v = 1; v < V; ++v) {
    if (isnan_f(best)) break;
    if (isnan_f(t[v]) || t[v] > best) {
      best = t[v];
      bi = v;
    }
  }
  return bi;
}
// inverse CDF over an on-chip row (residual already excluding Rej): §6.6 steps 2-4
inline int64_t k6_sample(const float* t, int64_t V, const int64_t* rej, int nrej, float final_coin) {
  uint64_t R = 0;
  int rp = 0;
  for (int v = 0; v < V; ++v) {
    while (rp < nrej && rej[rp] < v) ++rp;
    const bool ex = (rp < nrej && rej[rp] == v);
    R += ex ? 0 : quant(t[v]);
  }
  if (R == 0) return argmax_row(t, V);
  uint64_t c = static_cast<uint64_t>(final_coin * 16777216.0f);
  if (c > 16777215ull) c = 16777215ull;
  const uint64_t u = c * (R >> 24) + ((c * (R & 0xFFFFFFull)) >> 24);
  uint64_t acc = 0;
  rp = 0;
  for (int v = 0; v < V; ++v) {
    while (rp < nrej && rej[rp] < v) ++rp;
    const bool ex = (rp < nrej && rej[rp] == v);
    acc += ex ? 0 : quant(t[v]);
    if (acc > u) return v;
  }
  return V - 1;  // unreachable for R > 0
}

// host finish rule (§8.2 step 6), DECIDED for the fused design: the first accepted position whose
// next token is `eos` or that exhausts the request's remaining token budget.
inline int32_t finish_rule(const int32_t* acc_row, int64_t a, const int32_t* predicts_flat, int64_t eos,
                           int64_t remaining) {
  for (int j = 0; j <= a; ++j) {
    const int32_t tok = predicts_flat[acc_row[j]];
    if ((eos >= 0 && tok == eos) || j + 1 >= remaining) return static_cast<int32_t>(j);
  }
  return -1;
}

}  // namespace e4f

#endif


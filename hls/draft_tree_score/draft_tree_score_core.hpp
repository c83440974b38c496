// K1 draft_tree_layer_score_index_gen_op (KERNELS.md §1.5): the per-request core (steps 1-4:
// score, hot remap, sort, top-K projection), shared by draft_tree_score_top (operands on m_axi
// ports) and the fused draft pipeline (operands in on-chip arrays / streams). Every accessor is
// anything indexable like a pointer (a PORT(T), a raw pointer, an on-chip array), offset to the
// request's row by the caller. Step 5 (the hidden-row gather) stays with the caller: the per-kernel
// top copies K rows between HBM buffers, the fused design copies only the rows the next layer feeds.
#ifndef EAGLE4_DRAFT_TREE_SCORE_CORE_HPP
#define EAGLE4_DRAFT_TREE_SCORE_CORE_HPP

#include <cstdint>

#include "draft_tree_score.hpp"

namespace eagle4 {
namespace k1 {

// Full bitonic network over SORT_LANES lanes; afterwards lanes are ordered by k1::before.
inline void bitonic_sort(float key[SORT_LANES], int idx[SORT_LANES]) {
#pragma HLS INLINE
sort_stage:
  for (int ks = 1; ks <= SORT_LOG2; ++ks) {
  sort_pass:
    for (int js = ks - 1; js >= 0; --js) {
#pragma HLS PIPELINE II = 1
      const int k = 1 << ks, j = 1 << js;
    sort_lane:
      for (int i = 0; i < SORT_LANES; ++i) {
#pragma HLS UNROLL
        const int l = i ^ j;
        if (l > i) {  // each pair once; no validity guard: pads take part like any lane
          const bool ascending_block = (i & k) == 0;  // this block ends ordered by `before`
          const bool swap = ascending_block ? before(key[l], idx[l], key[i], idx[i])
                                            : before(key[i], idx[i], key[l], idx[l]);
          if (swap) {
            const float tk = key[i];
            key[i] = key[l];
            key[l] = tk;
            const int ti = idx[i];
            idx[i] = idx[l];
            idx[l] = ti;
          }
        }
      }
    }
  }
}

// One request b. Row accessors: probas, tokens (in/out on the hot path), curr, sort_s, sort_i: the
// request's C = W*K entries; last: its W parent scores; cache, parent, out_tokens: its K entries.
// hot = use_hot_token_id && tokens connected (tokens are remapped in place through hot_token_id).
// out_tokens is written only when write_output_tokens. par_slot[r]: parent slot of top-K row r
// (unclamped), for the caller's hidden gather. Preconditions (checked by the caller):
// 1 <= K <= MAX_TOP_K, W >= 1, W*K <= MAX_CANDIDATES.
template <typename PProb, typename PTok, typename PLast, typename PHot, typename PCurr, typename PSortS,
          typename PSortI, typename PCache, typename PPar, typename POutTok>
void score_request(PProb probas, PTok tokens, PLast last, PHot hot_token_id, int64_t hot_len, bool hot, int K, int W,
                   int64_t cumu_count, PCurr curr, PSortS sort_s, PSortI sort_i, PCache cache, PPar parent,
                   POutTok out_tokens, bool write_output_tokens, int par_slot[MAX_TOP_K]) {
#pragma HLS INLINE
  const int C = W * K;
  float lls[MAX_CANDIDATES];  // W <= C
  float s[MAX_CANDIDATES];    // products, kept for the bit-exact sorted copy
  int64_t tok[MAX_CANDIDATES];
  float key[SORT_LANES];
  int idx[SORT_LANES];
  int top[MAX_TOP_K];
#pragma HLS ARRAY_PARTITION variable = key complete
#pragma HLS ARRAY_PARTITION variable = idx complete
#pragma HLS ARRAY_PARTITION variable = top complete

load_parent_scores:
  for (int w = 0; w < W; ++w) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
    lls[w] = last[w];
  }
  int slot = 0, kk = 0;  // c = slot*K + kk, tracked by counters instead of a divider
  // the C candidates (every port access unconditional), then the pad lanes of the network on chip
score:
  for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
    const float p = probas[c];
    const float v = p * lls[slot];  // exactly one binary32 multiply (no contraction)
    if (++kk == K) {
      kk = 0;
      ++slot;
    }
    s[c] = v;
    curr[c] = v;
    key[c] = sort_key(v);
    idx[c] = c;
  }
pad_lanes:
  for (int c = C; c < SORT_LANES; ++c) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 63
    key[c] = -__builtin_inff();  // pad lane: (-inf, lane)
    idx[c] = c;
  }
  if (hot) {  // the hot path in its own loop: no loop-invariant test around its port accesses
  remap_tokens:
    for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
      int64_t t = tokens[c];
      if (t >= 0 && t < hot_len) t = hot_token_id[t];
      tok[c] = t;
      tokens[c] = t;  // in place: K2 consumes the remapped tensor
    }
  }

  bitonic_sort(key, idx);

write_sorted:
  for (int r = 0; r < C; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
    const int p = idx[r];
    sort_s[r] = s[p];  // bit copy of the product (NaN payload, sign kept)
    sort_i[r] = p;
    if (r < K) top[r] = p;
  }
project_top_k:
  for (int r = 0; r < K; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 10
    const int p = top[r];
    const int par = p / K;  // K <= MAX_TOP_K iterations: a small divider
    cache[r] = cumu_count + p;
    parent[r] = par;
    par_slot[r] = par;
  }
  // the optional token output: one loop per case (remapped tokens on chip, or the K winners from the port)
  if (write_output_tokens && hot) {
  project_tokens_hot:
    for (int r = 0; r < K; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 10
      out_tokens[r] = tok[top[r]];
    }
  } else if (write_output_tokens) {
  project_tokens:
    for (int r = 0; r < K; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 10
      out_tokens[r] = static_cast<int64_t>(tokens[top[r]]);
    }
  }
}

}  // namespace k1
}  // namespace eagle4

#endif  // EAGLE4_DRAFT_TREE_SCORE_CORE_HPP

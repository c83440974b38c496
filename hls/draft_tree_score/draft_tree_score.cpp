// K1 draft_tree_layer_score_index_gen_op (KERNELS.md §1.5), per request b:
//   1. s[c] = topk_probas_sampling[b,c] * last_layer_scores[b, c div K]   (one f32 multiply)
//   2. hot path: tokens remapped in place through hot_token_id (ids outside [0, Vh) pass through)
//   3. sort: a full SORT_LANES-lane bitonic network, pad lanes (-inf, lane), comparator
//      (key desc with NaN as -inf and -0 == +0, index asc), every compare-exchange executed
//      (§12 P1: the public port's "both lanes valid" guard is NOT reproduced; it leaves every
//      non-power-of-two C unsorted)
//   4. top-K projection: cache id cc + pi(r), parent pi(r) div K, optional token
//   5. hidden gather: bit copy of input row b*W + parent (parent clamped to [0, W-1]).
// Each input element is read once (tokens: all C on the hot path, else only the K winners).
#include "draft_tree_score.hpp"

namespace {

using eagle4::MAX_CANDIDATES;
using eagle4::MAX_TOP_K;
using eagle4::SORT_LANES;
using eagle4::SORT_LOG2;

// Full bitonic network over SORT_LANES lanes; afterwards lanes are ordered by k1::before.
void bitonic_sort(float key[SORT_LANES], int idx[SORT_LANES]) {
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
          const bool swap = ascending_block ? eagle4::k1::before(key[l], idx[l], key[i], idx[i])
                                            : eagle4::k1::before(key[i], idx[i], key[l], idx[l]);
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

template <typename HW>
void draft_tree_score_core(EAGLE4_K1_TOP_ARGS(HW)) {
  const int B = batch_size, K = node_top_k, W = tree_width, C = W * K, H = hidden_size;
  if (B < 0 || K < 1 || W < 1 || C > MAX_CANDIDATES || K > MAX_TOP_K) return;  // §1.5: do nothing
  const bool hot = use_hot_token_id && has_tokens;

  float lls[MAX_CANDIDATES];  // W <= C
  float s[MAX_CANDIDATES];    // products, kept for the bit-exact sorted copy
  int64_t tok[MAX_CANDIDATES];
  float key[SORT_LANES];
  int idx[SORT_LANES];
  int top[MAX_TOP_K];
  int par_slot[MAX_TOP_K];
#pragma HLS ARRAY_PARTITION variable = key complete
#pragma HLS ARRAY_PARTITION variable = idx complete
#pragma HLS ARRAY_PARTITION variable = top complete
#pragma HLS ARRAY_PARTITION variable = par_slot complete

per_request:
  for (int b = 0; b < B; ++b) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 128
    const int64_t rowC = static_cast<int64_t>(b) * C;
  load_parent_scores:
    for (int w = 0; w < W; ++w) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
      lls[w] = last_layer_scores[static_cast<int64_t>(b) * W + w];
    }
    int slot = 0, kk = 0;  // c = slot*K + kk, tracked by counters instead of a divider
  score:
    for (int c = 0; c < SORT_LANES; ++c) {
#pragma HLS PIPELINE II = 1
      if (c < C) {
        const float p = topk_probas_sampling[rowC + c];
        const float v = p * lls[slot];  // exactly one binary32 multiply (no contraction)
        if (++kk == K) {
          kk = 0;
          ++slot;
        }
        s[c] = v;
        curr_layer_scores[rowC + c] = v;
        key[c] = eagle4::k1::sort_key(v);
        if (hot) {
          int64_t t = topk_tokens_sampling[rowC + c];
          if (t >= 0 && t < hot_len) t = hot_token_id[t];
          tok[c] = t;
          topk_tokens_sampling[rowC + c] = t;  // in place: K2 consumes the remapped tensor
        }
      } else {
        key[c] = -__builtin_inff();  // pad lane: (-inf, lane)
      }
      idx[c] = c;
    }

    bitonic_sort(key, idx);

  write_sorted:
    for (int r = 0; r < C; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
      const int p = idx[r];
      sort_layer_scores[rowC + r] = s[p];  // bit copy of the product (NaN payload, sign kept)
      sort_layer_indices[rowC + r] = p;
      if (r < K) top[r] = p;
    }
  project_top_k:
    for (int r = 0; r < K; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 10
      const int p = top[r];
      const int64_t o = static_cast<int64_t>(b) * K + r;
      const int parent = p / K;  // K <= MAX_TOP_K iterations: a small divider
      cache_topk_indices[o] = cumu_count + p;
      parent_indices_in_layer[o] = parent;
      par_slot[r] = parent;
      if (write_output_tokens) output_tokens[o] = hot ? tok[p] : static_cast<int64_t>(topk_tokens_sampling[rowC + p]);
    }
  gather_rows:
    for (int r = 0; r < K; ++r) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 10
      int parent = par_slot[r];
      parent = parent < 0 ? 0 : (parent > W - 1 ? W - 1 : parent);  // never triggers for valid inputs
      const int64_t src = (static_cast<int64_t>(b) * W + parent) * H;
      const int64_t dst = (static_cast<int64_t>(b) * K + r) * H;
    gather_copy:
      for (int h = 0; h < H; ++h) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 4096
        output_hidden_states[dst + h] = input_hidden_states[src + h];
      }
    }
  }
}

}  // namespace

#define EAGLE4_K1_INTERFACE                                                                                       \
  _Pragma("HLS INTERFACE m_axi port = topk_probas_sampling offset = slave bundle = gmem0 depth = 8192")          \
  _Pragma("HLS INTERFACE m_axi port = topk_tokens_sampling offset = slave bundle = gmem1 depth = 8192")          \
  _Pragma("HLS INTERFACE m_axi port = last_layer_scores offset = slave bundle = gmem0 depth = 8192")             \
  _Pragma("HLS INTERFACE m_axi port = curr_layer_scores offset = slave bundle = gmem2 depth = 8192")             \
  _Pragma("HLS INTERFACE m_axi port = sort_layer_scores offset = slave bundle = gmem2 depth = 8192")             \
  _Pragma("HLS INTERFACE m_axi port = sort_layer_indices offset = slave bundle = gmem2 depth = 8192")            \
  _Pragma("HLS INTERFACE m_axi port = cache_topk_indices offset = slave bundle = gmem2 depth = 1280")            \
  _Pragma("HLS INTERFACE m_axi port = parent_indices_in_layer offset = slave bundle = gmem2 depth = 1280")       \
  _Pragma("HLS INTERFACE m_axi port = output_tokens offset = slave bundle = gmem2 depth = 1280")                 \
  _Pragma("HLS INTERFACE m_axi port = hot_token_id offset = slave bundle = gmem1 depth = 32768")                 \
  _Pragma("HLS INTERFACE m_axi port = input_hidden_states offset = slave bundle = gmem3 depth = 33554432 max_read_burst_length = 256 max_widen_bitwidth = 512") \
  _Pragma("HLS INTERFACE m_axi port = output_hidden_states offset = slave bundle = gmem4 depth = 5242880 max_write_burst_length = 256 max_widen_bitwidth = 512") \
  _Pragma("HLS INTERFACE s_axilite port = batch_size")                                                           \
  _Pragma("HLS INTERFACE s_axilite port = node_top_k")                                                           \
  _Pragma("HLS INTERFACE s_axilite port = tree_width")                                                           \
  _Pragma("HLS INTERFACE s_axilite port = cumu_count")                                                           \
  _Pragma("HLS INTERFACE s_axilite port = use_hot_token_id")                                                     \
  _Pragma("HLS INTERFACE s_axilite port = hot_len")                                                              \
  _Pragma("HLS INTERFACE s_axilite port = hidden_size")                                                          \
  _Pragma("HLS INTERFACE s_axilite port = has_tokens")                                                           \
  _Pragma("HLS INTERFACE s_axilite port = write_output_tokens")                                                  \
  _Pragma("HLS INTERFACE s_axilite port = return")

#define EAGLE4_K1_FORWARD                                                                                     \
  topk_probas_sampling, topk_tokens_sampling, last_layer_scores, curr_layer_scores, sort_layer_scores,      \
      sort_layer_indices, cache_topk_indices, parent_indices_in_layer, input_hidden_states,                 \
      output_hidden_states, hot_token_id, output_tokens, batch_size, node_top_k, tree_width, cumu_count,    \
      use_hot_token_id, hot_len, hidden_size, has_tokens, write_output_tokens

void draft_tree_score_top(EAGLE4_K1_TOP_ARGS(uint16_t)) {
  EAGLE4_K1_INTERFACE
  draft_tree_score_core<uint16_t>(EAGLE4_K1_FORWARD);
}

void draft_tree_score_top_f32(EAGLE4_K1_TOP_ARGS(uint32_t)) {
  EAGLE4_K1_INTERFACE
  draft_tree_score_core<uint32_t>(EAGLE4_K1_FORWARD);
}

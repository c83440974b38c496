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

#include "draft_tree_score_core.hpp"

namespace {

using eagle4::MAX_CANDIDATES;
using eagle4::MAX_TOP_K;

// 32-bit row offsets: B*W hidden rows of H elements, B*C candidates.
static_assert(int64_t(eagle4::MAX_BATCH_SIZE) * MAX_CANDIDATES * eagle4::MAX_HIDDEN <= INT32_MAX, "hidden-row offsets fit 32 bits");

template <typename HW>
void draft_tree_score_core(EAGLE4_K1_TOP_ARGS(HW)) {
  const int B = batch_size, K = node_top_k, W = tree_width, C = W * K, H = hidden_size;
  if (B < 0 || K < 1 || W < 1 || C > MAX_CANDIDATES || K > MAX_TOP_K) return;  // §1.5: do nothing
  const bool hot = use_hot_token_id && has_tokens;

  int par_slot[MAX_TOP_K];
#pragma HLS ARRAY_PARTITION variable = par_slot complete

per_request:
  for (int b = 0; b < B; ++b) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 128
    const int rowC = b * C, rowK = b * K;  // 32-bit offsets (static_assert below)
    // steps 1-4 (draft_tree_score_core.hpp)
    eagle4::k1::score_request(topk_probas_sampling + rowC, has_tokens ? topk_tokens_sampling + rowC : topk_tokens_sampling,
                              last_layer_scores + b * W, hot_token_id, hot_len, hot, K, W,
                              cumu_count, curr_layer_scores + rowC, sort_layer_scores + rowC,
                              sort_layer_indices + rowC, cache_topk_indices + rowK, parent_indices_in_layer + rowK,
                              write_output_tokens ? output_tokens + rowK : output_tokens, write_output_tokens, par_slot);
  gather_rows:
    for (int r = 0; r < K; ++r) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 10
      int parent = par_slot[r];
      parent = parent < 0 ? 0 : (parent > W - 1 ? W - 1 : parent);  // never triggers for valid inputs
      const int src = (b * W + parent) * H;
      const int dst = (rowK + r) * H;
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

// K1 draft_tree_layer_score_index_gen_op (KERNELS.md §1): synthesizable tops.
//
// The hidden states are carried as raw bits (never converted): one top per element width,
// draft_tree_score_top for 16-bit hidden (fp16 / bf16) and draft_tree_score_top_f32 for f32.
// Beyond the CUDA op's ABI the tops take the sizes the hardware needs as scalars: hot_len (Vh),
// hidden_size (H), and two presence flags (has_tokens: topk_tokens_sampling is connected;
// write_output_tokens: the HLS-extended output_tokens is written).
#ifndef EAGLE4_DRAFT_TREE_SCORE_HPP
#define EAGLE4_DRAFT_TREE_SCORE_HPP

#include <cstdint>

#include "eagle4_bounds.h"
#include "eagle4_port.h"

#define EAGLE4_K1_TOP_ARGS(HW)                                                                               \
  PORT(const float) topk_probas_sampling, PORT(int64_t) topk_tokens_sampling,                             \
      PORT(const float) last_layer_scores, PORT(float) curr_layer_scores, PORT(float) sort_layer_scores,  \
      PORT(int64_t) sort_layer_indices, PORT(int64_t) cache_topk_indices,                                 \
      PORT(int64_t) parent_indices_in_layer, PORT(const HW) input_hidden_states,                          \
      PORT(HW) output_hidden_states, PORT(const int64_t) hot_token_id, PORT(int64_t) output_tokens,       \
      int batch_size, int node_top_k, int tree_width, int64_t cumu_count, bool use_hot_token_id,          \
      int64_t hot_len, int hidden_size, bool has_tokens, bool write_output_tokens

void draft_tree_score_top(EAGLE4_K1_TOP_ARGS(uint16_t));
void draft_tree_score_top_f32(EAGLE4_K1_TOP_ARGS(uint32_t));

namespace eagle4 {
namespace k1 {
// The sort order of §1.5 step 3 on (score, index) pairs: true when (ka, ia) comes first, i.e. key
// descending (NaN as -inf, -0 == +0) then index ascending. A strict total order on distinct indices.
inline float sort_key(float s) { return s != s ? -__builtin_inff() : (s == 0.0f ? 0.0f : s); }
inline bool before(float ka, int ia, float kb, int ib) { return ka > kb || (ka == kb && ia < ib); }
}  // namespace k1
}  // namespace eagle4

#endif  // EAGLE4_DRAFT_TREE_SCORE_HPP

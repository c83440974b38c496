// K2 update_cumu_draft_state (KERNELS.md §2): synthesizable top.
// bool tensors (input_tree_mask, output_tree_mask) are byte arrays holding 0/1, copied as bytes.
#ifndef EAGLE4_UPDATE_DRAFT_STATE_HPP
#define EAGLE4_UPDATE_DRAFT_STATE_HPP

#include <cstdint>

#include "eagle4_bounds.h"
#include "eagle4_port.h"

void update_draft_state_top(PORT(const float) topk_probas, PORT(const int64_t) topk_tokens,
                            PORT(const float) sorted_scores, PORT(const int64_t) sorted_indexs,
                            PORT(const int64_t) parent_indexs, PORT(const int64_t) topk_indexs,
                            PORT(const uint8_t) input_tree_mask, int batch_size, int node_top_k, int tree_width,
                            int input_count, int64_t cumu_count, int64_t verify_num, int64_t curr_depth,
                            int max_input_size, int max_node_count, int max_verify_num, PORT(int64_t) cumu_tokens,
                            PORT(float) cumu_scores, PORT(int64_t) cumu_deltas, PORT(int64_t) prev_indexs,
                            PORT(int64_t) next_indexs, PORT(int64_t) side_indexs, PORT(float) output_scores,
                            PORT(int64_t) output_tokens, PORT(float) work_scores, PORT(float) sort_scores,
                            PORT(uint8_t) output_tree_mask);

extern const float EAGLE4_K2_DECAY;  // 0.9999f == 0x3F7FF972

#endif  // EAGLE4_UPDATE_DRAFT_STATE_HPP

// K6 draft_tree_reject_sample (KERNELS.md §6): tree walk with acceptance tests, then the final
// (bonus or correction) token by the integer inverse CDF of the residual.
#ifndef EAGLE4_REJECT_SAMPLE_HPP
#define EAGLE4_REJECT_SAMPLE_HPP

#include <cstdint>

#include "eagle4_port.h"
#include "reject_sample_bounds.h"

// Return codes of reject_sample_top (0 = success).
enum : int {
  K6_OK = 0,
  // a target_probs entry read by phases B/C is > 1 (or +inf): §6.6 step 2 precondition.
  K6_ERR_PROB_ABOVE_ONE = -3,
};

// Bounds and preconditions checked by the caller (the C-sim wrapper): 1 <= B <= k6::MAX_BATCH,
// 1 <= Q <= k6::MAX_VERIFY, 1 <= S <= k6::MAX_ACCEPT, 1 <= V <= k6::MAX_VOCAB,
// retrive_index[b,i] == b*Q + i, retrive_next_token / retrive_next_sibling in [-1, Q).
// On K6_ERR_PROB_ABOVE_ONE (an entry of a final row above 1; the outputs are then meaningless),
// *err_info holds the flat target_probs offset of the first offending entry, else -1.
// On-chip state kept between calls: the Rej bitmap, all zero on entry and on return.
int reject_sample_top(PORT(const int64_t) candidates, PORT(const int64_t) retrive_index,
                      PORT(const int64_t) retrive_next_token, PORT(const int64_t) retrive_next_sibling,
                      PORT(const float) target_probs, PORT(const int64_t) target_predict,
                      PORT(const uint8_t) is_greedy, PORT(const float) coins, PORT(const float) final_coins,
                      PORT(int32_t) predicts, PORT(int32_t) accept_index, PORT(int32_t) accept_length,
                      float threshold_single, float threshold_acc, int B, int Q, int S, int V,
                      int64_t* err_info);

#endif  // EAGLE4_REJECT_SAMPLE_HPP

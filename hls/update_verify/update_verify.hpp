// K7 update_verify_result (KERNELS.md §7): post-accept bookkeeping.
#ifndef EAGLE4_UPDATE_VERIFY_HPP
#define EAGLE4_UPDATE_VERIFY_HPP

#include <cstdint>

#include "eagle4_port.h"
#include "update_verify_bounds.h"

// Hidden rows (f16/bf16/f32) are bit-copied as 16-bit words: hidden_words = H * E_h / 2.
// bool outputs (evict_mask) are one byte holding 0 or 1.
// Bounds and preconditions (checked by the caller, e.g. the C-sim wrapper, as the reference does):
// 1 <= B <= k7::MAX_BATCH, 1 <= Q <= k7::MAX_VERIFY, 1 <= S <= k7::MAX_ACCEPT,
// 1 <= hidden_words <= k7::MAX_HIDDEN_WORDS; accept rows are a prefix of length accept_length+1
// of distinct positions of the request's own block [b*Q, (b+1)*Q); -1 <= finish_pos <= accept_length;
// 0 <= seq_lens, seq_lens + a_b + 1 <= S_max; req_pool_indices distinct in [0, P);
// out_cache_loc in [0, 2^31-1]. verify_node_ids / accepted_node_ids are used iff has_node_ids.
void update_verify_top(PORT(const int32_t) accept_index, PORT(const int32_t) accept_length,
                       PORT(const int32_t) predicts, PORT(const int32_t) finish_pos, PORT(const int64_t) seq_lens,
                       PORT(const int64_t) req_pool_indices, PORT(int32_t) req_to_token,
                       PORT(const int64_t) out_cache_loc, PORT(const uint16_t) hidden_states,
                       PORT(const int64_t) verify_node_ids, PORT(int32_t) accept_index_out,
                       PORT(int32_t) accept_length_out, PORT(int32_t) accept_indptr, PORT(int32_t) accepted_flat,
                       PORT(int32_t) verified_id, PORT(uint8_t) evict_mask, PORT(int64_t) free_slots,
                       PORT(int64_t) seq_lens_out, PORT(int64_t) accepted_node_ids, PORT(int32_t) unfinished_count,
                       PORT(int64_t) unfinished_index, PORT(int32_t) next_accept_length, PORT(int32_t) next_indptr,
                       PORT(int32_t) next_verified_id, PORT(uint16_t) next_hidden, PORT(int64_t) next_positions,
                       PORT(int64_t) next_seq_lens, PORT(int64_t) next_req_pool_indices,
                       PORT(int32_t) next_root_token, PORT(int32_t) next_last_flat, int B, int Q, int S,
                       int hidden_words, int64_t S_max, bool has_node_ids);

#endif  // EAGLE4_UPDATE_VERIFY_HPP

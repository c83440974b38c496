// K4 fused_tree_mask_operator (KERNELS.md §4, decisions D8, D21, D22): synthesizable top.
// bool mask_bool is a byte array holding 0/1.
#ifndef EAGLE4_TREE_MASK_HPP
#define EAGLE4_TREE_MASK_HPP

#include <cstdint>

#include "eagle4_bounds.h"
#include "eagle4_port.h"

void tree_mask_top(PORT(const int64_t) seq_lens, PORT(const int64_t) req_pool_indices,
                   PORT(const int32_t) req_to_token, int S_max, PORT(const int64_t) tree_cache_locs,
                   PORT(const int64_t) tree_parent, int B, int T, int Q, bool write_bool_mask,
                   PORT(int32_t) qo_indptr, PORT(int32_t) kv_indptr, PORT(int32_t) kv_indices,
                   PORT(int64_t) positions, PORT(int32_t) mask_indptr_bits, PORT(int32_t) mask_indptr_bytes,
                   PORT(uint8_t) packed_mask, PORT(uint8_t) mask_bool);

#endif  // EAGLE4_TREE_MASK_HPP

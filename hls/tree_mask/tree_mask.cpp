// K4 fused_tree_mask_operator (KERNELS.md §4.4), fused: KV index fill + bool mask + bit packing.
// Per request b (prefix length L = seq_lens[b], T tree tokens, queries t_q = T-Q+q):
//   * indptrs: exclusive prefix sums of L+T, Q*(L+T), ceil(Q*(L+T)/8); qo_indptr[b] = b*Q
//   * kv_indices: req_to_token[pool_b, 0:L] then (i32) tree_cache_locs[b, 0:T]
//   * mask row q: L prefix ones, then tree column t set iff t == t_q or t is an ancestor of t_q.
//     The ancestor walk follows D22 (a parent p of t is invalid when p >= t or p < -1; -1 or an
//     invalid parent ends the walk and is not added). Each step strictly decreases the token, so
//     the walk ends within T steps (the §4.4 bound). depth(t_q) = ancestors added.
//   * the request's flat mask is packed little bit order into its own byte segment (the last byte
//     zero-padded); mask_bool gets the same bits when write_bool_mask.
// The chain of the current query is a bitset over the tree tokens; each row is emitted 8 columns
// per iteration (prefix ones or an 8-bit window of the bitset) through a shift register, so the
// packer writes one byte per cycle even though rows are not byte-aligned.
// Each input element is read once; nothing is written past the valid lengths (D21). Whole 8-column
// chunks write their packed byte and their 8 bool bytes unconditionally (one word per cycle, II = 1);
// only the last, partial chunk of a row is written after its loop (tree_mask_core.hpp).
#include "tree_mask.hpp"

#include "tree_mask_core.hpp"

void tree_mask_top(PORT(const int64_t) seq_lens, PORT(const int64_t) req_pool_indices,
                   PORT(const int32_t) req_to_token, int S_max, PORT(const int64_t) tree_cache_locs,
                   PORT(const int64_t) tree_parent, int B, int T, int Q, bool write_bool_mask,
                   PORT(int32_t) qo_indptr, PORT(int32_t) kv_indptr, PORT(int32_t) kv_indices,
                   PORT(int64_t) positions, PORT(int32_t) mask_indptr_bits, PORT(int32_t) mask_indptr_bytes,
                   PORT(uint8_t) packed_mask, PORT(uint8_t) mask_bool) {
#pragma HLS INTERFACE m_axi port = seq_lens offset = slave bundle = gmem0 depth = 128
#pragma HLS INTERFACE m_axi port = req_pool_indices offset = slave bundle = gmem0 depth = 128
#pragma HLS INTERFACE m_axi port = req_to_token offset = slave bundle = gmem1 depth = 1048576 max_read_burst_length = 256 max_widen_bitwidth = 512
#pragma HLS INTERFACE m_axi port = tree_cache_locs offset = slave bundle = gmem0 depth = 16384
#pragma HLS INTERFACE m_axi port = tree_parent offset = slave bundle = gmem0 depth = 16384
#pragma HLS INTERFACE m_axi port = qo_indptr offset = slave bundle = gmem2 depth = 129
#pragma HLS INTERFACE m_axi port = kv_indptr offset = slave bundle = gmem2 depth = 129
#pragma HLS INTERFACE m_axi port = mask_indptr_bits offset = slave bundle = gmem2 depth = 129
#pragma HLS INTERFACE m_axi port = mask_indptr_bytes offset = slave bundle = gmem2 depth = 129
#pragma HLS INTERFACE m_axi port = positions offset = slave bundle = gmem2 depth = 16384
#pragma HLS INTERFACE m_axi port = kv_indices offset = slave bundle = gmem3 depth = 1048576 max_write_burst_length = 256 max_widen_bitwidth = 512
#pragma HLS INTERFACE m_axi port = packed_mask offset = slave bundle = gmem4 depth = 4194304 max_write_burst_length = 256 max_widen_bitwidth = 512
#pragma HLS INTERFACE m_axi port = mask_bool offset = slave bundle = gmem5 depth = 33554432 max_write_burst_length = 256 max_widen_bitwidth = 64
#pragma HLS INTERFACE s_axilite port = S_max
#pragma HLS INTERFACE s_axilite port = B
#pragma HLS INTERFACE s_axilite port = T
#pragma HLS INTERFACE s_axilite port = Q
#pragma HLS INTERFACE s_axilite port = write_bool_mask
#pragma HLS INTERFACE s_axilite port = return
  if (B < 0 || T < 1 || T > eagle4::MAX_TREE_TOKENS || Q < 1 || Q > T) return;  // preconditions: do nothing

  // 32-bit offsets: the caller refuses sum over b of Q*(L_b+T) >= 2^31 (the indptrs are int32), which
  // bounds every KV, bit and byte offset below
  int kv_off = 0, bits_off = 0, bytes_off = 0;

per_request:
  for (int b = 0; b < B; ++b) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 128
    const int64_t L = seq_lens[b];
    const int64_t pool = req_pool_indices[b];
    const int len = static_cast<int>(L) + T;
    const int seg_bits = Q * len;
    qo_indptr[b] = b * Q;
    kv_indptr[b] = kv_off;
    mask_indptr_bits[b] = bits_off;
    mask_indptr_bytes[b] = bytes_off;
    const int row = b * T;
    // KV indices, positions and the packed mask segment (tree_mask_core.hpp)
    eagle4::k4::tree_mask_request(L, pool, req_to_token, S_max, tree_cache_locs + row, tree_parent + row, T, Q,
                                  kv_indices + kv_off, positions + b * Q, packed_mask + bytes_off, write_bool_mask,
                                  write_bool_mask ? mask_bool + bits_off : mask_bool);
    kv_off += len;
    bits_off += seg_bits;
    bytes_off += (seg_bits + 7) / 8;
  }
  qo_indptr[B] = B * Q;
  kv_indptr[B] = kv_off;
  mask_indptr_bits[B] = bits_off;
  mask_indptr_bytes[B] = bytes_off;
}

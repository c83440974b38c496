// K7 update_verify_result (KERNELS.md §7.3).
//
//   load      per request: accept_length, finish_pos, seq_lens, req_pool_indices and the accept
//             row; a_b = finish_pos >= 0 ? finish_pos : accept_length (= non -1 entries - 1 under
//             the preconditions); the truncated row is kept on chip and written as accept_index_out;
//   compact   per accepted entry (request order, j ascending): accepted_flat, verified_id,
//             accepted_node_ids, the req_to_token commit (all requests), and for unfinished
//             requests next_verified_id, next_positions and the next_hidden row (bit copy);
//             per request the indptrs, seq_lens_out and the next_* per-request outputs;
//   evict     one pass over the B*Q positions with the on-chip keep mask: evict_mask and the
//             evicted positions on chip, then the ascending free list with its -1 padding in one
//             unconditional write (the KV slots were loaded on chip in one burst first);
//   pad       every data-dependent int buffer gets -1 from its valid length up to its cap;
//             next_hidden rows past N_unf are not written.
#include "update_verify.hpp"

#include "update_verify_core.hpp"

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
                       int hidden_words, int64_t S_max, bool has_node_ids) {
#pragma HLS INTERFACE m_axi port=accept_index offset=slave bundle=gmem0 depth=4096
#pragma HLS INTERFACE m_axi port=accept_length offset=slave bundle=gmem0 depth=128
#pragma HLS INTERFACE m_axi port=predicts offset=slave bundle=gmem0 depth=16384
#pragma HLS INTERFACE m_axi port=finish_pos offset=slave bundle=gmem0 depth=128
#pragma HLS INTERFACE m_axi port=seq_lens offset=slave bundle=gmem0 depth=128
#pragma HLS INTERFACE m_axi port=req_pool_indices offset=slave bundle=gmem0 depth=128
#pragma HLS INTERFACE m_axi port=out_cache_loc offset=slave bundle=gmem0 depth=16384
#pragma HLS INTERFACE m_axi port=verify_node_ids offset=slave bundle=gmem0 depth=16384
#pragma HLS INTERFACE m_axi port=req_to_token offset=slave bundle=gmem1 depth=65536
#pragma HLS INTERFACE m_axi port=hidden_states offset=slave bundle=gmem2 max_widen_bitwidth=512 max_read_burst_length=64 depth=65536
#pragma HLS INTERFACE m_axi port=next_hidden offset=slave bundle=gmem3 max_widen_bitwidth=512 max_write_burst_length=64 depth=65536
#pragma HLS INTERFACE m_axi port=accept_index_out offset=slave bundle=gmem4 depth=4096
#pragma HLS INTERFACE m_axi port=accept_length_out offset=slave bundle=gmem4 depth=128
#pragma HLS INTERFACE m_axi port=accept_indptr offset=slave bundle=gmem4 depth=129
#pragma HLS INTERFACE m_axi port=accepted_flat offset=slave bundle=gmem4 depth=4096
#pragma HLS INTERFACE m_axi port=verified_id offset=slave bundle=gmem4 depth=4096
#pragma HLS INTERFACE m_axi port=evict_mask offset=slave bundle=gmem5 depth=16384
#pragma HLS INTERFACE m_axi port=free_slots offset=slave bundle=gmem5 depth=16384
#pragma HLS INTERFACE m_axi port=seq_lens_out offset=slave bundle=gmem4 depth=128
#pragma HLS INTERFACE m_axi port=accepted_node_ids offset=slave bundle=gmem4 depth=4096
#pragma HLS INTERFACE m_axi port=unfinished_count offset=slave bundle=gmem4 depth=1
#pragma HLS INTERFACE m_axi port=unfinished_index offset=slave bundle=gmem4 depth=128
#pragma HLS INTERFACE m_axi port=next_accept_length offset=slave bundle=gmem4 depth=128
#pragma HLS INTERFACE m_axi port=next_indptr offset=slave bundle=gmem4 depth=129
#pragma HLS INTERFACE m_axi port=next_verified_id offset=slave bundle=gmem4 depth=4096
#pragma HLS INTERFACE m_axi port=next_positions offset=slave bundle=gmem4 depth=4096
#pragma HLS INTERFACE m_axi port=next_seq_lens offset=slave bundle=gmem4 depth=128
#pragma HLS INTERFACE m_axi port=next_req_pool_indices offset=slave bundle=gmem4 depth=128
#pragma HLS INTERFACE m_axi port=next_root_token offset=slave bundle=gmem4 depth=128
#pragma HLS INTERFACE m_axi port=next_last_flat offset=slave bundle=gmem4 depth=128
#pragma HLS INTERFACE s_axilite port=B
#pragma HLS INTERFACE s_axilite port=Q
#pragma HLS INTERFACE s_axilite port=S
#pragma HLS INTERFACE s_axilite port=hidden_words
#pragma HLS INTERFACE s_axilite port=S_max
#pragma HLS INTERFACE s_axilite port=has_node_ids
#pragma HLS INTERFACE s_axilite port=return

  // The KV slots of the B*Q positions on chip, read in one unconditional burst: the commit reads the
  // accepted ones and the free list the evicted ones (each slot is read from HBM once, as before).
  static int64_t loc_buf[eagle4::k7::MAX_POSITIONS];
  const int n_pos = B * Q;
load_cache_locs:
  for (int p = 0; p < n_pos; ++p) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=16384
    loc_buf[p] = out_cache_loc[p];
  }
  eagle4::k7::update_verify_core<uint16_t>(accept_index, accept_length, predicts, finish_pos, seq_lens, req_pool_indices, req_to_token,
                                      loc_buf, hidden_states, verify_node_ids, accept_index_out,
                                      accept_length_out, accept_indptr, accepted_flat, verified_id, evict_mask,
                                      free_slots, seq_lens_out, accepted_node_ids, unfinished_count, unfinished_index,
                                      next_accept_length, next_indptr, next_verified_id, next_hidden, next_positions,
                                      next_seq_lens, next_req_pool_indices, next_root_token, next_last_flat, B, Q, S,
                                      hidden_words, S_max, has_node_ids);
}

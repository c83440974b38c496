// Synthesis top of the fused verify pipeline: `make -C hls csynth KERNEL=fused_verify` (set_top fused_verify_top).
//
// A concrete, non-template wrapper around e4f::verify_pipeline_top<HT> (verify_pipeline.cpp) with bf16
// hidden states ([fpga.model] hidden_dtype, uint16_t bits). Every HBM buffer is an m_axi port (the K7
// outputs one port each, passed on as plain parameters); the configuration arrives as scalars on
// s_axilite and the VerifyCfg is built here by parse_verify_cfg, the same parser eagle4_fused_verify_step
// uses. No stage code lives here: one call = one call of the templated top. The debug taps of the C-sim
// ABI (predicts / accept_index / accept_length / finish_pos) are not ports of the hardware design: they are
// passed as NULL, as in the counted byte runs. Returns 0, or -2 when a size exceeds e4f_bounds.h.
#include "verify_pipeline.hpp"

#ifdef EAGLE4_CSIM_COUNTERS
// counting C-sim build: the ports are CountedPort<T> with no counter attached (nothing is counted here;
// the byte counts come from eagle4_fused_verify_step)
#define E4F_SYNTH_PORT(p) ::eagle4::make_port((p), static_cast<::eagle4::PortCounter*>(nullptr), 0)
#else
#define E4F_SYNTH_PORT(p) (p)
#endif

extern "C" int fused_verify_top(
    // m_axi ports (HBM): inputs
    const int64_t* seq_lens, const int64_t* req_pool_indices, int32_t* req_to_token, const int64_t* out_cache_loc,
    const int64_t* tree_parent, const float* logits, const float* temperatures, const int64_t* candidates,
    const int64_t* retrive_index, const int64_t* retrive_next_token, const int64_t* retrive_next_sibling,
    const float* coins, const float* final_coins, const int64_t* remaining, const uint16_t* hidden_states,
    const int64_t* verify_node_ids,
    // K4 outputs
    int32_t* qo_indptr, int32_t* kv_indptr, int32_t* kv_indices, int64_t* positions, int32_t* mask_indptr_bits,
    int32_t* mask_indptr_bytes, uint8_t* packed_mask,
    // K7 outputs
    int32_t* accept_index_out, int32_t* accept_length_out, int32_t* accept_indptr, int32_t* accepted_flat,
    int32_t* verified_id, uint8_t* evict_mask, int64_t* free_slots, int64_t* seq_lens_out,
    int64_t* accepted_node_ids, int32_t* unfinished_count, int64_t* unfinished_index, int32_t* next_accept_length,
    int32_t* next_indptr, int32_t* next_verified_id, uint16_t* next_hidden, int64_t* next_positions,
    int64_t* next_seq_lens, int64_t* next_req_pool_indices, int32_t* next_root_token, int32_t* next_last_flat,
    // s_axilite scalars: the configuration (VerifyCfg) and whether verify_node_ids is bound
    int64_t B, int64_t Q, int64_t S, int64_t V, int64_t H, int64_t S_max, int64_t eos, int64_t capkv,
    int64_t cappack, float threshold_single, float threshold_acc, int has_node_ids) {
// the [B,Q,V] logits rows K5/K6 visit: the dominant read stream, its own bundle
#pragma HLS INTERFACE m_axi port = logits offset = slave bundle = gmem0 max_read_burst_length = 256 num_read_outstanding = 16 max_widen_bitwidth = 512
// hidden rows: K7 gathers the accepted rows and writes the next frontier's
#pragma HLS INTERFACE m_axi port = hidden_states offset = slave bundle = gmem1
#pragma HLS INTERFACE m_axi port = next_hidden offset = slave bundle = gmem1
// req_to_token: read by K4, written by K7
#pragma HLS INTERFACE m_axi port = req_to_token offset = slave bundle = gmem2
// K4 (verify use): request metadata in, attention indptrs / indices / packed mask out
#pragma HLS INTERFACE m_axi port = seq_lens offset = slave bundle = gmem3
#pragma HLS INTERFACE m_axi port = req_pool_indices offset = slave bundle = gmem3
#pragma HLS INTERFACE m_axi port = out_cache_loc offset = slave bundle = gmem3
#pragma HLS INTERFACE m_axi port = tree_parent offset = slave bundle = gmem3
#pragma HLS INTERFACE m_axi port = qo_indptr offset = slave bundle = gmem3
#pragma HLS INTERFACE m_axi port = kv_indptr offset = slave bundle = gmem3
#pragma HLS INTERFACE m_axi port = kv_indices offset = slave bundle = gmem3
#pragma HLS INTERFACE m_axi port = positions offset = slave bundle = gmem3
#pragma HLS INTERFACE m_axi port = mask_indptr_bits offset = slave bundle = gmem3
#pragma HLS INTERFACE m_axi port = mask_indptr_bytes offset = slave bundle = gmem3
#pragma HLS INTERFACE m_axi port = packed_mask offset = slave bundle = gmem3
// K6 walk inputs and the finish rule's remaining budget
#pragma HLS INTERFACE m_axi port = temperatures offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = candidates offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = retrive_index offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = retrive_next_token offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = retrive_next_sibling offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = coins offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = final_coins offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = remaining offset = slave bundle = gmem4
// K7 outputs (and the node ids it reads)
#pragma HLS INTERFACE m_axi port = verify_node_ids offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = accept_index_out offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = accept_length_out offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = accept_indptr offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = accepted_flat offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = verified_id offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = evict_mask offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = free_slots offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = seq_lens_out offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = accepted_node_ids offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = unfinished_count offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = unfinished_index offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = next_accept_length offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = next_indptr offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = next_verified_id offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = next_positions offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = next_seq_lens offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = next_req_pool_indices offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = next_root_token offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = next_last_flat offset = slave bundle = gmem5
#pragma HLS INTERFACE s_axilite port = B
#pragma HLS INTERFACE s_axilite port = Q
#pragma HLS INTERFACE s_axilite port = S
#pragma HLS INTERFACE s_axilite port = V
#pragma HLS INTERFACE s_axilite port = H
#pragma HLS INTERFACE s_axilite port = S_max
#pragma HLS INTERFACE s_axilite port = eos
#pragma HLS INTERFACE s_axilite port = capkv
#pragma HLS INTERFACE s_axilite port = cappack
#pragma HLS INTERFACE s_axilite port = threshold_single
#pragma HLS INTERFACE s_axilite port = threshold_acc
#pragma HLS INTERFACE s_axilite port = has_node_ids
#pragma HLS INTERFACE s_axilite port = return
  // iscalars / fscalars of eagle4_fused_verify_step: B, Q, S, V, H, S_max, eos, hid_code (1 = bf16), capkv,
  // cappack; threshold_single, threshold_acc
  const int64_t is[10] = {B, Q, S, V, H, S_max, eos, 1, capkv, cappack};
  const float fs[2] = {threshold_single, threshold_acc};
  e4f::VerifyCfg c;
  if (e4f::parse_verify_cfg(is, fs, c) != 0 || c.V > E4F_MAX_V) return -2;
  const bool node_ids = has_node_ids != 0;
  e4f::verify_pipeline_top<uint16_t>(
      E4F_SYNTH_PORT(seq_lens), E4F_SYNTH_PORT(req_pool_indices), E4F_SYNTH_PORT(req_to_token),
      E4F_SYNTH_PORT(out_cache_loc), E4F_SYNTH_PORT(tree_parent), E4F_SYNTH_PORT(logits),
      E4F_SYNTH_PORT(temperatures), E4F_SYNTH_PORT(candidates), E4F_SYNTH_PORT(retrive_index),
      E4F_SYNTH_PORT(retrive_next_token), E4F_SYNTH_PORT(retrive_next_sibling), E4F_SYNTH_PORT(coins),
      E4F_SYNTH_PORT(final_coins), E4F_SYNTH_PORT(remaining), E4F_SYNTH_PORT(hidden_states),
      E4F_SYNTH_PORT(verify_node_ids), node_ids, E4F_SYNTH_PORT(qo_indptr), E4F_SYNTH_PORT(kv_indptr),
      E4F_SYNTH_PORT(kv_indices), E4F_SYNTH_PORT(positions), E4F_SYNTH_PORT(mask_indptr_bits),
      E4F_SYNTH_PORT(mask_indptr_bytes), E4F_SYNTH_PORT(packed_mask),
      E4F_SYNTH_PORT(accept_index_out), E4F_SYNTH_PORT(accept_length_out), E4F_SYNTH_PORT(accept_indptr),
      E4F_SYNTH_PORT(accepted_flat), E4F_SYNTH_PORT(verified_id), E4F_SYNTH_PORT(evict_mask),
      E4F_SYNTH_PORT(free_slots), E4F_SYNTH_PORT(seq_lens_out), E4F_SYNTH_PORT(accepted_node_ids),
      E4F_SYNTH_PORT(unfinished_count), E4F_SYNTH_PORT(unfinished_index), E4F_SYNTH_PORT(next_accept_length),
      E4F_SYNTH_PORT(next_indptr), E4F_SYNTH_PORT(next_verified_id), E4F_SYNTH_PORT(next_hidden),
      E4F_SYNTH_PORT(next_positions), E4F_SYNTH_PORT(next_seq_lens), E4F_SYNTH_PORT(next_req_pool_indices),
      E4F_SYNTH_PORT(next_root_token), E4F_SYNTH_PORT(next_last_flat), e4f::VPort<int32_t>(),
      e4f::VPort<int32_t>(), e4f::VPort<int32_t>(), e4f::VPort<int32_t>(), c);
  return 0;
}

#undef E4F_SYNTH_PORT

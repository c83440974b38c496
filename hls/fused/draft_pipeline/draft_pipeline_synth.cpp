// Synthesis top of the fused draft pipeline: `make -C hls csynth KERNEL=fused_draft` (set_top fused_draft_top).
//
// A concrete, non-template wrapper around e4f::draft_pipeline_top<HT, WT> (draft_pipeline.cpp) at the
// contract's deployment precisions: hidden states bf16 ([fpga.model] hidden_dtype, uint16_t bits), draft
// LM head int4 with a per-row f32 scale ([fpga.fused] lm_head_dtype): lm_weight holds the packed rows,
// ceil(H / 2) bytes each (weight h in byte h / 2, low nibble when h is even; e4f_stages.hpp i4x2), split
// over the four weight ports lm_weight0..3 (port p: rows v = p mod 4, in order; fused_csim.split_lm_weight). Every HBM buffer is an m_axi port;
// the configuration arrives as scalars on s_axilite and the DraftCfg is built here by parse_draft_cfg, the
// same parser eagle4_fused_draft_step uses. No stage code lives here: one call = one call of the
// templated top.
//
// Host protocol (the one eagle4_fused_draft_step follows in C-sim): phase 0 (init, reads root_token), then
// phase 1 once per draft layer d with W = widths[d], W_next = widths[d+1] (0 after the last layer),
// Vn = verify_nums[d], and the layer's slices of the per-layer buffers (draft_hidden, out_hidden: d*B*K*H
// elements; out_tokens, positions: d*B*K; work_deltas: d*(K+1); qo/kv/mask indptrs: d*(B+1); kv_indices:
// d*capkv; packed_mask: d*cappack), then phase 2 (finalize: tree state write-back + verify set).
// bypass_lm_head = 1 is the testbench mode (each layer's top-K candidates from cand_p/cand_t, no LM head);
// deployment runs with 0. Returns 0, or -2 when a size exceeds a compile-time bound of e4f_bounds.h.
#include "draft_pipeline.hpp"

#ifdef EAGLE4_CSIM_COUNTERS
// counting C-sim build: the ports are CountedPort<T> with no counter attached (nothing is counted here;
// the byte counts come from eagle4_fused_draft_step)
#define E4F_SYNTH_PORT(p) ::eagle4::make_port((p), static_cast<::eagle4::PortCounter*>(nullptr), 0)
#else
#define E4F_SYNTH_PORT(p) (p)
#endif

extern "C" int fused_draft_top(
    // m_axi ports (HBM)
    const int64_t* root_token, const uint16_t* draft_hidden, const uint8_t* lm_weight0, const uint8_t* lm_weight1,
    const uint8_t* lm_weight2, const uint8_t* lm_weight3, const float* lm_scale,
    float* lm_spill, const int64_t* hot_token_id, const int64_t* seq_lens, const int64_t* req_pool_indices,
    const int32_t* req_to_token, const int64_t* draft_cache_locs, uint16_t* out_hidden, int64_t* out_tokens,
    float* work_deltas, int32_t* qo_indptr, int32_t* kv_indptr, int32_t* kv_indices, int64_t* positions,
    int32_t* mask_indptr_bits, int32_t* mask_indptr_bytes, uint8_t* packed_mask, int64_t* cumu_tokens,
    float* cumu_scores, int64_t* cumu_deltas, int64_t* prev_indexs, int64_t* next_indexs, int64_t* side_indexs,
    int64_t* vt_candidates, int64_t* vt_retrive_index, int64_t* vt_next_token, int64_t* vt_next_sibling,
    int64_t* vt_tree_parent, int64_t* vt_node_ids, int64_t* cc_out, const float* cand_p, const int64_t* cand_t,
    // s_axilite scalars: the call
    int phase, int64_t W, int64_t W_next, int64_t Vn,
    // s_axilite scalars: the configuration (DraftCfg)
    int64_t B, int64_t K, int64_t D, int64_t H, int64_t Vt, int64_t Vh, int64_t N, int64_t M, int64_t I,
    int64_t S_max, int64_t Tcap, int64_t capkv, int64_t cappack, int64_t use_hot, int64_t vn_final,
    int64_t bypass_lm_head) {
// LM head: the weight stream (the dominant HBM traffic) over E4F_LMH_PORTS bundles of their own, each striped
// over its own HBM pseudo-channels (hls/xclbin connectivity); hidden rows in / out apart
#pragma HLS INTERFACE m_axi port = draft_hidden offset = slave bundle = gmem0 max_read_burst_length = 256 max_widen_bitwidth = 512
#pragma HLS INTERFACE m_axi port = lm_weight0 offset = slave bundle = gmem1 max_read_burst_length = 256 num_read_outstanding = 16 max_widen_bitwidth = 512
#pragma HLS INTERFACE m_axi port = lm_weight1 offset = slave bundle = gmem7 max_read_burst_length = 256 num_read_outstanding = 16 max_widen_bitwidth = 512
#pragma HLS INTERFACE m_axi port = lm_weight2 offset = slave bundle = gmem8 max_read_burst_length = 256 num_read_outstanding = 16 max_widen_bitwidth = 512
#pragma HLS INTERFACE m_axi port = lm_weight3 offset = slave bundle = gmem9 max_read_burst_length = 256 num_read_outstanding = 16 max_widen_bitwidth = 512
#pragma HLS INTERFACE m_axi port = out_hidden offset = slave bundle = gmem2
#pragma HLS INTERFACE m_axi port = lm_spill offset = slave bundle = gmem3 max_widen_bitwidth = 512
// small per-layer traffic: scales, hot map, root, candidates (testbench), frontier tokens, work deltas
#pragma HLS INTERFACE m_axi port = lm_scale offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = hot_token_id offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = root_token offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = cand_p offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = cand_t offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = out_tokens offset = slave bundle = gmem4
#pragma HLS INTERFACE m_axi port = work_deltas offset = slave bundle = gmem4
// K4 (draft use): KV metadata in, attention indptrs / indices / packed mask out
#pragma HLS INTERFACE m_axi port = seq_lens offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = req_pool_indices offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = req_to_token offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = draft_cache_locs offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = qo_indptr offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = kv_indptr offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = kv_indices offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = positions offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = mask_indptr_bits offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = mask_indptr_bytes offset = slave bundle = gmem5
#pragma HLS INTERFACE m_axi port = packed_mask offset = slave bundle = gmem5
// finalize: the one write-back of the tree state and the verify set
#pragma HLS INTERFACE m_axi port = cumu_tokens offset = slave bundle = gmem6
#pragma HLS INTERFACE m_axi port = cumu_scores offset = slave bundle = gmem6
#pragma HLS INTERFACE m_axi port = cumu_deltas offset = slave bundle = gmem6
#pragma HLS INTERFACE m_axi port = prev_indexs offset = slave bundle = gmem6
#pragma HLS INTERFACE m_axi port = next_indexs offset = slave bundle = gmem6
#pragma HLS INTERFACE m_axi port = side_indexs offset = slave bundle = gmem6
#pragma HLS INTERFACE m_axi port = vt_candidates offset = slave bundle = gmem6
#pragma HLS INTERFACE m_axi port = vt_retrive_index offset = slave bundle = gmem6
#pragma HLS INTERFACE m_axi port = vt_next_token offset = slave bundle = gmem6
#pragma HLS INTERFACE m_axi port = vt_next_sibling offset = slave bundle = gmem6
#pragma HLS INTERFACE m_axi port = vt_tree_parent offset = slave bundle = gmem6
#pragma HLS INTERFACE m_axi port = vt_node_ids offset = slave bundle = gmem6
#pragma HLS INTERFACE m_axi port = cc_out offset = slave bundle = gmem6
#pragma HLS INTERFACE s_axilite port = phase
#pragma HLS INTERFACE s_axilite port = W
#pragma HLS INTERFACE s_axilite port = W_next
#pragma HLS INTERFACE s_axilite port = Vn
#pragma HLS INTERFACE s_axilite port = B
#pragma HLS INTERFACE s_axilite port = K
#pragma HLS INTERFACE s_axilite port = D
#pragma HLS INTERFACE s_axilite port = H
#pragma HLS INTERFACE s_axilite port = Vt
#pragma HLS INTERFACE s_axilite port = Vh
#pragma HLS INTERFACE s_axilite port = N
#pragma HLS INTERFACE s_axilite port = M
#pragma HLS INTERFACE s_axilite port = I
#pragma HLS INTERFACE s_axilite port = S_max
#pragma HLS INTERFACE s_axilite port = Tcap
#pragma HLS INTERFACE s_axilite port = capkv
#pragma HLS INTERFACE s_axilite port = cappack
#pragma HLS INTERFACE s_axilite port = use_hot
#pragma HLS INTERFACE s_axilite port = vn_final
#pragma HLS INTERFACE s_axilite port = bypass_lm_head
#pragma HLS INTERFACE s_axilite port = return
  // iscalars of eagle4_fused_draft_step: B, K, D, H, Vt, Vh, N, M, I, S_max, Tcap, capkv, cappack,
  // use_hot, hid_code (1 = bf16), w_code (3 = packed int4 + per-row f32 scale), vn_final
  const int64_t is[17] = {B, K, D, H, Vt, Vh, N, M, I, S_max, Tcap, capkv, cappack, use_hot, 1, 3, vn_final};
  e4f::DraftCfg c;
  if (e4f::parse_draft_cfg(is, c) != 0) return -2;
  c.bypass_lm_head = bypass_lm_head != 0 ? 1 : 0;
  return e4f::draft_pipeline_top<uint16_t, e4f::i4x2, uint8_t>(
      phase, E4F_SYNTH_PORT(root_token), E4F_SYNTH_PORT(draft_hidden), E4F_SYNTH_PORT(lm_weight0),
      E4F_SYNTH_PORT(lm_weight1), E4F_SYNTH_PORT(lm_weight2), E4F_SYNTH_PORT(lm_weight3),
      E4F_SYNTH_PORT(lm_scale), E4F_SYNTH_PORT(lm_spill), E4F_SYNTH_PORT(hot_token_id), W, W_next, Vn,
      E4F_SYNTH_PORT(seq_lens), E4F_SYNTH_PORT(req_pool_indices), E4F_SYNTH_PORT(req_to_token),
      E4F_SYNTH_PORT(draft_cache_locs), E4F_SYNTH_PORT(out_hidden), E4F_SYNTH_PORT(out_tokens),
      E4F_SYNTH_PORT(work_deltas), E4F_SYNTH_PORT(qo_indptr), E4F_SYNTH_PORT(kv_indptr), E4F_SYNTH_PORT(kv_indices),
      E4F_SYNTH_PORT(positions), E4F_SYNTH_PORT(mask_indptr_bits), E4F_SYNTH_PORT(mask_indptr_bytes),
      E4F_SYNTH_PORT(packed_mask), E4F_SYNTH_PORT(cumu_tokens), E4F_SYNTH_PORT(cumu_scores),
      E4F_SYNTH_PORT(cumu_deltas), E4F_SYNTH_PORT(prev_indexs), E4F_SYNTH_PORT(next_indexs),
      E4F_SYNTH_PORT(side_indexs), E4F_SYNTH_PORT(vt_candidates), E4F_SYNTH_PORT(vt_retrive_index),
      E4F_SYNTH_PORT(vt_next_token), E4F_SYNTH_PORT(vt_next_sibling), E4F_SYNTH_PORT(vt_tree_parent),
      E4F_SYNTH_PORT(vt_node_ids), E4F_SYNTH_PORT(cc_out), E4F_SYNTH_PORT(cand_p), E4F_SYNTH_PORT(cand_t), c);
}

#undef E4F_SYNTH_PORT

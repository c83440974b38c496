// C-simulation wrapper of K2 over the uniform C ABI (hls/include/eagle4_capi.h).
// Tensor slots (spec order): 0 topk_probas, 1 topk_tokens, 2 sorted_scores, 3 sorted_indexs,
// 4 parent_indexs, 5 topk_indexs, 6 input_tree_mask, 7 cumu_tokens, 8 cumu_scores, 9 cumu_deltas,
// 10 prev_indexs, 11 next_indexs, 12 side_indexs, 13 output_scores, 14 output_tokens,
// 15 work_scores, 16 sort_scores, 17 output_tree_mask.
// iscalars: batch_size, node_top_k, tree_width, input_count, cumu_count, verify_num, curr_depth,
// max_input_size, max_node_count, max_verify_num.
#include <cstring>

#include "eagle4_capi.h"
#include "update_draft_state.hpp"

extern "C" int eagle4_update_draft_state(EAGLE4_CAPI_PARAMS) {
  (void)fscalars;
  const auto c = eagle4::capi::make_ctx("update_draft_state", tensors, shapes, elem_bytes, errbuf, errlen);
  using namespace eagle4::capi;
  uint32_t decay_bits;
  std::memcpy(&decay_bits, &EAGLE4_K2_DECAY, sizeof decay_bits);
  if (decay_bits != 0x3F7FF972u)
    return c.fail(E_ARG, "the compiler rounded 0.9999f to 0x%08x, not 0x3F7FF972 (check the float flags)",
                  unsigned(decay_bits));
  const int64_t B = iscalars[0], K = iscalars[1], W = iscalars[2], Ic = iscalars[3], cc = iscalars[4];
  const int64_t Vn = iscalars[5], d = iscalars[6], I = iscalars[7], N = iscalars[8], M = iscalars[9];
  // §2.5 preconditions, then the bounds of §0.4 the indexing relies on
  EAGLE4_TRY(c.range("batch_size", B, 0, INT32_MAX, "must be >= 0"));
  EAGLE4_TRY(c.range("node_top_k (K)", K, 1, 64, "1 <= K, W*K <= 64"));
  EAGLE4_TRY(c.range("tree_width (W)", W, 1, 64, "1 <= W, W*K <= 64"));
  const int64_t C = W * K;
  if (C > 64)
    return c.fail(E_PRECONDITION, "node_top_k*tree_width = C must be <= 64, got %lld*%lld = %lld", (long long)K,
                  (long long)W, (long long)C);
  EAGLE4_TRY(c.range("input_count (Ic)", Ic, 1, INT32_MAX, "Ic >= 1"));
  if (Ic - 1 > I)
    return c.fail(E_PRECONDITION, "input_count-1 must be <= max_input_size (Ic-1 <= I), got Ic=%lld, I=%lld",
                  (long long)Ic, (long long)I);
  EAGLE4_TRY(c.range("cumu_count (cc)", cc, 0, INT64_MAX / 2, "must be >= 0"));
  EAGLE4_TRY(c.range("max_node_count (N)", N, 0, INT32_MAX, "must be >= 0"));
  EAGLE4_TRY(c.range("max_verify_num (M)", M, 1, INT32_MAX, "clamp(Vn, 1, M) needs M >= 1"));
  EAGLE4_TRY(c.range("batch_size", B, 0, eagle4::MAX_BATCH_SIZE, "EAGLE4_MAX_BATCH_SIZE", E_BOUND));
  EAGLE4_TRY(c.range("C = node_top_k*tree_width", C, 1, eagle4::MAX_CANDIDATES, "EAGLE4_MAX_CANDIDATES", E_BOUND));
  EAGLE4_TRY(c.range("node_top_k (K)", K, 1, eagle4::MAX_TOP_K, "EAGLE4_MAX_TOP_K", E_BOUND));
  EAGLE4_TRY(c.range("max_verify_num (M)", M, 1, eagle4::MAX_VERIFY, "EAGLE4_MAX_VERIFY", E_BOUND));
  EAGLE4_TRY(c.range("max_node_count (N)", N, 0, eagle4::MAX_NODE_COUNT, "EAGLE4_MAX_NODE_COUNT", E_BOUND));
  EAGLE4_TRY(c.range("max_input_size (I)", I, 0, eagle4::MAX_INPUT_SIZE, "EAGLE4_MAX_INPUT_SIZE", E_BOUND));
  EAGLE4_TRY(c.tensor(0, "topk_probas", 4, B, C));
  EAGLE4_TRY(c.tensor(1, "topk_tokens", 8, B, C));
  EAGLE4_TRY(c.tensor(2, "sorted_scores", 4, B, C));
  EAGLE4_TRY(c.tensor(3, "sorted_indexs", 8, B, C));
  EAGLE4_TRY(c.tensor(4, "parent_indexs", 8, B, K));
  EAGLE4_TRY(c.tensor(5, "topk_indexs", 8, B, W));
  EAGLE4_TRY(c.tensor(6, "input_tree_mask", 1, B, W, Ic - 1));
  EAGLE4_TRY(c.tensor(7, "cumu_tokens", 8, B, N));
  EAGLE4_TRY(c.tensor(8, "cumu_scores", 4, B, N));
  EAGLE4_TRY(c.tensor(9, "cumu_deltas", 8, B, N));
  EAGLE4_TRY(c.tensor(10, "prev_indexs", 8, B, N));
  EAGLE4_TRY(c.tensor(11, "next_indexs", 8, B, N));
  EAGLE4_TRY(c.tensor(12, "side_indexs", 8, B, N));
  EAGLE4_TRY(c.tensor(13, "output_scores", 4, B, K));
  EAGLE4_TRY(c.tensor(14, "output_tokens", 8, B, K));
  EAGLE4_TRY(c.tensor(15, "work_scores", 4, B, M + K));
  EAGLE4_TRY(c.tensor(16, "sort_scores", 4, B, M));
  EAGLE4_TRY(c.tensor(17, "output_tree_mask", 1, B, K, I + 1));

  update_draft_state_top(
      PORT_ARG(c.ptr<const float>(0), counters, 0), PORT_ARG(c.ptr<const int64_t>(1), counters, 1),
      PORT_ARG(c.ptr<const float>(2), counters, 2), PORT_ARG(c.ptr<const int64_t>(3), counters, 3),
      PORT_ARG(c.ptr<const int64_t>(4), counters, 4), PORT_ARG(c.ptr<const int64_t>(5), counters, 5),
      PORT_ARG(c.ptr<const uint8_t>(6), counters, 6), int(B), int(K), int(W), int(Ic), cc, Vn, d, int(I), int(N),
      int(M), PORT_ARG(c.ptr<int64_t>(7), counters, 7), PORT_ARG(c.ptr<float>(8), counters, 8),
      PORT_ARG(c.ptr<int64_t>(9), counters, 9), PORT_ARG(c.ptr<int64_t>(10), counters, 10),
      PORT_ARG(c.ptr<int64_t>(11), counters, 11), PORT_ARG(c.ptr<int64_t>(12), counters, 12),
      PORT_ARG(c.ptr<float>(13), counters, 13), PORT_ARG(c.ptr<int64_t>(14), counters, 14),
      PORT_ARG(c.ptr<float>(15), counters, 15), PORT_ARG(c.ptr<float>(16), counters, 16),
      PORT_ARG(c.ptr<uint8_t>(17), counters, 17));
  return OK;
}

// C-simulation wrapper of K1 over the uniform C ABI (hls/include/eagle4_capi.h).
// Tensor slots (spec order): 0 topk_probas_sampling, 1 topk_tokens_sampling (opt), 2 last_layer_scores,
// 3 curr_layer_scores, 4 sort_layer_scores, 5 sort_layer_indices, 6 cache_topk_indices,
// 7 parent_indices_in_layer, 8 input_hidden_states, 9 output_hidden_states, 10 hot_token_id (opt),
// 11 output_tokens (opt). iscalars: batch_size, node_top_k, tree_width, cumu_count, use_hot_token_id.
#include "draft_tree_score.hpp"
#include "eagle4_capi.h"

extern "C" int eagle4_draft_tree_score(EAGLE4_CAPI_PARAMS) {
  (void)fscalars;
  const auto c = eagle4::capi::make_ctx("draft_tree_score", tensors, shapes, elem_bytes, errbuf, errlen);
  using namespace eagle4::capi;
  const int64_t B = iscalars[0], K = iscalars[1], W = iscalars[2], cc = iscalars[3];
  const bool use_hot = iscalars[4] != 0;
  // §1.5 preconditions (the HLS top does nothing on a violation; the wrapper refuses the call)
  EAGLE4_TRY(c.range("batch_size", B, 0, INT32_MAX, "must be >= 0"));
  EAGLE4_TRY(c.range("node_top_k (K)", K, 1, eagle4::MAX_CANDIDATES, "1 <= K <= C <= 64"));
  EAGLE4_TRY(c.range("tree_width (W)", W, 1, eagle4::MAX_CANDIDATES, "1 <= W, W*K <= 64"));
  if (W * K > 64)
    return c.fail(E_PRECONDITION, "node_top_k*tree_width = C must be <= 64, got C = %lld*%lld = %lld",
                  (long long)K, (long long)W, (long long)(W * K));
  const int64_t C = W * K;
  EAGLE4_TRY(c.range("C = node_top_k*tree_width", C, 1, eagle4::MAX_CANDIDATES, "EAGLE4_MAX_CANDIDATES", E_BOUND));
  EAGLE4_TRY(c.range("node_top_k (K)", K, 1, eagle4::MAX_TOP_K, "EAGLE4_MAX_TOP_K", E_BOUND));
  EAGLE4_TRY(c.range("batch_size", B, 0, eagle4::MAX_BATCH_SIZE, "EAGLE4_MAX_BATCH_SIZE", E_BOUND));
  // buffers
  EAGLE4_TRY(c.tensor(0, "topk_probas_sampling", 4, B, C));
  EAGLE4_TRY(c.tensor(2, "last_layer_scores", 4, B, W));
  EAGLE4_TRY(c.tensor(3, "curr_layer_scores", 4, B, C));
  EAGLE4_TRY(c.tensor(4, "sort_layer_scores", 4, B, C));
  EAGLE4_TRY(c.tensor(5, "sort_layer_indices", 8, B, C));
  EAGLE4_TRY(c.tensor(6, "cache_topk_indices", 8, B, K));
  EAGLE4_TRY(c.tensor(7, "parent_indices_in_layer", 8, B, K));
  if (!c.present(8)) return c.fail(E_ARG, "input_hidden_states is required");
  const int eh = c.esize(8);
  if (eh != 2 && eh != 4) return c.fail(E_ARG, "input_hidden_states must have 2- or 4-byte elements, got %d", eh);
  const int64_t H = c.dim(8, 1);
  EAGLE4_TRY(c.tensor(8, "input_hidden_states", eh, B * W, H));
  EAGLE4_TRY(c.range("hidden size H", H, 0, eagle4::MAX_HIDDEN, "EAGLE4_MAX_HIDDEN", E_BOUND));
  EAGLE4_TRY(c.tensor(9, "output_hidden_states", eh, B, K, H));
  const bool has_tokens = c.present(1);
  if (has_tokens) EAGLE4_TRY(c.tensor(1, "topk_tokens_sampling", 8, B, C));
  int64_t Vh = 0;
  if (use_hot) {
    if (!c.present(10)) return c.fail(E_PRECONDITION, "hot_token_id is required when use_hot_token_id is true");
    if (!has_tokens)
      return c.fail(E_PRECONDITION, "topk_tokens_sampling is required when use_hot_token_id is true");
    Vh = c.dim(10, 0);
    EAGLE4_TRY(c.tensor(10, "hot_token_id", 8, Vh));
  }
  const bool out_tokens = c.present(11);
  if (out_tokens) {
    EAGLE4_TRY(c.tensor(11, "output_tokens", 8, B, K));
    if (!has_tokens) return c.fail(E_PRECONDITION, "output_tokens needs topk_tokens_sampling");
  }

#define K1_PORTS(HW)                                                                                      \
  PORT_ARG(c.ptr<const float>(0), counters, 0), PORT_ARG(c.ptr<int64_t>(1), counters, 1),               \
      PORT_ARG(c.ptr<const float>(2), counters, 2), PORT_ARG(c.ptr<float>(3), counters, 3),             \
      PORT_ARG(c.ptr<float>(4), counters, 4), PORT_ARG(c.ptr<int64_t>(5), counters, 5),                 \
      PORT_ARG(c.ptr<int64_t>(6), counters, 6), PORT_ARG(c.ptr<int64_t>(7), counters, 7),               \
      PORT_ARG(c.ptr<const HW>(8), counters, 8), PORT_ARG(c.ptr<HW>(9), counters, 9),                   \
      PORT_ARG(c.ptr<const int64_t>(10), counters, 10), PORT_ARG(c.ptr<int64_t>(11), counters, 11),     \
      int(B), int(K), int(W), cc, use_hot, Vh, int(H), has_tokens, out_tokens
  if (eh == 2)
    draft_tree_score_top(K1_PORTS(uint16_t));
  else
    draft_tree_score_top_f32(K1_PORTS(uint32_t));
#undef K1_PORTS
  return OK;
}

// C-simulation wrapper of K6 (uniform C ABI of hls/include/eagle4_capi.h; not synthesized).
// Tensor slots (spec.py order): 0 candidates, 1 retrive_index, 2 retrive_next_token,
// 3 retrive_next_sibling, 4 target_probs, 5 target_predict, 6 is_greedy, 7 coins, 8 final_coins,
// 9 predicts, 10 accept_index, 11 accept_length. iscalars: B, Q, S, V.
// fscalars: threshold_single, threshold_acc.
// The precondition checks mirror src/eagle4/kernels/reject_sample.py (same arguments, same order).
#include "eagle4_capi.h"
#include "reject_sample.hpp"

extern "C" int eagle4_reject_sample(EAGLE4_CAPI_PARAMS) {
  using namespace eagle4::capi;
  using namespace eagle4::k6;
  enum { CAND, RIDX, NTOK, NSIB, PROBS, PRED_IN, GREEDY, COINS, FCOINS, PREDICTS, ACC_IDX, ACC_LEN };
  const Ctx c = make_ctx("reject_sample", tensors, shapes, elem_bytes, errbuf, errlen);
  const int64_t B = iscalars[0], Q = iscalars[1], S = iscalars[2], V = iscalars[3];
  const float threshold_single = fscalars[0], threshold_acc = fscalars[1];

  EAGLE4_TRY(c.range("B", B, 1, MAX_BATCH, "B >= 1; EAGLE4_MAX_BATCH_SIZE", B < 1 ? E_PRECONDITION : E_BOUND));
  EAGLE4_TRY(c.range("Q", Q, 1, MAX_VERIFY, "Q >= 1; EAGLE4_MAX_VERIFY", Q < 1 ? E_PRECONDITION : E_BOUND));
  EAGLE4_TRY(c.range("S", S, 1, MAX_ACCEPT, "S >= 1; EAGLE4_MAX_ACCEPT_LEN", S < 1 ? E_PRECONDITION : E_BOUND));
  EAGLE4_TRY(c.range("V", V, 1, MAX_VOCAB, "V >= 1; EAGLE4_MAX_VOCAB", V < 1 ? E_PRECONDITION : E_BOUND));
  EAGLE4_TRY(c.tensor(CAND, "candidates", 8, B, Q));
  EAGLE4_TRY(c.tensor(RIDX, "retrive_index", 8, B, Q));
  EAGLE4_TRY(c.tensor(NTOK, "retrive_next_token", 8, B, Q));
  EAGLE4_TRY(c.tensor(NSIB, "retrive_next_sibling", 8, B, Q));
  EAGLE4_TRY(c.tensor(PRED_IN, "target_predict", 8, B, Q));
  EAGLE4_TRY(c.tensor(PROBS, "target_probs", 4, B, Q, V));
  EAGLE4_TRY(c.tensor(GREEDY, "is_greedy", 1, B));
  EAGLE4_TRY(c.tensor(COINS, "coins", 4, B, Q));
  EAGLE4_TRY(c.tensor(FCOINS, "final_coins", 4, B));
  EAGLE4_TRY(c.tensor(PREDICTS, "predicts", 4, B * Q));
  EAGLE4_TRY(c.tensor(ACC_IDX, "accept_index", 4, B, S));
  EAGLE4_TRY(c.tensor(ACC_LEN, "accept_length", 4, B));

  if (threshold_acc != threshold_acc)
    return c.fail(E_PRECONDITION, "threshold_acc must not be NaN (max(threshold_acc, 1e-9) is undefined for NaN)");
  const int64_t* ridx = c.ptr<const int64_t>(RIDX);
  for (int64_t k = 0; k < B * Q; ++k)
    if (ridx[k] != k)
      return c.fail(E_PRECONDITION, "retrive_index[%lld,%lld] must equal b*Q+i = %lld, got %lld",
                    (long long)(k / Q), (long long)(k % Q), (long long)k, (long long)ridx[k]);
  const int64_t* links[2] = {c.ptr<const int64_t>(NTOK), c.ptr<const int64_t>(NSIB)};
  const char* link_names[2] = {"retrive_next_token", "retrive_next_sibling"};
  for (int l = 0; l < 2; ++l)
    for (int64_t k = 0; k < B * Q; ++k) {
      const int64_t i = k % Q, t = links[l][k];
      if (t != -1 && (t <= i || t >= Q))
        return c.fail(E_PRECONDITION,
                      "%s[%lld,%lld] must be -1 or in (%lld, Q=%lld) (links point to a larger local index), got %lld",
                      link_names[l], (long long)(k / Q), (long long)i, (long long)i, (long long)Q, (long long)t);
    }
  const float* probs = c.ptr<const float>(PROBS);
  for (int64_t k = 0; k < B * Q * V; ++k) {
    const float t = probs[k];
    if (!((t >= 0.0f && t <= 1.0f) || t != t))
      return c.fail(E_PRECONDITION, "target_probs[%lld,%lld,%lld] must be in [0, 1] or NaN, got %g",
                    (long long)(k / (Q * V)), (long long)(k / V % Q), (long long)(k % V), double(t));
  }
  const uint8_t* greedy = c.ptr<const uint8_t>(GREEDY);
  for (int64_t b = 0; b < B; ++b)
    if (greedy[b] > 1) return c.fail(E_PRECONDITION, "is_greedy[%lld] must be 0 or 1, got %d", (long long)b, greedy[b]);
  const float* coin_arrays[2] = {c.ptr<const float>(COINS), c.ptr<const float>(FCOINS)};
  const char* coin_names[2] = {"coins", "final_coins"};
  const int64_t coin_counts[2] = {B * Q, B};
  for (int l = 0; l < 2; ++l)
    for (int64_t k = 0; k < coin_counts[l]; ++k) {
      const float t = coin_arrays[l][k];
      if (!(t >= 0.0f && t < 1.0f))
        return c.fail(E_PRECONDITION, "%s[%lld] must be in [0, 1), got %g", coin_names[l], (long long)k, double(t));
    }
  const int64_t* tpred = c.ptr<const int64_t>(PRED_IN);
  for (int64_t k = 0; k < B * Q; ++k)
    if (greedy[k / Q] && (tpred[k] < 0 || tpred[k] >= V))
      return c.fail(E_PRECONDITION, "target_predict[%lld,%lld] of a greedy request must be in [0, V=%lld), got %lld",
                    (long long)(k / Q), (long long)(k % Q), (long long)V, (long long)tpred[k]);

  int64_t err_info = -1;
  const int rc = reject_sample_top(
      PORT_ARG(c.ptr<const int64_t>(CAND), counters, CAND), PORT_ARG(c.ptr<const int64_t>(RIDX), counters, RIDX),
      PORT_ARG(c.ptr<const int64_t>(NTOK), counters, NTOK), PORT_ARG(c.ptr<const int64_t>(NSIB), counters, NSIB),
      PORT_ARG(c.ptr<const float>(PROBS), counters, PROBS), PORT_ARG(c.ptr<const int64_t>(PRED_IN), counters, PRED_IN),
      PORT_ARG(c.ptr<const uint8_t>(GREEDY), counters, GREEDY), PORT_ARG(c.ptr<const float>(COINS), counters, COINS),
      PORT_ARG(c.ptr<const float>(FCOINS), counters, FCOINS), PORT_ARG(c.ptr<int32_t>(PREDICTS), counters, PREDICTS),
      PORT_ARG(c.ptr<int32_t>(ACC_IDX), counters, ACC_IDX), PORT_ARG(c.ptr<int32_t>(ACC_LEN), counters, ACC_LEN),
      threshold_single, threshold_acc, int(B), int(Q), int(S), int(V), &err_info);
  if (rc == K6_ERR_PROB_ABOVE_ONE)  // unreachable after the scan above; kept for the kernel's own check
    return c.fail(E_PRECONDITION, "target_probs flat entry %lld is above 1 (KERNELS.md §6.6 step 2)",
                  (long long)err_info);
  return rc == K6_OK ? OK : E_PRECONDITION;
}

// C-simulation wrapper of K5 (uniform C ABI of hls/include/eagle4_capi.h; not synthesized).
// Tensor slots (spec.py order): 0 logits [R,V] f32, 1 temperatures [B] f32, 2 probas [R,V] f32,
// 3 argmax_ids [R] i64, 4 is_greedy [B] u8. iscalars: rows_per_req, write_probas. fscalars: none.
// Checks mirror src/eagle4/kernels/logits_to_probas.py plus the compile-time bounds.
#include "eagle4_capi.h"
#include "logits_to_probas.hpp"

extern "C" int eagle4_logits_to_probas(EAGLE4_CAPI_PARAMS) {
  (void)fscalars;
  using namespace eagle4::capi;
  using namespace eagle4::k5;
  enum { LOGITS, TEMPS, PROBAS, ARGMAX, GREEDY };
  const Ctx c = make_ctx("logits_to_probas", tensors, shapes, elem_bytes, errbuf, errlen);
  const int64_t G = iscalars[0];
  const bool write_probas = iscalars[1] != 0;

  if (!c.present(LOGITS) || !c.present(TEMPS))
    return c.fail(E_ARG, "logits [R, V] and temperatures [B] are required");
  if (c.esize(LOGITS) != 4)
    return c.fail(E_ARG, "logits must be float32 here (f16/bf16 are upcast by the caller), got %d-byte elements",
                  c.esize(LOGITS));
  if (c.dim(TEMPS, 1) != 1 || c.dim(TEMPS, 2) != 1 || c.dim(TEMPS, 3) != 1 ||
      c.dim(LOGITS, 2) != 1 || c.dim(LOGITS, 3) != 1)
    return c.fail(E_SHAPE, "logits must be 2-D [R, V] and temperatures 1-D [B]");
  const int64_t B = c.dim(TEMPS, 0), R = c.dim(LOGITS, 0), V = c.dim(LOGITS, 1);
  EAGLE4_TRY(c.range("rows_per_req (G)", G, 1, MAX_ROWS_PER_REQ, "G >= 1; EAGLE4_MAX_VERIFY", E_PRECONDITION));
  EAGLE4_TRY(c.range("B = len(temperatures)", B, 1, MAX_BATCH, "EAGLE4_MAX_BATCH_SIZE", E_BOUND));
  EAGLE4_TRY(c.range("V = logits.shape[1]", V, 1, MAX_VOCAB, "V >= 1; EAGLE4_MAX_VOCAB", E_BOUND));
  if (R != B * G)
    return c.fail(E_SHAPE, "logits must have R = B*G = %lld*%lld = %lld rows, got %lld", (long long)B,
                  (long long)G, (long long)(B * G), (long long)R);
  EAGLE4_TRY(c.tensor(TEMPS, "temperatures", 4, B));
  EAGLE4_TRY(c.tensor(ARGMAX, "argmax_ids", 8, R));
  EAGLE4_TRY(c.tensor(GREEDY, "is_greedy", 1, B));
  if (write_probas) EAGLE4_TRY(c.tensor(PROBAS, "probas", 4, R, V));

  logits_to_probas_top(PORT_ARG(c.ptr<const float>(LOGITS), counters, LOGITS),
                       PORT_ARG(c.ptr<const float>(TEMPS), counters, TEMPS),
                       PORT_ARG(c.ptr<float>(PROBAS), counters, PROBAS),
                       PORT_ARG(c.ptr<int64_t>(ARGMAX), counters, ARGMAX),
                       PORT_ARG(c.ptr<uint8_t>(GREEDY), counters, GREEDY), int(B), int(G), int(V), write_probas);
  return OK;
}

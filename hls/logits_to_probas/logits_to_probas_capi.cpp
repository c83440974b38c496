// C-simulation wrapper of K5 (uniform C ABI of the csim backend; not synthesized).
// Tensor slots (spec.py order): 0 logits [R,V] f32, 1 temperatures [B] f32, 2 probas [R,V] f32,
// 3 argmax_ids [R] i64, 4 is_greedy [B] u8. iscalars: rows_per_req, write_probas.
#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "logits_to_probas.hpp"

#ifndef EAGLE4_CSIM_COUNTERS
#error "logits_to_probas_capi.cpp is the C-sim wrapper: build it with -DEAGLE4_CSIM_COUNTERS"
#endif

namespace {

int k5_fail(char* errbuf, int64_t errlen, int code, const char* fmt, ...) {
  if (errbuf && errlen > 0) {
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(errbuf, size_t(errlen), fmt, ap);
    va_end(ap);
  }
  return code;
}

}  // namespace

extern "C" int eagle4_logits_to_probas(void* const* tensors, const int64_t* shapes, const int32_t* elem_bytes,
                                       const int64_t* iscalars, const float* fscalars,
                                       eagle4::PortCounter* counters, char* errbuf, int64_t errlen) {
  (void)fscalars;
  using namespace eagle4::k5;
  enum { LOGITS, TEMPS, PROBAS, ARGMAX, GREEDY, NT };
  static const char* names[NT] = {"logits", "temperatures", "probas", "argmax_ids", "is_greedy"};
  static const int bytes[NT] = {4, 4, 4, 8, 1};
  for (int i = 0; i < NT; ++i) {
    if (!tensors[i])
      return k5_fail(errbuf, errlen, -1, "logits_to_probas: tensor %s is missing (NULL)", names[i]);
    if (elem_bytes[i] != bytes[i])
      return k5_fail(errbuf, errlen, -1, "logits_to_probas: %s must have %d-byte elements, got %d", names[i],
                     bytes[i], int(elem_bytes[i]));
  }
  const int64_t G = iscalars[0];
  const bool write_probas = iscalars[1] != 0;
  const int64_t R = shapes[4 * LOGITS + 0], V = shapes[4 * LOGITS + 1];
  const int64_t B = shapes[4 * TEMPS + 0];
  if (B < 1 || B > MAX_BATCH)
    return k5_fail(errbuf, errlen, -2, "logits_to_probas: batch size B = len(temperatures) = %lld must be in [1, %d]",
                   (long long)B, MAX_BATCH);
  if (G < 1 || G > MAX_ROWS_PER_REQ)
    return k5_fail(errbuf, errlen, -2, "logits_to_probas: rows_per_req G = %lld must be in [1, %d]", (long long)G,
                   MAX_ROWS_PER_REQ);
  if (V < 1 || V > MAX_VOCAB)
    return k5_fail(errbuf, errlen, -2, "logits_to_probas: vocabulary V = logits.shape[1] = %lld must be in [1, %d]",
                   (long long)V, MAX_VOCAB);
  if (R != B * G)
    return k5_fail(errbuf, errlen, -1, "logits_to_probas: logits has %lld rows, expected B*G = %lld*%lld",
                   (long long)R, (long long)B, (long long)G);
  if (shapes[4 * PROBAS + 0] != R || shapes[4 * PROBAS + 1] != V)
    return k5_fail(errbuf, errlen, -1, "logits_to_probas: probas must have shape [%lld, %lld]", (long long)R,
                   (long long)V);
  if (shapes[4 * ARGMAX + 0] != R)
    return k5_fail(errbuf, errlen, -1, "logits_to_probas: argmax_ids must have %lld entries", (long long)R);
  if (shapes[4 * GREEDY + 0] != B)
    return k5_fail(errbuf, errlen, -1, "logits_to_probas: is_greedy must have %lld entries", (long long)B);

  logits_to_probas_top(PORT_ARG(static_cast<const float*>(tensors[LOGITS]), counters, LOGITS),
                       PORT_ARG(static_cast<const float*>(tensors[TEMPS]), counters, TEMPS),
                       PORT_ARG(static_cast<float*>(tensors[PROBAS]), counters, PROBAS),
                       PORT_ARG(static_cast<int64_t*>(tensors[ARGMAX]), counters, ARGMAX),
                       PORT_ARG(static_cast<uint8_t*>(tensors[GREEDY]), counters, GREEDY), int(B), int(G), int(V),
                       write_probas);
  return 0;
}

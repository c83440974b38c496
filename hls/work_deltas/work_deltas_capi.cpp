// C-simulation wrapper of K3 over the uniform C ABI (hls/include/eagle4_capi.h).
// Tensor slots (spec order): 0 work_scores, 1 work_deltas, 2 per_req_deltas (optional).
// iscalars: batch_size, node_count, node_top_k, verify_num, row_stride.
#include "eagle4_capi.h"
#include "work_deltas.hpp"

extern "C" int eagle4_work_deltas(EAGLE4_CAPI_PARAMS) {
  (void)fscalars;
  const auto c = eagle4::capi::make_ctx("work_deltas", tensors, shapes, elem_bytes, errbuf, errlen);
  using namespace eagle4::capi;
  const int64_t B = iscalars[0], n0 = iscalars[1], K = iscalars[2], vb = iscalars[3], stride = iscalars[4];
  EAGLE4_TRY(c.range("batch_size", B, 0, INT32_MAX, "must be >= 0"));
  EAGLE4_TRY(c.range("node_count (n0)", n0, 0, INT32_MAX, "must be >= 0"));
  EAGLE4_TRY(c.range("node_top_k (K)", K, 0, INT32_MAX, "must be >= 0"));
  if (n0 + K > stride)
    return c.fail(E_PRECONDITION, "node_count + node_top_k (n0 + K = %lld) must be <= row_stride = %lld",
                  (long long)(n0 + K), (long long)stride);
  EAGLE4_TRY(c.range("batch_size", B, 0, eagle4::MAX_BATCH_SIZE, "EAGLE4_MAX_BATCH_SIZE", E_BOUND));
  EAGLE4_TRY(c.range("node_count (n0)", n0, 0, eagle4::MAX_VERIFY, "EAGLE4_MAX_VERIFY", E_BOUND));
  EAGLE4_TRY(c.range("node_top_k (K)", K, 0, eagle4::MAX_TOP_K, "EAGLE4_MAX_TOP_K", E_BOUND));
  EAGLE4_TRY(c.range("row_stride", stride, 0, INT32_MAX / (B > 0 ? B : 1), "B * row_stride < 2^31", E_BOUND));
  EAGLE4_TRY(c.range("verify_num", vb, INT32_MIN, INT32_MAX, "int32"));
  EAGLE4_TRY(c.tensor(0, "work_scores", 4, B, stride));
  EAGLE4_TRY(c.tensor(1, "work_deltas", 4, K + 1));
  const bool per_req = c.present(2);
  if (per_req) EAGLE4_TRY(c.tensor(2, "per_req_deltas", 4, B, K + 1));

  work_deltas_top(PORT_ARG(c.ptr<const float>(0), counters, 0), int(B), int(n0), int(K), int(vb), int(stride),
                  PORT_ARG(c.ptr<float>(1), counters, 1),
                  PORT_ARG(per_req ? c.ptr<float>(2) : static_cast<float*>(nullptr), counters, 2), per_req);
  return OK;
}

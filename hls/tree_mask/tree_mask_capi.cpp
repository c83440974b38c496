// C-simulation wrapper of K4 over the uniform C ABI (hls/include/eagle4_capi.h).
// Tensor slots (spec order): 0 seq_lens, 1 req_pool_indices, 2 req_to_token, 3 tree_cache_locs,
// 4 tree_parent, 5 qo_indptr, 6 kv_indptr, 7 kv_indices, 8 positions, 9 mask_indptr_bits,
// 10 mask_indptr_bytes, 11 packed_mask, 12 mask_bool (opt). iscalars: S_max, B, T, Q, write_bool_mask.
// The data-dependent preconditions (seq_lens, pool indices, cache slots, the 2^31 indptr limit)
// are checked on the raw inputs before the top runs; those reads are not port traffic.
#include "eagle4_capi.h"
#include "tree_mask.hpp"

extern "C" int eagle4_tree_mask(EAGLE4_CAPI_PARAMS) {
  (void)fscalars;
  const auto c = eagle4::capi::make_ctx("tree_mask", tensors, shapes, elem_bytes, errbuf, errlen);
  using namespace eagle4::capi;
  const int64_t S_max = iscalars[0], B = iscalars[1], T = iscalars[2], Q = iscalars[3];
  const bool wbm = iscalars[4] != 0;
  EAGLE4_TRY(c.range("B", B, 0, INT32_MAX, "must be >= 0"));
  EAGLE4_TRY(c.range("T", T, 1, INT32_MAX, "must be >= 1"));
  EAGLE4_TRY(c.range("Q", Q, 1, T, "1 <= Q <= T"));
  EAGLE4_TRY(c.range("B", B, 0, eagle4::MAX_BATCH_SIZE, "EAGLE4_MAX_BATCH_SIZE", E_BOUND));
  EAGLE4_TRY(c.range("T", T, 1, eagle4::MAX_TREE_TOKENS, "EAGLE4_MAX_TREE_TOKENS", E_BOUND));
  EAGLE4_TRY(c.range("S_max", S_max, 0, eagle4::MAX_SEQ_LEN, "EAGLE4_MAX_SEQ_LEN", E_BOUND));
  EAGLE4_TRY(c.tensor(0, "seq_lens", 8, B));
  EAGLE4_TRY(c.tensor(1, "req_pool_indices", 8, B));
  if (!c.present(2)) return c.fail(E_ARG, "req_to_token is required");
  const int64_t P = c.dim(2, 0);
  EAGLE4_TRY(c.tensor(2, "req_to_token", 4, P, S_max));
  EAGLE4_TRY(c.tensor(3, "tree_cache_locs", 8, B, T));
  EAGLE4_TRY(c.tensor(4, "tree_parent", 8, B, T));
  const int64_t* L = c.ptr<const int64_t>(0);
  const int64_t* pool = c.ptr<const int64_t>(1);
  const int64_t* locs = c.ptr<const int64_t>(3);
  int64_t sumL = 0;
  for (int64_t b = 0; b < B; ++b) {
    if (L[b] < 0 || L[b] > S_max)
      return c.fail(E_PRECONDITION, "seq_lens must satisfy 0 <= L_b <= S_max = %lld, got %lld", (long long)S_max,
                    (long long)L[b]);
    if (pool[b] < 0 || pool[b] >= P)
      return c.fail(E_PRECONDITION, "req_pool_indices must lie in [0, P) = [0, %lld), got %lld", (long long)P,
                    (long long)pool[b]);
    sumL += L[b];
  }
  for (int64_t i = 0; i < B * T; ++i)
    if (locs[i] < 0 || locs[i] >= (int64_t(1) << 31))
      return c.fail(E_PRECONDITION, "tree_cache_locs must lie in [0, 2^31), got %lld", (long long)locs[i]);
  const int64_t total_bits = Q * (sumL + B * T);
  if (total_bits >= (int64_t(1) << 31))
    return c.fail(E_PRECONDITION, "sum over b of Q*(L_b+T) = %lld must be < 2^31 (indptrs are int32)",
                  (long long)total_bits);
  int64_t n_bytes = 0;
  for (int64_t b = 0; b < B; ++b) n_bytes += (Q * (L[b] + T) + 7) / 8;
  EAGLE4_TRY(c.tensor(5, "qo_indptr", 4, B + 1));
  EAGLE4_TRY(c.tensor(6, "kv_indptr", 4, B + 1));
  EAGLE4_TRY(c.tensor(8, "positions", 8, B, Q));
  EAGLE4_TRY(c.tensor(9, "mask_indptr_bits", 4, B + 1));
  EAGLE4_TRY(c.tensor(10, "mask_indptr_bytes", 4, B + 1));
  EAGLE4_TRY(c.flat_at_least(7, "kv_indices", 4, sumL + B * T));
  if (c.dim(7, 1) != 1 || c.dim(7, 2) != 1) return c.fail(E_SHAPE, "kv_indices must be 1-D");
  EAGLE4_TRY(c.flat_at_least(11, "packed_mask", 1, n_bytes));
  if (c.dim(11, 1) != 1 || c.dim(11, 2) != 1) return c.fail(E_SHAPE, "packed_mask must be 1-D");
  if (wbm) {
    EAGLE4_TRY(c.flat_at_least(12, "mask_bool (required when write_bool_mask)", 1, total_bits));
    if (c.dim(12, 1) != 1 || c.dim(12, 2) != 1) return c.fail(E_SHAPE, "mask_bool must be 1-D");
  }

  tree_mask_top(PORT_ARG(c.ptr<const int64_t>(0), counters, 0), PORT_ARG(c.ptr<const int64_t>(1), counters, 1),
                PORT_ARG(c.ptr<const int32_t>(2), counters, 2), int(S_max),
                PORT_ARG(c.ptr<const int64_t>(3), counters, 3), PORT_ARG(c.ptr<const int64_t>(4), counters, 4),
                int(B), int(T), int(Q), wbm, PORT_ARG(c.ptr<int32_t>(5), counters, 5),
                PORT_ARG(c.ptr<int32_t>(6), counters, 6), PORT_ARG(c.ptr<int32_t>(7), counters, 7),
                PORT_ARG(c.ptr<int64_t>(8), counters, 8), PORT_ARG(c.ptr<int32_t>(9), counters, 9),
                PORT_ARG(c.ptr<int32_t>(10), counters, 10), PORT_ARG(c.ptr<uint8_t>(11), counters, 11),
                PORT_ARG(wbm ? c.ptr<uint8_t>(12) : static_cast<uint8_t*>(nullptr), counters, 12));
  return OK;
}

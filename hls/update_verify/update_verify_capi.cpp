// C-simulation wrapper of K7 (uniform C ABI of hls/include/eagle4_capi.h; not synthesized).
// Tensor slots (spec.py order): 0 accept_index, 1 accept_length, 2 predicts, 3 finish_pos,
// 4 seq_lens, 5 req_pool_indices, 6 req_to_token (in/out), 7 out_cache_loc, 8 hidden_states,
// 9 verify_node_ids (optional), then the outputs 10..29 in §7.3 order (18 accepted_node_ids optional).
// iscalars: B, Q, S, H, S_max. fscalars: none.
// The precondition checks mirror src/eagle4/kernels/update_verify.py.
#include <vector>

#include "eagle4_capi.h"
#include "update_verify.hpp"

extern "C" int eagle4_update_verify(EAGLE4_CAPI_PARAMS) {
  (void)fscalars;
  using namespace eagle4::capi;
  using namespace eagle4::k7;
  enum {
    ACC_IDX, ACC_LEN, PREDICTS, FINISH, SEQ, POOL, RTT, LOC, HID, NODE_IDS,
    O_ACC_IDX, O_ACC_LEN, O_ACC_PTR, O_FLAT, O_VID, O_EVICT, O_FREE, O_SEQ, O_NODE_IDS, O_UCOUNT,
    O_UIDX, O_NACC_LEN, O_NPTR, O_NVID, O_NHID, O_NPOS, O_NSEQ, O_NPOOL, O_NROOT, O_NLAST, NT
  };
  const Ctx c = make_ctx("update_verify", tensors, shapes, elem_bytes, errbuf, errlen);
  const int64_t B = iscalars[0], Q = iscalars[1], S = iscalars[2], H = iscalars[3], S_max = iscalars[4];

  EAGLE4_TRY(c.range("B", B, 1, MAX_BATCH, "B >= 1; EAGLE4_MAX_BATCH_SIZE", B < 1 ? E_PRECONDITION : E_BOUND));
  EAGLE4_TRY(c.range("Q", Q, 1, MAX_VERIFY, "Q >= 1; EAGLE4_MAX_VERIFY", Q < 1 ? E_PRECONDITION : E_BOUND));
  EAGLE4_TRY(c.range("S", S, 1, MAX_ACCEPT, "S >= 1; EAGLE4_MAX_ACCEPT_LEN", S < 1 ? E_PRECONDITION : E_BOUND));
  EAGLE4_TRY(c.range("H", H, 1, MAX_HIDDEN, "H >= 1; EAGLE4_MAX_HIDDEN", H < 1 ? E_PRECONDITION : E_BOUND));
  EAGLE4_TRY(c.range("S_max", S_max, 1, MAX_SEQ_LEN, "S_max >= 1; EAGLE4_MAX_SEQ_LEN",
                     S_max < 1 ? E_PRECONDITION : E_BOUND));

  EAGLE4_TRY(c.tensor(ACC_IDX, "accept_index", 4, B, S));
  EAGLE4_TRY(c.tensor(ACC_LEN, "accept_length", 4, B));
  EAGLE4_TRY(c.tensor(PREDICTS, "predicts", 4, B * Q));
  EAGLE4_TRY(c.tensor(FINISH, "finish_pos", 4, B));
  EAGLE4_TRY(c.tensor(SEQ, "seq_lens", 8, B));
  EAGLE4_TRY(c.tensor(POOL, "req_pool_indices", 8, B));
  if (!c.present(RTT) || c.dim(RTT, 2) != 1 || c.dim(RTT, 3) != 1)
    return c.fail(E_ARG, "req_to_token must be a 2-D tensor [P, S_max]");
  const int64_t P = c.dim(RTT, 0);
  EAGLE4_TRY(c.tensor(RTT, "req_to_token", 4, P, S_max));
  EAGLE4_TRY(c.tensor(LOC, "out_cache_loc", 8, B * Q));
  if (!c.present(HID)) return c.fail(E_ARG, "hidden_states is required");
  const int eh = c.esize(HID);
  if (eh != 2 && eh != 4) return c.fail(E_ARG, "hidden_states must have 2- or 4-byte elements, got %d", eh);
  EAGLE4_TRY(c.tensor(HID, "hidden_states", eh, B * Q, H));
  const bool has_ids = c.present(NODE_IDS);
  if (has_ids) EAGLE4_TRY(c.tensor(NODE_IDS, "verify_node_ids", 8, B, Q));
  else if (c.present(O_NODE_IDS))
    return c.fail(E_PRECONDITION, "accepted_node_ids exists only when verify_node_ids is given");

  struct OutSpec { int slot; const char* name; int eb; int64_t d0, d1; };
  const OutSpec outs[] = {
      {O_ACC_IDX, "accept_index_out", 4, B, S}, {O_ACC_LEN, "accept_length_out", 4, B, 1},
      {O_ACC_PTR, "accept_indptr", 4, B + 1, 1}, {O_FLAT, "accepted_flat", 4, B * S, 1},
      {O_VID, "verified_id", 4, B * S, 1}, {O_EVICT, "evict_mask", 1, B * Q, 1},
      {O_FREE, "free_slots", 8, B * Q, 1}, {O_SEQ, "seq_lens_out", 8, B, 1},
      {O_NODE_IDS, "accepted_node_ids", 8, B * S, 1}, {O_UCOUNT, "unfinished_count", 4, 1, 1},
      {O_UIDX, "unfinished_index", 8, B, 1}, {O_NACC_LEN, "next_accept_length", 4, B, 1},
      {O_NPTR, "next_indptr", 4, B + 1, 1}, {O_NVID, "next_verified_id", 4, B * S, 1},
      {O_NHID, "next_hidden", eh, B * S, H}, {O_NPOS, "next_positions", 8, B * S, 1},
      {O_NSEQ, "next_seq_lens", 8, B, 1}, {O_NPOOL, "next_req_pool_indices", 8, B, 1},
      {O_NROOT, "next_root_token", 4, B, 1}, {O_NLAST, "next_last_flat", 4, B, 1},
  };
  for (const OutSpec& o : outs) {
    if (o.slot == O_NODE_IDS && !has_ids) continue;
    EAGLE4_TRY(c.tensor(o.slot, o.name, o.eb, o.d0, o.d1));
  }

  // Preconditions (K6 guarantees them), in the reference's order.
  const int32_t* ai = c.ptr<const int32_t>(ACC_IDX);
  const int32_t* al = c.ptr<const int32_t>(ACC_LEN);
  const int32_t* fp = c.ptr<const int32_t>(FINISH);
  const int64_t* seq = c.ptr<const int64_t>(SEQ);
  const int64_t* pool = c.ptr<const int64_t>(POOL);
  const int64_t* loc = c.ptr<const int64_t>(LOC);
  for (int64_t b = 0; b < B; ++b)
    if (al[b] < 0 || al[b] > S - 1)
      return c.fail(E_PRECONDITION, "accept_length[%lld] must be in [0, S-1 = %lld], got %d", (long long)b,
                    (long long)(S - 1), al[b]);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = al[b] + 1; j < S; ++j)
      if (ai[b * S + j] != -1)
        return c.fail(E_PRECONDITION,
                      "accept_index[%lld,%lld] must be -1 past the prefix of length accept_length+1 = %d, got %d",
                      (long long)b, (long long)j, al[b] + 1, ai[b * S + j]);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j <= al[b]; ++j) {
      const int64_t p = ai[b * S + j];
      if (p < b * Q || p >= (b + 1) * Q)
        return c.fail(E_PRECONDITION,
                      "accept_index[%lld,%lld] must be a position of request %lld in [%lld, %lld) (entries "
                      "0..accept_length are not -1), got %lld",
                      (long long)b, (long long)j, (long long)b, (long long)(b * Q), (long long)((b + 1) * Q),
                      (long long)p);
    }
  {
    std::vector<uint8_t> seen(size_t(B * Q), 0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j <= al[b]; ++j) {
        const int64_t p = ai[b * S + j];
        if (seen[size_t(p)]) return c.fail(E_PRECONDITION, "accept_index[%lld] must hold distinct positions", (long long)b);
        seen[size_t(p)] = 1;
      }
  }
  for (int64_t b = 0; b < B; ++b)
    if (fp[b] < -1 || fp[b] > al[b])
      return c.fail(E_PRECONDITION, "finish_pos[%lld] must be -1 or in [0, accept_length[%lld] = %d], got %d",
                    (long long)b, (long long)b, al[b], fp[b]);
  for (int64_t b = 0; b < B; ++b)
    if (seq[b] < 0) return c.fail(E_PRECONDITION, "seq_lens[%lld] must be >= 0, got %lld", (long long)b, (long long)seq[b]);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t a = fp[b] >= 0 ? fp[b] : al[b];
    if (seq[b] > S_max - a - 1)
      return c.fail(E_PRECONDITION, "seq_lens[%lld] + a_b + 1 must be <= S_max = %lld, got %lld + %lld + 1",
                    (long long)b, (long long)S_max, (long long)seq[b], (long long)a);
  }
  for (int64_t b = 0; b < B; ++b)
    if (pool[b] < 0 || pool[b] >= P)
      return c.fail(E_PRECONDITION, "req_pool_indices[%lld] must be in [0, P = %lld), got %lld", (long long)b,
                    (long long)P, (long long)pool[b]);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t b2 = 0; b2 < b; ++b2)
      if (pool[b] == pool[b2])
        return c.fail(E_PRECONDITION,
                      "req_pool_indices must be distinct (one req_to_token row per request), got %lld twice",
                      (long long)pool[b]);
  for (int64_t p = 0; p < B * Q; ++p)
    if (loc[p] < 0 || loc[p] > INT32_MAX)
      return c.fail(E_PRECONDITION,
                    "out_cache_loc[%lld] must be in [0, 2^31-1] (it is stored to the int32 req_to_token), got %lld",
                    (long long)p, (long long)loc[p]);

  const int hidden_words = int(H * eh / 2);
  update_verify_top(
      PORT_ARG(c.ptr<const int32_t>(ACC_IDX), counters, ACC_IDX),
      PORT_ARG(c.ptr<const int32_t>(ACC_LEN), counters, ACC_LEN),
      PORT_ARG(c.ptr<const int32_t>(PREDICTS), counters, PREDICTS),
      PORT_ARG(c.ptr<const int32_t>(FINISH), counters, FINISH), PORT_ARG(c.ptr<const int64_t>(SEQ), counters, SEQ),
      PORT_ARG(c.ptr<const int64_t>(POOL), counters, POOL), PORT_ARG(c.ptr<int32_t>(RTT), counters, RTT),
      PORT_ARG(c.ptr<const int64_t>(LOC), counters, LOC), PORT_ARG(c.ptr<const uint16_t>(HID), counters, HID),
      PORT_ARG(c.ptr<const int64_t>(NODE_IDS), counters, NODE_IDS),
      PORT_ARG(c.ptr<int32_t>(O_ACC_IDX), counters, O_ACC_IDX),
      PORT_ARG(c.ptr<int32_t>(O_ACC_LEN), counters, O_ACC_LEN),
      PORT_ARG(c.ptr<int32_t>(O_ACC_PTR), counters, O_ACC_PTR), PORT_ARG(c.ptr<int32_t>(O_FLAT), counters, O_FLAT),
      PORT_ARG(c.ptr<int32_t>(O_VID), counters, O_VID), PORT_ARG(c.ptr<uint8_t>(O_EVICT), counters, O_EVICT),
      PORT_ARG(c.ptr<int64_t>(O_FREE), counters, O_FREE), PORT_ARG(c.ptr<int64_t>(O_SEQ), counters, O_SEQ),
      PORT_ARG(c.ptr<int64_t>(O_NODE_IDS), counters, O_NODE_IDS),
      PORT_ARG(c.ptr<int32_t>(O_UCOUNT), counters, O_UCOUNT), PORT_ARG(c.ptr<int64_t>(O_UIDX), counters, O_UIDX),
      PORT_ARG(c.ptr<int32_t>(O_NACC_LEN), counters, O_NACC_LEN),
      PORT_ARG(c.ptr<int32_t>(O_NPTR), counters, O_NPTR), PORT_ARG(c.ptr<int32_t>(O_NVID), counters, O_NVID),
      PORT_ARG(c.ptr<uint16_t>(O_NHID), counters, O_NHID), PORT_ARG(c.ptr<int64_t>(O_NPOS), counters, O_NPOS),
      PORT_ARG(c.ptr<int64_t>(O_NSEQ), counters, O_NSEQ), PORT_ARG(c.ptr<int64_t>(O_NPOOL), counters, O_NPOOL),
      PORT_ARG(c.ptr<int32_t>(O_NROOT), counters, O_NROOT), PORT_ARG(c.ptr<int32_t>(O_NLAST), counters, O_NLAST),
      int(B), int(Q), int(S), hidden_words, S_max, has_ids);
  (void)NT;
  return OK;
}

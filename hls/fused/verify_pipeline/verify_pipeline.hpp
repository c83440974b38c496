// Fused verify pipeline (dataflow design): K4 (verify use) -> K5 on demand + K6 -> finish rule -> K7.
// The [B,Q,V] probability tensor is never written. K5 runs only on the rows K6's walk visits (the
// root row and the row of each accepted child): each such logits row is read ONCE into an on-chip
// row buffer, its (m, s, argmax) computed, and every probability the walk tests plus the final
// residual row come from that buffer (§9.2, one step further: unvisited rows are never read).
// predicts / accept_index / accept_length / finish_pos stay on-chip between K6 and K7.
#ifndef E4F_VERIFY_PIPELINE_HPP
#define E4F_VERIFY_PIPELINE_HPP

#include <cstdint>

#include "eagle4_port.h"
#include "eagle4_stream.h"
#include "../common/e4f_bounds.h"
#include "../common/e4f_stages.hpp"

namespace e4f {
template <class T>
using VPort = PORT(T);

enum VerifySlot {
  V_SEQ = 0, V_POOL, V_R2T, V_LOC, V_TREE_PARENT, V_LOGITS, V_TEMPS, V_CAND, V_RIDX, V_NTOK, V_NSIB, V_COINS,
  V_FCOINS, V_REMAINING, V_HIDDEN, V_NODE_IDS,
  V_QO, V_KVPTR, V_KVIDX, V_POS, V_MBITS, V_MBYTES, V_PACKED,
  V_PREDICTS, V_ACC_IDX, V_ACC_LEN, V_FINISH,
  V_AIO, V_ALO, V_AIP, V_AFLAT, V_VID, V_EVICT, V_FREE, V_SLO, V_ANODE, V_UCNT, V_UIDX, V_NAL, V_NIP, V_NVID,
  V_NHID, V_NPOS, V_NSEQ, V_NPOOL, V_NROOT, V_NLAST, V_NSLOTS
};

struct VerifyCfg {
  int64_t B, Q, S, V, H, S_max, eos, capkv, cappack;
  int hid_code;
  float thr_single, thr_acc;
};
int parse_verify_cfg(const int64_t* is, const float* fs, VerifyCfg& c);

// The dataflow top (defined in verify_pipeline.cpp). Explicitly instantiated there for bf16 hidden
// states (uint16_t bits), the instance the synthesis top fused_verify_top (verify_pipeline_synth.cpp) calls.
template <typename HT>
void verify_pipeline_top(VPort<const int64_t> seq, VPort<const int64_t> pool, VPort<int32_t> r2t,
                        VPort<const int64_t> loc, VPort<const int64_t> tparent, VPort<const float> logits,
                        VPort<const float> temps, VPort<const int64_t> cand, VPort<const int64_t> ridx,
                        VPort<const int64_t> ntok, VPort<const int64_t> nsib, VPort<const float> coins,
                        VPort<const float> fcoins, VPort<const int64_t> remaining, VPort<const HT> hidden,
                        VPort<const int64_t> node_ids, bool has_node_ids, VPort<int32_t> qo, VPort<int32_t> kvptr,
                        VPort<int32_t> kvidx, VPort<int64_t> positions, VPort<int32_t> mbits, VPort<int32_t> mbytes,
                        VPort<uint8_t> packed,
                        // K7 outputs: one m_axi port each, passed as plain parameters (no struct of ports)
                        VPort<int32_t> accept_index_out, VPort<int32_t> accept_length_out,
                        VPort<int32_t> accept_indptr, VPort<int32_t> accepted_flat, VPort<int32_t> verified_id,
                        VPort<uint8_t> evict_mask, VPort<int64_t> free_slots, VPort<int64_t> seq_lens_out,
                        VPort<int64_t> accepted_node_ids, VPort<int32_t> unfinished_count,
                        VPort<int64_t> unfinished_index, VPort<int32_t> next_accept_length,
                        VPort<int32_t> next_indptr, VPort<int32_t> next_verified_id, VPort<HT> next_hidden,
                        VPort<int64_t> next_positions, VPort<int64_t> next_seq_lens,
                        VPort<int64_t> next_req_pool_indices, VPort<int32_t> next_root_token,
                        VPort<int32_t> next_last_flat,
                        VPort<int32_t> dbg_pred, VPort<int32_t> dbg_acc, VPort<int32_t> dbg_len, VPort<int32_t> dbg_fin,
                        VerifyCfg c);

}  // namespace e4f

#endif

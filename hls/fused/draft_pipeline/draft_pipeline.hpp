// Fused draft pipeline (persistent dataflow design): draft LM head over the hot vocabulary
// (hidden -> logits -> softmax -> top-K; weights streamed from HBM at the contract's precision)
// -> K1 -> K2 -> K3 -> frontier hand-off -> K4 (draft use) for the next layer.
// The cumulative tree state, sort/work buffers, masks, scores and indices live in on-chip arrays
// for the whole draft step and are written back once at finalize (with the verify set).
#ifndef E4F_DRAFT_PIPELINE_HPP
#define E4F_DRAFT_PIPELINE_HPP

#include <cstdint>

#include "eagle4_port.h"
#include "eagle4_stream.h"
#include "../common/e4f_bounds.h"
#include "../common/e4f_stages.hpp"

namespace e4f {
template <class T>
using Port = PORT(T);

// Port slots of the fused draft design (order of eagle4_fused_draft_step's tensors).
enum DraftSlot {
  D_ROOT = 0, D_HIDDEN, D_LMW, D_LMS, D_HOT, D_WIDTHS, D_VNS, D_SEQ, D_POOL, D_R2T, D_LOCS,
  D_OUT_HIDDEN, D_OUT_TOKENS, D_WORK_DELTAS, D_QO, D_KVPTR, D_KVIDX, D_POS, D_MBITS, D_MBYTES, D_PACKED,
  D_CTOK, D_CSC, D_CDEL, D_PREV, D_NEXT, D_SIDE,
  D_VT_CAND, D_VT_RIDX, D_VT_NTOK, D_VT_NSIB, D_VT_PARENT, D_VT_NODE, D_CC_OUT, D_SPILL, D_DBG_TOPK_P, D_DBG_TOPK_T,
  D_CAND_P, D_CAND_T, D_NSLOTS
};

struct DraftCfg {
  int64_t B, K, D, H, Vt, Vh, N, M, I, S_max, Tcap, capkv, cappack;
  int use_hot, hid_code, w_code, use_scale;
  int bypass_lm_head;  // testbench: take each layer's top-K candidates from cand_p/cand_t (no LM head)
  int64_t vn_final;
};

}  // namespace e4f

extern "C" const char* eagle4_fused_draft_ports();
extern "C" const char* eagle4_unfused_draft_ports();

#endif

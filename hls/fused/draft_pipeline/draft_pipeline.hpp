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

// iscalars in the order of eagle4_fused_draft_step; returns -2 when a size exceeds e4f_bounds.h
int parse_draft_cfg(const int64_t* is, DraftCfg& c);

// The persistent top (defined in draft_pipeline.cpp; phase 0 init, 1 one layer, 2 finalize).
// Explicitly instantiated there for the deployment precisions (bf16 hidden, packed int4 weights) that
// the synthesis top fused_draft_top (draft_pipeline_synth.cpp) calls.
// WE: the weight ports' element type (WT's, or the packed bytes of int4: WElem<WT>).
template <typename HT, typename WT, typename WE>
int draft_pipeline_top(int phase, Port<const int64_t> root, Port<const HT> hidden, Port<const WE> lmw0,
                       Port<const WE> lmw1, Port<const WE> lmw2, Port<const WE> lmw3,
                       Port<const float> lms, Port<float> spill, Port<const int64_t> hot, int64_t W, int64_t Wn, int64_t Vn,
                       Port<const int64_t> seq_lens, Port<const int64_t> pool, Port<const int32_t> r2t,
                       Port<const int64_t> locs, Port<HT> out_hidden, Port<int64_t> out_tokens,
                       Port<float> work_deltas, Port<int32_t> qo, Port<int32_t> kvptr, Port<int32_t> kvidx,
                       Port<int64_t> positions, Port<int32_t> mbits, Port<int32_t> mbytes, Port<uint8_t> packed,
                       Port<int64_t> ctok, Port<float> csc, Port<int64_t> cdel, Port<int64_t> cprev,
                       Port<int64_t> cnext, Port<int64_t> cside, Port<int64_t> vt_cand, Port<int64_t> vt_ridx,
                       Port<int64_t> vt_ntok, Port<int64_t> vt_nsib, Port<int64_t> vt_parent, Port<int64_t> vt_node,
                       Port<int64_t> cc_out, Port<const float> cand_p, Port<const int64_t> cand_t,
                       const DraftCfg& c);

}  // namespace e4f

extern "C" const char* eagle4_fused_draft_ports();
extern "C" const char* eagle4_unfused_draft_ports();

#endif

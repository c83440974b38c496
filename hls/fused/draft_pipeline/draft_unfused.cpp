// Unfused reference chain of one draft step (KERNELS.md §8.1, §9 accounting rule): every
// kernel is a separate call and every intermediate goes through HBM (a std::vector seen through
// counted PORTs). K1, K2, K3 and K4 are the per-kernel tops of hls/<key>/ (the fused design runs
// their per-request cores), the LM head, K5 and top-K the stage code (e4f_stages.hpp); it is
// (a) the EXACT reference the fused draft pipeline is tested against and (b) the counted traffic
// of the "initial unfused FPGA backend" the contract's [fpga] section declares.
// Same tensor interface as eagle4_fused_draft_step; extra iscalars: k5_passes, k4_materialize.
#include <string>
#include <vector>

#include "draft_pipeline.hpp"
#include "eagle4_capi.h"
#include "../common/e4f_unfused_ports.hpp"
// the per-kernel tops (one kernel = one HLS folder), called as separate kernels
#include "../../draft_tree_score/draft_tree_score.hpp"
#include "../../tree_mask/tree_mask.hpp"
#include "../../update_draft_state/update_draft_state.hpp"
#include "../../update_draft_state/update_draft_state_core.hpp"
#include "../../work_deltas/work_deltas.hpp"

namespace e4f {
int parse_draft_cfg(const int64_t* is, DraftCfg& c);
namespace unf {

#define E4F_UNF_PORTS(X)                                                                                    \
  X(init_state) X(lmhead_hidden) X(lmhead_weight) X(lmhead_scale) X(lmhead_logits) X(k5_logits)             \
  X(k5_temperatures) X(k5_probas) X(k5_argmax_ids) X(k5_is_greedy) X(topk_probas_in) X(topk_probas_out)     \
  X(topk_tokens_out) X(k1_topk_probas_sampling) X(k1_topk_tokens_sampling) X(k1_last_layer_scores)          \
  X(k1_curr_layer_scores) X(k1_sort_layer_scores) X(k1_sort_layer_indices) X(k1_cache_topk_indices)         \
  X(k1_parent_indices_in_layer) X(k1_input_hidden_states) X(k1_output_hidden_states) X(k1_hot_token_id)     \
  X(k2_topk_probas) X(k2_topk_tokens) X(k2_sorted_scores) X(k2_sorted_indexs) X(k2_parent_indexs)           \
  X(k2_topk_indexs) X(k2_input_tree_mask) X(k2_cumu_tokens) X(k2_cumu_scores) X(k2_cumu_deltas)             \
  X(k2_prev_indexs) X(k2_next_indexs) X(k2_side_indexs) X(k2_output_scores) X(k2_output_tokens)             \
  X(k2_work_scores) X(k2_sort_scores) X(k2_output_tree_mask) X(k3_work_scores) X(k3_work_deltas)            \
  X(glue_frontier) X(glue_k4_inputs) X(k4_seq_lens) X(k4_req_pool_indices) X(k4_req_to_token)               \
  X(k4_tree_cache_locs) X(k4_tree_parent) X(k4_qo_indptr) X(k4_kv_indptr) X(k4_kv_indices) X(k4_positions)  \
  X(k4_mask_indptr_bits) X(k4_mask_indptr_bytes) X(k4_mask_bool) X(k4_packed_mask) X(glue_select)

#define E4F_ENUM(n) U_##n,
enum UnfSlot { E4F_UNF_PORTS(E4F_ENUM) U_NSLOTS };
#undef E4F_ENUM
#define E4F_STR(n) #n ","
static const char* kPorts = E4F_UNF_PORTS(E4F_STR);
#undef E4F_STR

template <class T>
using V = std::vector<T>;


// K1 top of the hidden element width (raw bits: 16-bit or f32)
template <typename HT>
void k1_top(PORT(const float) probas, PORT(int64_t) tokens, PORT(const float) last, PORT(float) curr,
            PORT(float) sort_s, PORT(int64_t) sort_i, PORT(int64_t) cache, PORT(int64_t) parent,
            PORT(const HT) hid_in, PORT(HT) hid_out, PORT(const int64_t) hot, int B, int K, int W, int64_t cc,
            bool use_hot, int64_t Vh, int H) {
  if constexpr (sizeof(HT) == 2)
    draft_tree_score_top(probas, tokens, last, curr, sort_s, sort_i, cache, parent, hid_in, hid_out, hot,
                         P<int64_t>(), B, K, W, cc, use_hot, Vh, H, true, false);
  else
    draft_tree_score_top_f32(probas, tokens, last, curr, sort_s, sort_i, cache, parent, hid_in, hid_out, hot,
                             P<int64_t>(), B, K, W, cc, use_hot, Vh, H, true, false);
}

template <typename HT, typename WT>
int run(const eagle4::capi::Ctx& x, const DraftCfg& c, int k5_passes, bool materialize, eagle4::PortCounter* cnt) {
#define UP(ptr, slot) PORT_ARG((ptr), cnt, (slot))
  const int64_t B = c.B, K = c.K, H = c.H, Vt = c.Vt, N = c.N, M = c.M, I = c.I;
  const int64_t* widths = x.ptr<const int64_t>(D_WIDTHS);  // host-side schedule
  const int64_t* vns = x.ptr<const int64_t>(D_VNS);
  int64_t* ctok = x.ptr<int64_t>(D_CTOK);
  float* csc = x.ptr<float>(D_CSC);
  int64_t *cdel = x.ptr<int64_t>(D_CDEL), *cprev = x.ptr<int64_t>(D_PREV), *cnext = x.ptr<int64_t>(D_NEXT),
          *cside = x.ptr<int64_t>(D_SIDE);
  // HBM scratch of the unfused chain
  V<float> sort_scores(B * M, 0.0f), work_scores(B * (M + K), 0.0f);
  V<uint8_t> out_mask(B * K * (I + 1), 0), in_mask;
  V<float> last_scores(B * K, 1.0f);
  V<int64_t> topk_idx(B * K, 0);
  V<float> lg, pr, topk_p;
  V<int64_t> amax, topk_t;
  V<uint8_t> isg(B);
  V<float> temps(B, 1.0f);
  V<float> curr, sort_s;
  V<int64_t> sort_i, cache(B * K), parent(B * K);
  V<int64_t> tree_parent_host;  // host-side tree of fed tokens [B, I]
  tree_parent_host.assign(B * (I + 1), -1);
  V<int64_t> parent_prev(B * K, 0);
  V<float> rowbuf;
  // ---- init (§8.1 step 0) ----
  {
    auto pt = UP(ctok, U_init_state);
    auto ps = UP(csc, U_init_state);
    auto pd = UP(cdel, U_init_state);
    auto pp = UP(cprev, U_init_state), pn = UP(cnext, U_init_state), pside = UP(cside, U_init_state);
    auto pso = UP(sort_scores.data(), U_init_state);
    const int64_t* root = x.ptr<const int64_t>(D_ROOT);
    for (int64_t b = 0; b < B; ++b) {
      pt[b * N] = root[b];
      ps[b * N] = 1.0f;
      pd[b * N] = int64_t(0);
      pp[b * N] = int64_t(-1);
      pn[b * N] = int64_t(-1);
      pside[b * N] = int64_t(-1);
      pso[b * M] = 1.0f;
    }
  }
  int64_t cc = 1, Ic = 1, off_prev = 0;
  const int64_t rowsH = B * K * H;
  for (int64_t d = 0; d < c.D; ++d) {
    const int64_t W = widths[d], Wn = (d + 1 < c.D) ? widths[d + 1] : 0, Vn = vns[d];
    if (W < 1 || W * K > E4F_MAX_C || (d > 0 && W > K) || (d == 0 && W != 1))
      return x.fail(eagle4::capi::E_PRECONDITION, "widths[%lld] invalid", (long long)d);
    if (Wn > 0 && (Wn > K || Ic - 1 + Wn > I)) return x.fail(eagle4::capi::E_BOUND, "input_count exceeds I");
    const int64_t R = B * W, C = W * K;
    const HT* hid = x.ptr<const HT>(D_HIDDEN) + d * rowsH;
    // ---- LM head kernel: hidden [R,H] + weights -> logits [R,Vt] (HBM) ----
    lg.assign(R * Vt, 0.0f);
    {
      auto ph = UP(hid, U_lmhead_hidden);
      V<float> xf(R * H), wr(H);
      for (int64_t i = 0; i < R * H; ++i) xf[i] = hid_to_f(static_cast<HT>(ph[i]), c.hid_code);
      lm_head<WT>(UP(x.ptr<const WElem<WT>>(D_LMW), U_lmhead_weight), UP(x.ptr<const float>(D_LMS), U_lmhead_scale),
                  c.use_scale != 0, xf.data(), R, H, Vt, UP(lg.data(), U_lmhead_logits), Vt, wr.data());
    }
    // ---- K5 (temp = 1, sampling): logits read k5_passes times, probas written ----
    pr.assign(R * Vt, 0.0f);
    amax.assign(R, 0);
    rowbuf.assign(Vt, 0.0f);
    {
      auto pl = UP(lg.data(), U_k5_logits);
      auto pp_ = UP(pr.data(), U_k5_probas);
      auto pa = UP(amax.data(), U_k5_argmax_ids);
      auto pg = UP(isg.data(), U_k5_is_greedy);
      auto ptm = UP(temps.data(), U_k5_temperatures);
      for (int64_t b = 0; b < B; ++b) {
        const float t = ptm[b];
        const bool g = greedy_temp(t);
        pg[b] = uint8_t(g ? 1 : 0);
        for (int64_t w = 0; w < W; ++w) {
          const int64_t r = b * W + w;
          for (int pass = 0; pass < k5_passes; ++pass)
            for (int64_t v = 0; v < Vt; ++v) rowbuf[v] = pl[r * Vt + v];
          const RowStats rs = row_stats(rowbuf.data(), Vt, t, g);
          pa[r] = rs.amax;
          for (int64_t v = 0; v < Vt; ++v) pp_[r * Vt + v] = g ? (v == rs.amax ? 1.0f : 0.0f) : proba(rowbuf[v], t, rs);
        }
      }
    }
    // ---- external top-K: probas -> topk_probas/tokens [B, W*K] ----
    topk_p.assign(B * C, 0.0f);
    topk_t.assign(B * C, 0);
    {
      auto pin = UP(pr.data(), U_topk_probas_in);
      auto po = UP(topk_p.data(), U_topk_probas_out);
      auto pt = UP(topk_t.data(), U_topk_tokens_out);
      float bp[E4F_MAX_K];
      int64_t bi[E4F_MAX_K];
      for (int64_t r = 0; r < R; ++r) {
        topk_row(pin + r * Vt, Vt, static_cast<int>(K), bp, bi);
        for (int64_t k = 0; k < K; ++k) {
          po[r * K + k] = bp[k];
          pt[r * K + k] = bi[k];
        }
      }
    }
    if (x.present(D_DBG_TOPK_P)) {  // testbench tap (not counted): the external top-K of every layer
      for (int64_t i = 0; i < B * C; ++i) {
        x.ptr<float>(D_DBG_TOPK_P)[(d * B + i / C) * E4F_MAX_C + i % C] = topk_p[i];
        x.ptr<int64_t>(D_DBG_TOPK_T)[(d * B + i / C) * E4F_MAX_C + i % C] = topk_t[i];
      }
    }
    // ---- K1 (hls/draft_tree_score) ----
    curr.assign(B * C, 0.0f);
    sort_s.assign(B * C, 0.0f);
    sort_i.assign(B * C, 0);
    HT* out_h = x.ptr<HT>(D_OUT_HIDDEN) + d * rowsH;
    k1_top<HT>(cport(topk_p.data(), cnt, U_k1_topk_probas_sampling), UP(topk_t.data(), U_k1_topk_tokens_sampling),
               cport(last_scores.data(), cnt, U_k1_last_layer_scores), UP(curr.data(), U_k1_curr_layer_scores),
               UP(sort_s.data(), U_k1_sort_layer_scores), UP(sort_i.data(), U_k1_sort_layer_indices),
               UP(cache.data(), U_k1_cache_topk_indices), UP(parent.data(), U_k1_parent_indices_in_layer),
               UP(hid, U_k1_input_hidden_states), UP(out_h, U_k1_output_hidden_states),
               cport(x.ptr<const int64_t>(D_HOT), cnt, U_k1_hot_token_id), static_cast<int>(B), static_cast<int>(K),
               static_cast<int>(W), cc, c.use_hot != 0, c.Vh, static_cast<int>(H));
    {
      // ---- K2 (hls/update_draft_state, state in HBM) ----
      int64_t* out_tok = x.ptr<int64_t>(D_OUT_TOKENS) + d * B * K;
      V<float> out_sc(B * K);
      update_draft_state_top(
          cport(curr.data(), cnt, U_k2_topk_probas), cport(topk_t.data(), cnt, U_k2_topk_tokens),
          cport(sort_s.data(), cnt, U_k2_sorted_scores), cport(sort_i.data(), cnt, U_k2_sorted_indexs),
          cport(parent.data(), cnt, U_k2_parent_indexs), cport(topk_idx.data(), cnt, U_k2_topk_indexs),
          cport(in_mask.data(), cnt, U_k2_input_tree_mask), static_cast<int>(B), static_cast<int>(K),
          static_cast<int>(W), static_cast<int>(Ic), cc, Vn, d + 1, static_cast<int>(I), static_cast<int>(N),
          static_cast<int>(M), UP(ctok, U_k2_cumu_tokens), UP(csc, U_k2_cumu_scores), UP(cdel, U_k2_cumu_deltas),
          UP(cprev, U_k2_prev_indexs), UP(cnext, U_k2_next_indexs), UP(cside, U_k2_side_indexs),
          UP(out_sc.data(), U_k2_output_scores), UP(out_tok, U_k2_output_tokens),
          UP(work_scores.data(), U_k2_work_scores), UP(sort_scores.data(), U_k2_sort_scores),
          UP(out_mask.data(), U_k2_output_tree_mask));
      // ---- K3 (hls/work_deltas) ----
      const int n0 = eagle4::k2::sizes(static_cast<int>(K), static_cast<int>(C), cc, Vn, static_cast<int>(N),
                                       static_cast<int>(M)).n0;
      work_deltas_top(cport(work_scores.data(), cnt, U_k3_work_scores), static_cast<int>(B), n0, static_cast<int>(K),
                      static_cast<int>(Vn), static_cast<int>(M + K),
                      UP(x.ptr<float>(D_WORK_DELTAS) + d * (K + 1), U_k3_work_deltas), P<float>(), false);
      cc += C;
      if (Wn == 0) break;
      // ---- host glue: frontier hand-off (§8.1 step 2, D20) ----
      {
        auto g = UP(out_sc.data(), U_glue_frontier);
        auto gl = UP(last_scores.data(), U_glue_frontier);
        auto gc = UP(cache.data(), U_glue_frontier);
        auto gt = UP(topk_idx.data(), U_glue_frontier);
        auto gm = UP(out_mask.data(), U_glue_frontier);
        auto gpa = UP(parent.data(), U_glue_frontier);
        V<uint8_t> nm(B * Wn * (Ic - 1 + Wn));
        auto gn = UP(nm.data(), U_glue_frontier);
        const int64_t Icn = Ic + Wn;
        for (int64_t b = 0; b < B; ++b) {
          for (int64_t w = 0; w < Wn; ++w) {
            gl[b * Wn + w] = static_cast<float>(g[b * K + w]);
            gt[b * Wn + w] = static_cast<int64_t>(gc[b * K + w]);
            for (int64_t j = 0; j < Ic - 1; ++j)
              gn[(b * Wn + w) * (Icn - 1) + j] = static_cast<uint8_t>(gm[(b * K + w) * (I + 1) + j]);
            for (int64_t w2 = 0; w2 < Wn; ++w2) gn[(b * Wn + w) * (Icn - 1) + Ic - 1 + w2] = uint8_t(w2 == w ? 1 : 0);
          }
          for (int64_t w = 0; w < Wn; ++w)
            tree_parent_host[b * (I + 1) + Ic - 1 + w] =
                (d == 0) ? int64_t(-1) : off_prev + static_cast<int64_t>(gpa[b * K + w]);
        }
        in_mask.swap(nm);
        off_prev = Ic - 1;
        Ic = Icn;
      }
    }
    // ---- host glue: contiguous K4 inputs [B, T] ----
    const int64_t T = Ic - 1;
    V<int64_t> tp(B * T), tl(B * T);
    {
      auto gp = UP(tp.data(), U_glue_k4_inputs);
      auto gl = UP(tl.data(), U_glue_k4_inputs);
      auto locs = UP(x.ptr<const int64_t>(D_LOCS), U_glue_k4_inputs);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
          gp[b * T + t] = tree_parent_host[b * (I + 1) + t];
          gl[b * T + t] = static_cast<int64_t>(locs[b * c.Tcap + t]);
        }
    }
    // ---- K4 (hls/tree_mask; draft use, next layer: T, Q = Wn); materialized: the bool mask is
    // written, then read back by the pack kernel ----
    {
      const int64_t b1 = d * (B + 1), Q = Wn;
      const int64_t* seq = x.ptr<const int64_t>(D_SEQ);
      V<uint8_t> mbool;
      int64_t nbits = 0;
      if (materialize) {
        for (int64_t b = 0; b < B; ++b) nbits += Q * (seq[b] + T);  // scratch size (host side)
        mbool.assign(nbits, 0);
      }
      tree_mask_top(cport(seq, cnt, U_k4_seq_lens), cport(x.ptr<const int64_t>(D_POOL), cnt, U_k4_req_pool_indices),
                    cport(x.ptr<const int32_t>(D_R2T), cnt, U_k4_req_to_token), static_cast<int>(c.S_max),
                    cport(tl.data(), cnt, U_k4_tree_cache_locs), cport(tp.data(), cnt, U_k4_tree_parent),
                    static_cast<int>(B), static_cast<int>(T), static_cast<int>(Q), materialize,
                    UP(x.ptr<int32_t>(D_QO) + b1, U_k4_qo_indptr), UP(x.ptr<int32_t>(D_KVPTR) + b1, U_k4_kv_indptr),
                    UP(x.ptr<int32_t>(D_KVIDX) + d * c.capkv, U_k4_kv_indices),
                    UP(x.ptr<int64_t>(D_POS) + d * B * K, U_k4_positions),
                    UP(x.ptr<int32_t>(D_MBITS) + b1, U_k4_mask_indptr_bits),
                    UP(x.ptr<int32_t>(D_MBYTES) + b1, U_k4_mask_indptr_bytes),
                    UP(x.ptr<uint8_t>(D_PACKED) + d * c.cappack, U_k4_packed_mask),
                    materialize ? UP(mbool.data(), U_k4_mask_bool) : P<uint8_t>());
      if (materialize) {  // the pack kernel's read of the bool mask
        auto pmb = cport(mbool.data(), cnt, U_k4_mask_bool);
        for (int64_t i = 0; i < nbits; ++i) (void)static_cast<uint8_t>(pmb[i]);
      }
    }
  }
  // ---- host glue: verify-set selection from the HBM state ----
  {
    const int64_t vnv = c.vn_final < 1 ? 1 : (c.vn_final > M ? M : c.vn_final);
    const int64_t nn = cc < N ? cc : N;
    const int64_t Q = vnv < nn ? vnv : nn;
    auto w = [&](int slot, int64_t* p) { return UP(p, slot); };
    auto vc = w(U_glue_select, x.ptr<int64_t>(D_VT_CAND)), vr = w(U_glue_select, x.ptr<int64_t>(D_VT_RIDX)),
         vn = w(U_glue_select, x.ptr<int64_t>(D_VT_NTOK)), vs = w(U_glue_select, x.ptr<int64_t>(D_VT_NSIB)),
         vp = w(U_glue_select, x.ptr<int64_t>(D_VT_PARENT)), vd = w(U_glue_select, x.ptr<int64_t>(D_VT_NODE));
    for (int64_t b = 0; b < B; ++b) {
      VerifyTree vt;
      select_verify(UP(csc + b * N, U_glue_select), UP(ctok + b * N, U_glue_select), UP(cprev + b * N, U_glue_select),
                    nn, Q, vt);
      for (int64_t t = 0; t < Q; ++t) {
        vc[b * Q + t] = vt.cand[t];
        vr[b * Q + t] = b * Q + t;
        vn[b * Q + t] = vt.next_tok[t];
        vs[b * Q + t] = vt.next_sib[t];
        vp[b * Q + t] = vt.parent[t];
        vd[b * Q + t] = vt.node[t];
      }
    }
    int64_t* cco = x.ptr<int64_t>(D_CC_OUT);
    cco[0] = cc;
    cco[1] = Q;
  }
#undef UP
  return 0;
}

}  // namespace unf
}  // namespace e4f

extern "C" const char* eagle4_unfused_draft_ports() { return e4f::unf::kPorts; }

// iscalars: as eagle4_fused_draft_step, then k5_passes, k4_materialize_bool
extern "C" int eagle4_unfused_draft_step(EAGLE4_CAPI_PARAMS) {
  eagle4::capi::Ctx x{"unfused_draft_step", tensors, shapes, elem_bytes, errbuf, errlen};
  e4f::DraftCfg c;
  if (e4f::parse_draft_cfg(iscalars, c) != 0 && (c.B > E4F_MAX_B || c.K > E4F_MAX_K || c.N > E4F_MAX_N ||
                                                 c.M > E4F_MAX_M || c.I > E4F_MAX_I || c.D > E4F_MAX_D))
    return x.fail(eagle4::capi::E_BOUND, "a size exceeds a compile-time bound");
  (void)fscalars;
  const int passes = static_cast<int>(iscalars[17]);
  const bool mat = iscalars[18] != 0;
  const int eh = elem_bytes[e4f::D_HIDDEN];
  if (eh == 2) {
    if (c.w_code == 1) return e4f::unf::run<uint16_t, int8_t>(x, c, passes, mat, counters);
    if (c.w_code == 3) return e4f::unf::run<uint16_t, e4f::i4x2>(x, c, passes, mat, counters);
    if (c.w_code == 2) return e4f::unf::run<uint16_t, uint16_t>(x, c, passes, mat, counters);
    return e4f::unf::run<uint16_t, float>(x, c, passes, mat, counters);
  }
  if (c.w_code == 1) return e4f::unf::run<uint32_t, int8_t>(x, c, passes, mat, counters);
  if (c.w_code == 3) return e4f::unf::run<uint32_t, e4f::i4x2>(x, c, passes, mat, counters);
  if (c.w_code == 2) return e4f::unf::run<uint32_t, uint16_t>(x, c, passes, mat, counters);
  return e4f::unf::run<uint32_t, float>(x, c, passes, mat, counters);
}

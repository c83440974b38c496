// Unfused reference chain of one verify step (§8.2, §9 accounting rule): K4 (bool mask written
// and re-read by a pack kernel), K5 (logits read `k5_passes` times, probas [B,Q,V] written), K6
// (reads probas; sglang style: draft_probs zero-filled and the final rows read twice), host finish
// rule (reads predicts / accept rows from HBM), K7 (reads everything back). K4 and K7 are the
// per-kernel tops of hls/<key>/ (the fused design runs their cores), K5 and K6 the stage code of
// the fused design. Same tensor interface as eagle4_fused_verify_step; extra iscalars:
// k5_passes, k4_materialize_bool, k6_sglang_style.
#include <vector>

#include "verify_pipeline.hpp"
#include "eagle4_capi.h"
#include "../common/e4f_unfused_ports.hpp"
// the per-kernel tops (one kernel = one HLS folder), called as separate kernels
#include "../../tree_mask/tree_mask.hpp"
#include "../../update_verify/update_verify.hpp"

namespace e4f {
namespace vunf {

#define E4F_VUNF_PORTS(X)                                                                                     \
  X(k4_seq_lens) X(k4_req_pool_indices) X(k4_req_to_token) X(k4_tree_cache_locs) X(k4_tree_parent)            \
  X(k4_qo_indptr) X(k4_kv_indptr) X(k4_kv_indices) X(k4_positions) X(k4_mask_indptr_bits)                     \
  X(k4_mask_indptr_bytes) X(k4_mask_bool) X(k4_packed_mask) X(k5_logits) X(k5_temperatures) X(k5_probas)      \
  X(k5_argmax_ids) X(k5_is_greedy) X(k6_candidates) X(k6_retrive_index) X(k6_retrive_next_token)              \
  X(k6_retrive_next_sibling) X(k6_target_probs) X(k6_target_predict) X(k6_is_greedy) X(k6_coins)              \
  X(k6_final_coins) X(k6_draft_probs) X(k6_predicts) X(k6_accept_index) X(k6_accept_length) X(glue_finish)    \
  X(k7_accept_index) X(k7_accept_length) X(k7_predicts) X(k7_finish_pos) X(k7_seq_lens)                       \
  X(k7_req_pool_indices) X(k7_req_to_token) X(k7_out_cache_loc) X(k7_hidden_states) X(k7_verify_node_ids)     \
  X(k7_outputs) X(k7_next_hidden)

#define E4F_ENUM(n) U_##n,
enum Slot { E4F_VUNF_PORTS(E4F_ENUM) U_NSLOTS };
#undef E4F_ENUM
#define E4F_STR(n) #n ","
static const char* kPorts = E4F_VUNF_PORTS(E4F_STR);
#undef E4F_STR

template <class T>
using Vec = std::vector<T>;


template <typename HT>
int run(const eagle4::capi::Ctx& x, const VerifyCfg& c, int passes, bool materialize, bool sglang,
        eagle4::PortCounter* cnt) {
#define UP(ptr, slot) PORT_ARG((ptr), cnt, (slot))
  const int64_t B = c.B, Q = c.Q, S = c.S, V = c.V;
  // ---- K4 (hls/tree_mask; verify use: T = Q); materialized: the bool mask is written, then read
  // back by the pack kernel ----
  {
    const int64_t* seq = x.ptr<const int64_t>(V_SEQ);
    Vec<uint8_t> mbool;
    int64_t nbits = 0;
    if (materialize) {
      for (int64_t b = 0; b < B; ++b) nbits += Q * (seq[b] + Q);  // scratch size (host side)
      mbool.assign(nbits, 0);
    }
    tree_mask_top(cport(seq, cnt, U_k4_seq_lens), cport(x.ptr<const int64_t>(V_POOL), cnt, U_k4_req_pool_indices),
                  cport(x.ptr<const int32_t>(V_R2T), cnt, U_k4_req_to_token), static_cast<int>(c.S_max),
                  cport(x.ptr<const int64_t>(V_LOC), cnt, U_k4_tree_cache_locs),
                  cport(x.ptr<const int64_t>(V_TREE_PARENT), cnt, U_k4_tree_parent), static_cast<int>(B),
                  static_cast<int>(Q), static_cast<int>(Q), materialize, UP(x.ptr<int32_t>(V_QO), U_k4_qo_indptr),
                  UP(x.ptr<int32_t>(V_KVPTR), U_k4_kv_indptr), UP(x.ptr<int32_t>(V_KVIDX), U_k4_kv_indices),
                  UP(x.ptr<int64_t>(V_POS), U_k4_positions), UP(x.ptr<int32_t>(V_MBITS), U_k4_mask_indptr_bits),
                  UP(x.ptr<int32_t>(V_MBYTES), U_k4_mask_indptr_bytes), UP(x.ptr<uint8_t>(V_PACKED), U_k4_packed_mask),
                  materialize ? UP(mbool.data(), U_k4_mask_bool) : P<uint8_t>());
    if (materialize) {  // the pack kernel's read of the bool mask
      auto pmb = cport(mbool.data(), cnt, U_k4_mask_bool);
      for (int64_t i = 0; i < nbits; ++i) (void)static_cast<uint8_t>(pmb[i]);
    }
  }
  // ---- K5: probas [B*Q, V] written to HBM ----
  Vec<float> probas(B * Q * V), rowbuf(V);
  Vec<int64_t> amax(B * Q);
  Vec<uint8_t> isg(B);
  {
    auto pl = UP(x.ptr<const float>(V_LOGITS), U_k5_logits);
    auto pt = UP(x.ptr<const float>(V_TEMPS), U_k5_temperatures);
    auto pp = UP(probas.data(), U_k5_probas);
    auto pa = UP(amax.data(), U_k5_argmax_ids);
    auto pg = UP(isg.data(), U_k5_is_greedy);
    for (int64_t b = 0; b < B; ++b) {
      const float t = pt[b];
      const bool g = greedy_temp(t);
      pg[b] = uint8_t(g ? 1 : 0);
      for (int64_t q = 0; q < Q; ++q) {
        const int64_t r = b * Q + q;
        for (int p = 0; p < passes; ++p)
          for (int64_t v = 0; v < V; ++v) rowbuf[v] = pl[r * V + v];
        const RowStats rs = row_stats(rowbuf.data(), V, t, g);
        pa[r] = rs.amax;
        for (int64_t v = 0; v < V; ++v) pp[r * V + v] = g ? (v == rs.amax ? 1.0f : 0.0f) : proba(rowbuf[v], t, rs);
      }
    }
  }
  // ---- K6 ----
  Vec<int32_t> predicts(B * Q), acc(B * S), alen(B), fin(B);
  {
    auto pc = UP(x.ptr<const int64_t>(V_CAND), U_k6_candidates);
    auto pr = UP(x.ptr<const int64_t>(V_RIDX), U_k6_retrive_index);
    auto pn = UP(x.ptr<const int64_t>(V_NTOK), U_k6_retrive_next_token);
    auto ps = UP(x.ptr<const int64_t>(V_NSIB), U_k6_retrive_next_sibling);
    auto pprob = UP(probas.data(), U_k6_target_probs);
    auto ppred = UP(amax.data(), U_k6_target_predict);
    auto pg = UP(isg.data(), U_k6_is_greedy);
    auto pco = UP(x.ptr<const float>(V_COINS), U_k6_coins);
    auto pfc = UP(x.ptr<const float>(V_FCOINS), U_k6_final_coins);
    auto opr = UP(predicts.data(), U_k6_predicts);
    auto oai = UP(acc.data(), U_k6_accept_index);
    auto oal = UP(alen.data(), U_k6_accept_length);
    Vec<float> draft;
    if (sglang) draft.assign(B * Q * V, -1.0f);
    auto pdr = UP(draft.data(), U_k6_draft_probs);
    if (sglang)
      for (int64_t i = 0; i < B * Q * V; ++i) pdr[i] = 0.0f;  // zero-fill draft_probs
    for (int64_t b = 0; b < B; ++b) {
      int64_t cand[E4F_MAX_Q], ridx[E4F_MAX_Q], ntok[E4F_MAX_Q], nsib[E4F_MAX_Q];
      float coins[E4F_MAX_Q];
      for (int64_t i = 0; i < Q; ++i) {
        cand[i] = pc[b * Q + i];
        ridx[i] = pr[b * Q + i];
        ntok[i] = pn[b * Q + i];
        nsib[i] = ps[b * Q + i];
        coins[i] = pco[b * Q + i];
      }
      const bool g = static_cast<uint8_t>(pg[b]) != 0;
      auto prow_port = ppred + b * Q;  // target_predict read only at the rows the walk visits
      auto prob = [&](int64_t row, int64_t tok) -> float {
        const float p = pprob[(b * Q + row) * V + tok];
        return p;
      };
      int32_t pred[E4F_MAX_Q];
      K6Out o;
      k6_walk(cand, ridx, ntok, nsib, coins, Q, S, V, g, prow_port, c.thr_single, c.thr_acc, prob, pred, o);
      int64_t sample;
      if (g) {
        sample = o.row_pred;
      } else {
        const int64_t r = b * Q + o.row;
        if (sglang) {
          for (int i = 0; i < o.nrej; ++i) pdr[r * V + o.rej[i]] = static_cast<float>(pprob[r * V + o.rej[i]]);
          for (int64_t v = 0; v < V; ++v) {  // pass 1: relu(target - draft)
            const float t = pprob[r * V + v];
            const float dp = pdr[r * V + v];
            rowbuf[v] = (t > 0.0f && !(dp > 0.0f)) ? t : 0.0f;
          }
          // sampling pass re-reads the target row (the residual is kept on-chip here)
          for (int64_t v = 0; v < V; ++v) (void)static_cast<float>(pprob[r * V + v]);
          // R_q = 0 fallback needs the raw row: argmax over t (Rej ignored)
          uint64_t R = 0;
          for (int64_t v = 0; v < V; ++v) R += quant(rowbuf[v]);
          if (R == 0) {  // fallback: argmax of the raw target row (a third row read)
            for (int64_t v = 0; v < V; ++v) rowbuf[v] = pprob[r * V + v];
            sample = argmax_row(rowbuf.data(), V);
          } else {
            sample = k6_sample(rowbuf.data(), V, o.rej, 0, pfc[b]);
          }
        } else {
          for (int64_t v = 0; v < V; ++v) rowbuf[v] = pprob[r * V + v];
          sample = k6_sample(rowbuf.data(), V, o.rej, o.nrej, pfc[b]);
        }
      }
      pred[o.last - ridx[0]] = static_cast<int32_t>(sample);
      for (int64_t i = 0; i < Q; ++i) opr[b * Q + i] = pred[i];
      for (int64_t j = 0; j < S; ++j) oai[b * S + j] = o.acc_row[j];
      oal[b] = static_cast<int32_t>(o.n);
    }
  }
  // ---- host finish rule (reads predicts / accept rows from HBM) ----
  {
    auto gp = UP(predicts.data(), U_glue_finish);
    auto ga = UP(acc.data(), U_glue_finish);
    auto gl = UP(alen.data(), U_glue_finish);
    auto gf = UP(fin.data(), U_glue_finish);
    auto grem = UP(x.ptr<const int64_t>(V_REMAINING), U_glue_finish);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t a = gl[b];
      int32_t row[E4F_MAX_S];
      for (int64_t j = 0; j < S; ++j) row[j] = (j <= a) ? static_cast<int32_t>(ga[b * S + j]) : -1;
      int32_t fp = -1;
      const int64_t rem = grem[b];
      for (int64_t j = 0; j <= a; ++j) {
        const int32_t tok = gp[row[j]];
        if ((c.eos >= 0 && tok == c.eos) || j + 1 >= rem) {
          fp = static_cast<int32_t>(j);
          break;
        }
      }
      gf[b] = fp;
    }
  }
  // debug taps
  if (x.present(V_PREDICTS)) {
    for (int64_t i = 0; i < B * Q; ++i) x.ptr<int32_t>(V_PREDICTS)[i] = predicts[i];
    for (int64_t i = 0; i < B * S; ++i) x.ptr<int32_t>(V_ACC_IDX)[i] = acc[i];
    for (int64_t i = 0; i < B; ++i) x.ptr<int32_t>(V_ACC_LEN)[i] = alen[i];
    for (int64_t i = 0; i < B; ++i) x.ptr<int32_t>(V_FINISH)[i] = fin[i];
  }
  // ---- K7 (hls/update_verify; hidden rows as 16-bit words) ----
  {
    const bool has_node_ids = x.present(V_NODE_IDS);
    update_verify_top(
        cport(acc.data(), cnt, U_k7_accept_index), cport(alen.data(), cnt, U_k7_accept_length),
        cport(predicts.data(), cnt, U_k7_predicts), cport(fin.data(), cnt, U_k7_finish_pos),
        cport(x.ptr<const int64_t>(V_SEQ), cnt, U_k7_seq_lens),
        cport(x.ptr<const int64_t>(V_POOL), cnt, U_k7_req_pool_indices), UP(x.ptr<int32_t>(V_R2T), U_k7_req_to_token),
        cport(x.ptr<const int64_t>(V_LOC), cnt, U_k7_out_cache_loc),
        cport(x.ptr<const uint16_t>(V_HIDDEN), cnt, U_k7_hidden_states),
        cport(x.ptr<const int64_t>(V_NODE_IDS), cnt, U_k7_verify_node_ids), UP(x.ptr<int32_t>(V_AIO), U_k7_outputs),
        UP(x.ptr<int32_t>(V_ALO), U_k7_outputs), UP(x.ptr<int32_t>(V_AIP), U_k7_outputs),
        UP(x.ptr<int32_t>(V_AFLAT), U_k7_outputs), UP(x.ptr<int32_t>(V_VID), U_k7_outputs),
        UP(x.ptr<uint8_t>(V_EVICT), U_k7_outputs), UP(x.ptr<int64_t>(V_FREE), U_k7_outputs),
        UP(x.ptr<int64_t>(V_SLO), U_k7_outputs), UP(x.ptr<int64_t>(V_ANODE), U_k7_outputs),
        UP(x.ptr<int32_t>(V_UCNT), U_k7_outputs), UP(x.ptr<int64_t>(V_UIDX), U_k7_outputs),
        UP(x.ptr<int32_t>(V_NAL), U_k7_outputs), UP(x.ptr<int32_t>(V_NIP), U_k7_outputs),
        UP(x.ptr<int32_t>(V_NVID), U_k7_outputs), UP(x.ptr<uint16_t>(V_NHID), U_k7_next_hidden),
        UP(x.ptr<int64_t>(V_NPOS), U_k7_outputs), UP(x.ptr<int64_t>(V_NSEQ), U_k7_outputs),
        UP(x.ptr<int64_t>(V_NPOOL), U_k7_outputs), UP(x.ptr<int32_t>(V_NROOT), U_k7_outputs),
        UP(x.ptr<int32_t>(V_NLAST), U_k7_outputs), static_cast<int>(B), static_cast<int>(Q), static_cast<int>(S),
        static_cast<int>(c.H * sizeof(HT) / 2), c.S_max, has_node_ids);
  }
#undef UP
  return 0;
}

}  // namespace vunf
}  // namespace e4f

extern "C" const char* eagle4_unfused_verify_ports() { return e4f::vunf::kPorts; }

extern "C" int eagle4_unfused_verify_step(EAGLE4_CAPI_PARAMS) {
  eagle4::capi::Ctx x{"unfused_verify_step", tensors, shapes, elem_bytes, errbuf, errlen};
  e4f::VerifyCfg c;
  if (e4f::parse_verify_cfg(iscalars, fscalars, c) != 0)
    return x.fail(eagle4::capi::E_BOUND, "a size exceeds a compile-time bound");
  const int passes = static_cast<int>(iscalars[10]);
  const bool mat = iscalars[11] != 0, sgl = iscalars[12] != 0;
  e4f::exp_variant() = static_cast<int>(iscalars[13]);  // 0: expf (as the fused design); 1: see e4f_stages.hpp
  const int rc = (elem_bytes[e4f::V_HIDDEN] == 2) ? e4f::vunf::run<uint16_t>(x, c, passes, mat, sgl, counters)
                                                  : e4f::vunf::run<uint32_t>(x, c, passes, mat, sgl, counters);
  e4f::exp_variant() = 0;
  return rc;
}

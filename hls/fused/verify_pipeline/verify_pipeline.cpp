// Fused verify pipeline: K4 (verify) -> K5 row stats -> K6 (recomputed probabilities) -> finish
// rule -> K7, one DATAFLOW region, streams between stages. See verify_pipeline.hpp.
#include "verify_pipeline.hpp"

#include "eagle4_capi.h"
// the per-kernel cores the stages compose (one kernel = one HLS folder)
#include "../../tree_mask/tree_mask_core.hpp"
#include "../../update_verify/update_verify_core.hpp"

namespace e4f {
namespace verify {

struct ReqRec {  // one request's K6 result handed to K7 (on-chip)
  int32_t acc_row[E4F_MAX_S];
  int32_t pred[E4F_MAX_Q];
  int64_t n;
};
struct K4Rec {  // what K4 read of one request and K7 needs again: read from HBM once, forwarded on chip
  int64_t L, pool;
  int64_t loc[E4F_MAX_Q];  // the request's KV slots
};

static float rowbuf[E4F_MAX_V];  // one logits row (K5) / the final residual row (K6): stage_k5k6's own

// ---- stage: K4 verify use (T = Q), packed on the fly (no bool mask) -------------------------
void stage_k4(VPort<const int64_t> seq, VPort<const int64_t> pool, VPort<int32_t> r2t /* read here, K7 writes */,
              VPort<const int64_t> loc_p, VPort<const int64_t> tparent, VPort<int32_t> qo, VPort<int32_t> kvptr,
              VPort<int32_t> kvidx, VPort<int64_t> positions, VPort<int32_t> mbits, VPort<int32_t> mbytes,
              VPort<uint8_t> packed, VerifyCfg c, EAGLE4_STREAM(K4Rec, 2) & out_s) {
  const int64_t B = c.B, Q = c.Q;
  int64_t kv = 0, bits = 0, bytes = 0;
  qo[0] = 0;
  kvptr[0] = 0;
  mbits[0] = 0;
  mbytes[0] = 0;
  for (int b = 0; b < B; ++b) {
    K4Rec rec;
    const int64_t L = seq[b], pl = pool[b];
    rec.L = L;
    rec.pool = pl;
    for (int i = 0; i < Q; ++i) rec.loc[i] = loc_p[b * Q + i];
    bytes += eagle4::k4::tree_mask_request(L, pl, r2t, c.S_max, rec.loc, tparent + b * Q, static_cast<int>(Q),
                                           static_cast<int>(Q), kvidx + kv, positions + b * Q, packed + bytes, false,
                                           static_cast<uint8_t*>(nullptr));
    kv += L + Q;
    bits += Q * (L + Q);
    qo[b + 1] = static_cast<int32_t>((b + 1) * Q);
    kvptr[b + 1] = static_cast<int32_t>(kv);
    mbits[b + 1] = static_cast<int32_t>(bits);
    mbytes[b + 1] = static_cast<int32_t>(bytes);
    out_s.write(rec);
  }
}

// ---- stage: K5 on demand, fused with K6 ----------------------------------------------------------
// K6's walk only ever needs the rows it visits: the root row, then the row of each accepted child
// (child local indices are larger than their parent's, so the rows arrive in increasing order). A
// row is read from HBM the first time the walk touches it: ONE read into the on-chip row buffer,
// K5's (m, s, argmax) over it, then every probability the walk tests and, for the final row, the
// whole residual come from that buffer. Rows the walk never reaches are never read: the fused design
// has no consumer for their probabilities (it emits neither probas nor argmax_ids). Same formulas as
// the unfused K5 -> K6, so the results are bit-identical.
struct LazyRow {
  VPort<const float> logits;
  int64_t base;  // flat row index of the request's token 0
  int64_t V;
  float temp;
  bool greedy;
  int64_t loaded;
  RowStats st;
  void load(int64_t row) {
#pragma HLS ARRAY_PARTITION variable = rowbuf type = cyclic factor = 16 dim = 1
    if (row == loaded) return;
    // full 512-bit beats with no condition on the port (a burst), then the row's tail element-wise (V a
    // multiple of 16 at deployment; uncounted)
    const int64_t vfull = V / E4F_LANES_VROW_LOAD * E4F_LANES_VROW_LOAD;
    for (int v0 = 0; v0 < vfull; v0 += E4F_LANES_VROW_LOAD) {
#pragma HLS PIPELINE II = E4F_II_VROW_LOAD
      E4F_TRIPS(VROW_LOAD, E4F_LANES_VROW_LOAD);
      for (int j = 0; j < E4F_LANES_VROW_LOAD; ++j) {
#pragma HLS UNROLL factor = E4F_LANES_VROW_LOAD
        rowbuf[v0 + j] = logits[(base + row) * V + v0 + j];
      }
    }
    for (int64_t v = vfull; v < V; ++v) rowbuf[v] = logits[(base + row) * V + v];
    st = row_stats(rowbuf, V, temp, greedy);
    loaded = row;
  }
};
struct LazyArgmax {  // target_predict[row] for greedy requests
  LazyRow* lr;
  int64_t operator[](int64_t row) const {
    lr->load(row);
    return lr->st.amax;
  }
};

void stage_k5k6(VPort<const float> logits, VPort<const float> temps, VPort<const int64_t> cand_p,
                VPort<const int64_t> ridx_p, VPort<const int64_t> ntok_p, VPort<const int64_t> nsib_p,
                VPort<const float> coins_p, VPort<const float> fcoins_p, VerifyCfg c,
                EAGLE4_STREAM(ReqRec, 4) & out_s) {
  const int64_t Q = c.Q, V = c.V;
  for (int b = 0; b < c.B; ++b) {
    int64_t cand[E4F_MAX_Q], ridx[E4F_MAX_Q], ntok[E4F_MAX_Q], nsib[E4F_MAX_Q];
    float coins[E4F_MAX_Q];
    for (int i = 0; i < Q; ++i) {
      cand[i] = cand_p[b * Q + i];
      ridx[i] = ridx_p[b * Q + i];
      ntok[i] = ntok_p[b * Q + i];
      nsib[i] = nsib_p[b * Q + i];
      coins[i] = coins_p[b * Q + i];
    }
    const float t = temps[b];
    const bool g = greedy_temp(t);
    LazyRow lr{logits, b * Q, V, t, g, -1, RowStats{}};
    auto prob = [&lr, t](int64_t row, int64_t tok) {
      lr.load(row);
      return proba(rowbuf[tok], t, lr.st);
    };
    ReqRec rec;
    K6Out o;
    k6_walk(cand, ridx, ntok, nsib, coins, Q, c.S, V, g, LazyArgmax{&lr}, c.thr_single, c.thr_acc, prob, rec.pred, o);
    int64_t sample;
    if (g) {
      sample = o.row_pred;
    } else {
      lr.load(o.row);  // usually already on-chip (the row whose children were all rejected)
      for (int v0 = 0; v0 < V; v0 += E4F_LANES_ROW_PROBA) {  // in place: the residual row
#pragma HLS PIPELINE II = E4F_II_ROW_PROBA
        E4F_TRIPS(ROW_PROBA, E4F_LANES_ROW_PROBA);
        for (int j = 0; j < E4F_LANES_ROW_PROBA; ++j) {
#pragma HLS UNROLL factor = E4F_LANES_ROW_PROBA
          if (v0 + j < V) rowbuf[v0 + j] = proba(rowbuf[v0 + j], t, lr.st);  // the row's tail: masked
        }
      }
      lr.loaded = -1;
      sample = k6_sample(rowbuf, V, o.rej, o.nrej, fcoins_p[b]);
    }
    rec.pred[o.last - ridx[0]] = static_cast<int32_t>(sample);
    for (int j = 0; j < c.S; ++j) rec.acc_row[j] = o.acc_row[j];
    rec.n = o.n;
    out_s.write(rec);
  }
}

// ---- stage: the host finish rule moved on chip, then K7 ------------------------------------------------
// Collects every request's K4 record and K6 result (the channels from the two producers), applies the finish
// rule (§8.2 step 6) over the whole batch's predicts, as the host does, then runs K7 (update_verify_core.hpp,
// inlined here: a DATAFLOW task is a call, not an inlined body) on the on-chip accept state.
template <typename HT>
void stage_k7(EAGLE4_STREAM(K4Rec, 2) & k4_s, EAGLE4_STREAM(ReqRec, 4) & k6_s, VPort<const int64_t> remaining,
              VPort<int32_t> r2t, VPort<const HT> hidden, VPort<const int64_t> node_ids, bool has_node_ids,
              VPort<int32_t> accept_index_out, VPort<int32_t> accept_length_out, VPort<int32_t> accept_indptr,
              VPort<int32_t> accepted_flat, VPort<int32_t> verified_id, VPort<uint8_t> evict_mask,
              VPort<int64_t> free_slots, VPort<int64_t> seq_lens_out, VPort<int64_t> accepted_node_ids,
              VPort<int32_t> unfinished_count, VPort<int64_t> unfinished_index, VPort<int32_t> next_accept_length,
              VPort<int32_t> next_indptr, VPort<int32_t> next_verified_id, VPort<HT> next_hidden,
              VPort<int64_t> next_positions, VPort<int64_t> next_seq_lens, VPort<int64_t> next_req_pool_indices,
              VPort<int32_t> next_root_token, VPort<int32_t> next_last_flat,
              VPort<int32_t> dbg_pred, VPort<int32_t> dbg_acc, VPort<int32_t> dbg_len, VPort<int32_t> dbg_fin,
              VerifyCfg c) {
#pragma HLS INLINE off
  int64_t seq_l[E4F_MAX_B], pool_l[E4F_MAX_B], locs[E4F_MAX_B * E4F_MAX_Q];
  int32_t acc_idx[E4F_MAX_B * E4F_MAX_S], acc_len[E4F_MAX_B], predicts[E4F_MAX_B * E4F_MAX_Q], finish[E4F_MAX_B];
  for (int b = 0; b < c.B; ++b) {
    const K4Rec k4 = k4_s.read();
    const ReqRec rec = k6_s.read();
    seq_l[b] = k4.L;
    pool_l[b] = k4.pool;
    for (int i = 0; i < c.Q; ++i) locs[b * c.Q + i] = k4.loc[i];
    for (int i = 0; i < c.Q; ++i) predicts[b * c.Q + i] = rec.pred[i];
    for (int j = 0; j < c.S; ++j) acc_idx[b * c.S + j] = rec.acc_row[j];
    acc_len[b] = static_cast<int32_t>(rec.n);
  }
  for (int b = 0; b < c.B; ++b) finish[b] = finish_rule(&acc_idx[b * c.S], acc_len[b], predicts, c.eos, remaining[b]);
#ifndef EAGLE4_SYNTHESIS
  if (dbg_pred) {  // C-sim debug taps (NULL in the counted byte runs): no ports of the synthesized design
    for (int i = 0; i < c.B * c.Q; ++i) dbg_pred[i] = predicts[i];
    for (int j = 0; j < c.B * c.S; ++j) dbg_acc[j] = acc_idx[j];
    for (int b = 0; b < c.B; ++b) dbg_len[b] = acc_len[b];
    for (int b = 0; b < c.B; ++b) dbg_fin[b] = finish[b];
  }
#endif
  eagle4::k7::update_verify_core<HT>(
      acc_idx, acc_len, predicts, finish, seq_l, pool_l, r2t, locs, hidden, node_ids,
      accept_index_out, accept_length_out, accept_indptr, accepted_flat, verified_id, evict_mask, free_slots,
      seq_lens_out, accepted_node_ids, unfinished_count, unfinished_index, next_accept_length, next_indptr,
      next_verified_id, next_hidden, next_positions, next_seq_lens, next_req_pool_indices, next_root_token,
      next_last_flat, static_cast<int>(c.B), static_cast<int>(c.Q), static_cast<int>(c.S),
      static_cast<int>(c.H), c.S_max, has_node_ids);
}

}  // namespace verify

int parse_verify_cfg(const int64_t* is, const float* fs, VerifyCfg& c) {
  c.B = is[0]; c.Q = is[1]; c.S = is[2]; c.V = is[3]; c.H = is[4]; c.S_max = is[5]; c.eos = is[6];
  c.hid_code = static_cast<int>(is[7]); c.capkv = is[8]; c.cappack = is[9];
  c.thr_single = fs[0];
  c.thr_acc = fs[1];
  if (c.B < 1 || c.B > E4F_MAX_B || c.Q < 1 || c.Q > E4F_MAX_Q || c.S < 1 || c.S > E4F_MAX_S || c.V < 1) return -2;
  return 0;
}

// ---------------- the dataflow top (ports + scalars only: the synthesizable form) -----------------
template <typename HT>
void verify_pipeline_top(VPort<const int64_t> seq, VPort<const int64_t> pool, VPort<int32_t> r2t,
                         VPort<const int64_t> loc, VPort<const int64_t> tparent, VPort<const float> logits,
                         VPort<const float> temps, VPort<const int64_t> cand, VPort<const int64_t> ridx,
                         VPort<const int64_t> ntok, VPort<const int64_t> nsib, VPort<const float> coins,
                         VPort<const float> fcoins, VPort<const int64_t> remaining, VPort<const HT> hidden,
                         VPort<const int64_t> node_ids, bool has_node_ids, VPort<int32_t> qo, VPort<int32_t> kvptr,
                         VPort<int32_t> kvidx, VPort<int64_t> positions, VPort<int32_t> mbits, VPort<int32_t> mbytes,
                         VPort<uint8_t> packed,
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
                         VerifyCfg c) {
#pragma HLS DATAFLOW
  // no INTERFACE pragmas here: they belong to the synthesis top (verify_pipeline_synth.cpp). Canonical: two
  // channels, each with one producer and one consumer; r2t is read by K4 before K7 writes it (K7 writes the
  // positions L.. of each row, K4 reads 0..L-1); c is a scalar struct passed by value.
  EAGLE4_STREAM(verify::K4Rec, 2) k4_s;
  EAGLE4_STREAM(verify::ReqRec, 4) k6_s;
  verify::stage_k4(seq, pool, r2t, loc, tparent, qo, kvptr, kvidx, positions, mbits, mbytes, packed, c, k4_s);
  verify::stage_k5k6(logits, temps, cand, ridx, ntok, nsib, coins, fcoins, c, k6_s);
  verify::stage_k7<HT>(k4_s, k6_s, remaining, r2t, hidden, node_ids, has_node_ids,
                       accept_index_out, accept_length_out, accept_indptr, accepted_flat, verified_id, evict_mask,
                       free_slots, seq_lens_out, accepted_node_ids, unfinished_count, unfinished_index,
                       next_accept_length, next_indptr, next_verified_id, next_hidden, next_positions, next_seq_lens,
                       next_req_pool_indices, next_root_token, next_last_flat,
                       dbg_pred, dbg_acc, dbg_len, dbg_fin, c);
}

// The instance the synthesis top fused_verify_top calls (verify_pipeline_synth.cpp): bf16 hidden states
template void verify_pipeline_top<uint16_t>(
    VPort<const int64_t>, VPort<const int64_t>, VPort<int32_t>, VPort<const int64_t>, VPort<const int64_t>,
    VPort<const float>, VPort<const float>, VPort<const int64_t>, VPort<const int64_t>, VPort<const int64_t>,
    VPort<const int64_t>, VPort<const float>, VPort<const float>, VPort<const int64_t>, VPort<const uint16_t>,
    VPort<const int64_t>, bool, VPort<int32_t>, VPort<int32_t>, VPort<int32_t>, VPort<int64_t>, VPort<int32_t>,
    VPort<int32_t>, VPort<uint8_t>,
    VPort<int32_t>, VPort<int32_t>, VPort<int32_t>, VPort<int32_t>, VPort<int32_t>, VPort<uint8_t>, VPort<int64_t>,
    VPort<int64_t>, VPort<int64_t>, VPort<int32_t>, VPort<int64_t>, VPort<int32_t>, VPort<int32_t>, VPort<int32_t>,
    VPort<uint16_t>, VPort<int64_t>, VPort<int64_t>, VPort<int64_t>, VPort<int32_t>, VPort<int32_t>,
    VPort<int32_t>, VPort<int32_t>, VPort<int32_t>, VPort<int32_t>, VerifyCfg);

// C ABI plumbing (testbench only): raw pointers -> counted ports
template <typename HT>
int verify_capi(const eagle4::capi::Ctx& x, const VerifyCfg& c, eagle4::PortCounter* cnt) {
#define P_(T, i) PORT_ARG(x.ptr<T>(i), cnt, i)
  if (c.V > E4F_MAX_V) return x.fail(eagle4::capi::E_BOUND, "V exceeds E4F_MAX_V");
  eagle4::PortCounter* no = nullptr;  // debug taps are not counted
  verify_pipeline_top<HT>(
      P_(const int64_t, V_SEQ), P_(const int64_t, V_POOL), P_(int32_t, V_R2T), P_(const int64_t, V_LOC),
      P_(const int64_t, V_TREE_PARENT), P_(const float, V_LOGITS), P_(const float, V_TEMPS), P_(const int64_t, V_CAND),
      P_(const int64_t, V_RIDX), P_(const int64_t, V_NTOK), P_(const int64_t, V_NSIB), P_(const float, V_COINS),
      P_(const float, V_FCOINS), P_(const int64_t, V_REMAINING), P_(const HT, V_HIDDEN), P_(const int64_t, V_NODE_IDS),
      x.present(V_NODE_IDS), P_(int32_t, V_QO), P_(int32_t, V_KVPTR), P_(int32_t, V_KVIDX), P_(int64_t, V_POS),
      P_(int32_t, V_MBITS), P_(int32_t, V_MBYTES), P_(uint8_t, V_PACKED),
      P_(int32_t, V_AIO), P_(int32_t, V_ALO), P_(int32_t, V_AIP), P_(int32_t, V_AFLAT), P_(int32_t, V_VID),
      P_(uint8_t, V_EVICT), P_(int64_t, V_FREE), P_(int64_t, V_SLO), P_(int64_t, V_ANODE), P_(int32_t, V_UCNT),
      P_(int64_t, V_UIDX), P_(int32_t, V_NAL), P_(int32_t, V_NIP), P_(int32_t, V_NVID), P_(HT, V_NHID),
      P_(int64_t, V_NPOS), P_(int64_t, V_NSEQ), P_(int64_t, V_NPOOL), P_(int32_t, V_NROOT), P_(int32_t, V_NLAST),
      PORT_ARG(x.ptr<int32_t>(V_PREDICTS), no, 0), PORT_ARG(x.ptr<int32_t>(V_ACC_IDX), no, 0),
      PORT_ARG(x.ptr<int32_t>(V_ACC_LEN), no, 0), PORT_ARG(x.ptr<int32_t>(V_FINISH), no, 0), c);
#undef P_
  return 0;
}

}  // namespace e4f

extern "C" const char* eagle4_fused_verify_ports() {
  return "seq_lens,req_pool_indices,req_to_token,out_cache_loc,tree_parent,logits,temperatures,candidates,"
         "retrive_index,retrive_next_token,retrive_next_sibling,coins,final_coins,remaining,hidden_states,"
         "verify_node_ids,qo_indptr,kv_indptr,kv_indices,positions,mask_indptr_bits,mask_indptr_bytes,packed_mask,"
         "predicts,accept_index,accept_length,finish_pos,accept_index_out,accept_length_out,accept_indptr,"
         "accepted_flat,verified_id,evict_mask,free_slots,seq_lens_out,accepted_node_ids,unfinished_count,"
         "unfinished_index,next_accept_length,next_indptr,next_verified_id,next_hidden,next_positions,next_seq_lens,"
         "next_req_pool_indices,next_root_token,next_last_flat";
}

// iscalars: B, Q, S, V, H, S_max, eos, hid_code, capkv, cappack; fscalars: threshold_single, threshold_acc
extern "C" int eagle4_fused_verify_step(EAGLE4_CAPI_PARAMS) {
  eagle4::capi::Ctx x{"fused_verify_step", tensors, shapes, elem_bytes, errbuf, errlen};
  e4f::perf::reset();  // the cycle model reads this call's loop trips
  e4f::VerifyCfg c;
  if (e4f::parse_verify_cfg(iscalars, fscalars, c) != 0)
    return x.fail(eagle4::capi::E_BOUND, "a size exceeds a compile-time bound of e4f_bounds.h");
  if (elem_bytes[e4f::V_HIDDEN] == 2) return e4f::verify_capi<uint16_t>(x, c, counters);
  return e4f::verify_capi<uint32_t>(x, c, counters);
}

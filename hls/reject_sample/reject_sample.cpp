// K6 draft_tree_reject_sample (KERNELS.md §6.5, §6.6).
//
// Per request b:
//   load       the request's tree (candidates, retrive_index, next_token, next_sibling, coins:
//              Q words each, burst reads) into on-chip arrays;
//   phase A    the sglang target-only walk: sequential f32 prob_acc over the tested siblings,
//              accept iff coin <= prob_acc / thr_acc (f32 division) or p >= threshold_single;
//              greedy requests accept iff tok == target_predict[b, row]; a token outside [0, V)
//              is skipped (never accepted, never read, never in Rej). Rej (the in-range tokens
//              rejected among the children of the current row) is an on-chip bitmap over the
//              vocabulary (one 16-bit word per chunk of 16 tokens) plus the list of its members,
//              which clears it again (at an accept and at the end of the request);
//   phase B    (sampling) the final row streamed once from HBM in chunks of 16 floats (one
//              512-bit beat per cycle, every lane read unconditionally; the V mod 16 lanes of the
//              last, partial beat in a short tail loop) into an on-chip buffer: q_v = floor(r_v * 2^32) (u64,
//              exact) with the chunk's Rej word masking, a 16-input adder tree per chunk, the chunk
//              sums kept on chip, R_q = their sum (exact, so any association is the same); the
//              torch.argmax-rule candidates of the row are tracked for the R_q = 0 fallback;
//   phase C    u = floor(c * R_q / 2^24) without 128-bit arithmetic; a scan of the chunk sums (one
//              per cycle) finds the chunk where the prefix first exceeds u, then a 16-lane scan
//              inside that chunk finds the smallest v with prefix > u (§6.6 step 4). Greedy
//              requests take target_predict[b, row].
//   write      predicts of the request's Q positions (-1 unless set), the accept row (-1 padded),
//              accept_length.
#include "eagle4_argmax.h"
#include "reject_sample.hpp"

namespace {

using namespace eagle4::k6;

// 32-bit request offsets (b*Q, b*S) and token indices; only the flat target_probs offset needs 64 bits.
static_assert(int64_t(MAX_BATCH) * MAX_VERIFY <= INT32_MAX && int64_t(MAX_BATCH) * MAX_ACCEPT <= INT32_MAX,
              "request offsets fit 32 bits");
static_assert(int64_t(MAX_VOCAB) + LANES <= INT32_MAX, "token index v fits 32 bits");


// q_v of §6.6 step 2 for one entry; t in [0, 1] or NaN (an entry above 1 is reported).
inline uint64_t k6_quant(float t, bool excluded) {
  if (excluded || !(t > 0.0f)) return 0;
  const float scaled = t * 4294967296.0f;  // * 2^32: exact in binary32
  return uint64_t(scaled);                 // truncation == floor for a non-negative value
}

using K6Arg = eagle4::ArgBest;  // idx -1: empty

// §5.4 step 1 order (NaN largest, first NaN wins, lowest index on equal maxima): a total order.
inline K6Arg k6_better(K6Arg a, K6Arg b) { return eagle4::argmax_better(a, b); }

// One entry t = target_probs[flat] (v = its token) of phase B: into the row buffer, the §6.6 step 2
// precondition, its quantized residual into the chunk sum, the lane's argmax candidate (ascending v).
inline void k6_residual_lane(float t, int64_t flat, int v, bool excluded, uint64_t& csum, K6Arg& part,
                             int64_t& first_bad, float* row_buf) {
#pragma HLS INLINE
  row_buf[v] = t;
  if (t > 1.0f && first_bad < 0) first_bad = flat;
  csum += k6_quant(t, excluded);
  if (part.idx < 0 || (!eagle4::f32_isnan(part.val) && (eagle4::f32_isnan(t) || t > part.val))) {
    part.val = t;
    part.idx = v;
  }
}

}  // namespace

int reject_sample_top(PORT(const int64_t) candidates, PORT(const int64_t) retrive_index,
                      PORT(const int64_t) retrive_next_token, PORT(const int64_t) retrive_next_sibling,
                      PORT(const float) target_probs, PORT(const int64_t) target_predict,
                      PORT(const uint8_t) is_greedy, PORT(const float) coins, PORT(const float) final_coins,
                      PORT(int32_t) predicts, PORT(int32_t) accept_index, PORT(int32_t) accept_length,
                      float threshold_single, float threshold_acc, int B, int Q, int S, int V,
                      int64_t* err_info) {
#pragma HLS INTERFACE m_axi port=candidates offset=slave bundle=gmem0 depth=1024
#pragma HLS INTERFACE m_axi port=retrive_index offset=slave bundle=gmem0 depth=1024
#pragma HLS INTERFACE m_axi port=retrive_next_token offset=slave bundle=gmem0 depth=1024
#pragma HLS INTERFACE m_axi port=retrive_next_sibling offset=slave bundle=gmem0 depth=1024
#pragma HLS INTERFACE m_axi port=target_probs offset=slave bundle=gmem1 max_widen_bitwidth=512 max_read_burst_length=64 depth=65536
#pragma HLS INTERFACE m_axi port=target_predict offset=slave bundle=gmem0 depth=1024
#pragma HLS INTERFACE m_axi port=is_greedy offset=slave bundle=gmem0 depth=128
#pragma HLS INTERFACE m_axi port=coins offset=slave bundle=gmem0 depth=1024
#pragma HLS INTERFACE m_axi port=final_coins offset=slave bundle=gmem0 depth=128
#pragma HLS INTERFACE m_axi port=predicts offset=slave bundle=gmem2 depth=1024
#pragma HLS INTERFACE m_axi port=accept_index offset=slave bundle=gmem2 depth=1024
#pragma HLS INTERFACE m_axi port=accept_length offset=slave bundle=gmem2 depth=128
#pragma HLS INTERFACE s_axilite port=threshold_single
#pragma HLS INTERFACE s_axilite port=threshold_acc
#pragma HLS INTERFACE s_axilite port=B
#pragma HLS INTERFACE s_axilite port=Q
#pragma HLS INTERFACE s_axilite port=S
#pragma HLS INTERFACE s_axilite port=V
#pragma HLS INTERFACE s_axilite port=err_info
#pragma HLS INTERFACE s_axilite port=return

  // The final row of target_probs (phase B reads it once; phase C rereads one chunk on chip).
  static float row_buf[MAX_VOCAB];
#pragma HLS ARRAY_PARTITION variable=row_buf type=cyclic factor=16
#pragma HLS BIND_STORAGE variable=row_buf type=ram_2p impl=uram
  static uint64_t chunk_sum[MAX_CHUNKS];  // sum of q_v over each chunk of 16 tokens
  // Rej as a bitmap (bit v mod 16 of word v / 16). Invariant between requests and calls: all zero
  // (every set bit is listed in rej_list and cleared before the request ends).
  static uint16_t rej_bits[MAX_CHUNKS];

  int64_t cand[MAX_VERIFY];
  int32_t ridx[MAX_VERIFY];
  int16_t next_tok[MAX_VERIFY];
  int16_t next_sib[MAX_VERIFY];
  float coin_l[MAX_VERIFY];
  int32_t pred[MAX_VERIFY];
  int32_t rej_list[MAX_VERIFY];  // members of Rej (distinct in-range tokens)
  int32_t acc_row[MAX_ACCEPT];
#pragma HLS ARRAY_PARTITION variable=acc_row complete

  // thr_acc = max(f32(threshold_acc), f32(1e-9)) in binary32 (NaN is refused by the caller).
  const float kMinThr = 1e-9f;
  const float thr_acc = (threshold_acc < kMinThr) ? kMinThr : threshold_acc;
  const int n_chunks = (V + LANES - 1) / LANES;
  const int n_full = V / LANES;           // whole 512-bit beats of a row
  const int n_tail = V - n_full * LANES;  // lanes of the last, partial beat (0..15)
  int64_t first_bad = -1;

request_loop:
  for (int b = 0; b < B; ++b) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=128
    const int qb = b * Q;  // < MAX_BATCH * MAX_VERIFY (static_assert above)
    const bool greedy = is_greedy[b] != 0;

  load_tree:
    for (int i = 0; i < Q; ++i) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=128
      cand[i] = candidates[qb + i];
      ridx[i] = int32_t(int64_t(retrive_index[qb + i]));
      next_tok[i] = int16_t(int64_t(retrive_next_token[qb + i]));
      next_sib[i] = int16_t(int64_t(retrive_next_sibling[qb + i]));
      coin_l[i] = coins[qb + i];
      pred[i] = -1;
    }
  init_accept_row:
    for (int j = 0; j < MAX_ACCEPT; ++j) {
#pragma HLS UNROLL
      acc_row[j] = -1;
    }

    // ---------------- phase A: tree walk
    int row = 0;   // node whose children are tested
    int last = 0;  // local index of the last accepted position (its retrive_index is qb + last)
    int cur = 0;
    int n = 0;
    float prob_acc = 0.0f;
    int nrej = 0;
    float coin = coin_l[0];
    int64_t row_predict = greedy ? int64_t(target_predict[qb + 0]) : int64_t(-1);
    int64_t row_base = int64_t(qb) * V;  // flat offset of target_probs[b, row, 0] (64-bit: B*Q*V > 2^31)
    acc_row[0] = ridx[0];

  walk_loop:
    for (int j = 1; j < S; ++j) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=63
      cur = next_tok[cur];
      bool accepted = false;
    sibling_loop:
      for (int k = 0; k < Q && cur != -1; ++k) {  // links point forward: a chain has < Q nodes
#pragma HLS LOOP_TRIPCOUNT min=0 max=127
        const int64_t tok = cand[cur];
        if (tok < 0 || tok >= V) {  // D26: never accepted, never in Rej, no read
          cur = next_sib[cur];
          continue;
        }
        bool acc;
        if (greedy) {
          acc = tok == row_predict;
        } else {
          const float p = target_probs[row_base + tok];
          prob_acc = prob_acc + p;
          const float ratio = prob_acc / thr_acc;
          acc = (coin <= ratio) || (p >= threshold_single);
        }
        if (acc) {
          pred[last] = int32_t(tok);
          ++n;
          last = cur;
          acc_row[n] = ridx[cur];
          row = cur;
          coin = coin_l[cur];
          prob_acc = 0.0f;
        clear_rej_on_accept:
          for (int i = 0; i < nrej; ++i) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=127
            rej_bits[rej_list[i] / LANES] = 0;
          }
          nrej = 0;
          row_base = int64_t(qb + row) * V;
          if (greedy) row_predict = int64_t(target_predict[qb + row]);
          accepted = true;
          break;
        }
        if (!greedy) {  // Rej is a set: duplicates among siblings enter once
          const int32_t t32 = int32_t(tok);
          const uint16_t bit = uint16_t(1u << (t32 % LANES));
          const uint16_t word = rej_bits[t32 / LANES];
          if (!(word & bit)) {
            rej_bits[t32 / LANES] = uint16_t(word | bit);
            rej_list[nrej] = t32;
            ++nrej;
          }
        }
        cur = next_sib[cur];
      }
      if (!accepted) break;
    }

    // ---------------- phases B and C: the final token
    int32_t sample;
    if (greedy) {
      sample = int32_t(row_predict);
    } else {
      // B: residual mass, one chunked HBM pass over the final row
      K6Arg part[ARG_DEPTH][LANES];
#pragma HLS ARRAY_PARTITION variable=part complete dim=0
    init_part:
      for (int d = 0; d < ARG_DEPTH; ++d) {
#pragma HLS UNROLL
        for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
          part[d][l].val = 0.0f;
          part[d][l].idx = -1;
        }
      }
      uint64_t r_q = 0;
    residual_chunks:  // whole beats: every lane read unconditionally (one burst of n_full beats)
      for (int c = 0; c < n_full; ++c) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=9504
#pragma HLS DEPENDENCE variable=part type=inter distance=8 dependent=true
        const int d = c & (ARG_DEPTH - 1);
        const uint16_t word = rej_bits[c];
        uint64_t csum = 0;
      residual_lanes:
        for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
          const int v = c * LANES + l;
          k6_residual_lane(target_probs[row_base + v], row_base + v, v, (word >> l) & 1u, csum, part[d][l],
                           first_bad, row_buf);
        }
        chunk_sum[c] = csum;
        r_q += csum;
      }
      if (n_tail > 0) {  // the last, partial beat (chunk n_full): its valid lanes, one per cycle
        const int d = n_full & (ARG_DEPTH - 1);
        const uint16_t word = rej_bits[n_full];
        uint64_t csum = 0;
      residual_tail:
        for (int l = 0; l < n_tail; ++l) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=15
          const int v = n_full * LANES + l;
          k6_residual_lane(target_probs[row_base + v], row_base + v, v, (word >> l) & 1u, csum, part[d][l],
                           first_bad, row_buf);
        }
        chunk_sum[n_full] = csum;
        r_q += csum;
      }

      if (r_q > 0) {
        // C: u = floor(c * R_q / 2^24), c = min(floor(coin * 2^24), 2^24 - 1)
        const float fc = final_coins[b];
        const float cs = fc * 16777216.0f;  // exact
        uint64_t cq;
        if (!(cs > 0.0f)) cq = 0;  // precondition: coin in [0, 1)
        else if (cs >= 16777215.0f) cq = 16777215u;
        else cq = uint64_t(cs);
        const uint64_t u = cq * (r_q >> 24) + ((cq * (r_q & 0xFFFFFFull)) >> 24);
        // the chunk where the prefix first exceeds u (it exists: u < R_q)
        uint64_t before = 0;
        int hit = n_chunks - 1;
      cdf_chunks:
        for (int c = 0; c < n_chunks; ++c) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=9504
          const uint64_t next = before + chunk_sum[c];
          if (next > u) {
            hit = c;
            break;
          }
          before = next;
        }
        // inside the chunk: the smallest v with prefix > u
        const uint16_t word = rej_bits[hit];
        uint64_t prefix = before;
        int32_t found = -1;
      cdf_lanes:
        for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
          const int v = hit * LANES + l;
          if (v < V) {
            prefix += k6_quant(row_buf[v], (word >> l) & 1u);
            if (found < 0 && prefix > u) found = v;
          }
        }
        sample = found;
      } else {
        // fallback: argmax of the row by the §5.4 step 1 rule, Rej ignored (D19)
        K6Arg best = part[0][0];
      merge_part:
        for (int d = 0; d < ARG_DEPTH; ++d) {
#pragma HLS UNROLL
          for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
            best = k6_better(best, part[d][l]);
          }
        }
        sample = best.idx;
      }
    clear_rej_at_end:
      for (int i = 0; i < nrej; ++i) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=127
        rej_bits[rej_list[i] / LANES] = 0;
      }
    }
    pred[last] = sample;

  write_predicts:
    for (int i = 0; i < Q; ++i) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=128
      predicts[qb + i] = pred[i];
    }
  write_accept_row:
    for (int j = 0; j < S; ++j) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=64
      accept_index[b * S + j] = acc_row[j];
    }
    accept_length[b] = n;
  }
  *err_info = first_bad;
  return first_bad >= 0 ? K6_ERR_PROB_ABOVE_ONE : K6_OK;
}

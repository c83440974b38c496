// K6 draft_tree_reject_sample (KERNELS.md §6.5, §6.6).
//
// Per request b:
//   load       the request's tree (candidates, retrive_index, next_token, next_sibling, coins:
//              Q words each, burst reads) into on-chip arrays;
//   phase A    the sglang target-only walk: sequential f32 prob_acc over the tested siblings,
//              accept iff coin <= prob_acc / thr_acc (f32 division) or p >= threshold_single;
//              greedy requests accept iff tok == target_predict[b, row]; a token outside [0, V)
//              is skipped (never accepted, never read, never in Rej). Rej (the in-range tokens
//              rejected among the children of the final row) is an on-chip sorted set, so that
//              phases B/C exclude it with one merge pointer while streaming the row;
//   phase B/C  (sampling) one HBM read of the final row into an on-chip buffer while summing the
//              quantized residual q_v = floor(r_v * 2^32) in u64 (exact); inverse CDF over the
//              buffer with u = floor(c * R_q / 2^24) computed without 128-bit arithmetic; argmax
//              fallback (torch.argmax rule, Rej ignored) when R_q = 0. Greedy: target_predict.
//   write      predicts of the request's Q positions (-1 unless set), the accept row (-1 padded),
//              accept_length.
#include "reject_sample.hpp"

namespace {

using namespace eagle4::k6;

inline bool k6_isnan(float x) { return x != x; }

// q_v of §6.6 step 2 for one entry; t in [0, 1] or NaN (checked by the caller).
inline uint64_t k6_quant(float t, bool excluded) {
  if (excluded || !(t > 0.0f)) return 0;
  const float scaled = t * 4294967296.0f;  // * 2^32: exact in binary32
  return uint64_t(scaled);                 // truncation == floor for a non-negative value
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
#pragma HLS INTERFACE m_axi port=target_probs offset=slave bundle=gmem1 max_read_burst_length=256 depth=4096
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

  // The final row of target_probs (phase B reads it once from HBM; phase C rescans it on-chip).
  static float row_buf[MAX_VOCAB];
#pragma HLS BIND_STORAGE variable=row_buf type=ram_2p impl=uram

  int64_t cand[MAX_VERIFY];
  int32_t ridx[MAX_VERIFY];
  int16_t next_tok[MAX_VERIFY];
  int16_t next_sib[MAX_VERIFY];
  float coin_l[MAX_VERIFY];
  int32_t pred[MAX_VERIFY];
  int32_t acc_row[MAX_ACCEPT];
  int32_t rej[MAX_VERIFY];  // Rej: sorted ascending, unique
#pragma HLS ARRAY_PARTITION variable=acc_row complete
#pragma HLS ARRAY_PARTITION variable=rej complete

  // thr_acc = max(f32(threshold_acc), f32(1e-9)) in binary32 (a NaN threshold stays NaN).
  const float kMinThr = 1e-9f;
  const float thr_acc = (threshold_acc < kMinThr) ? kMinThr : threshold_acc;
  *err_info = -1;

request_loop:
  for (int b = 0; b < B; ++b) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=128
    const int64_t qb = int64_t(b) * Q;
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
    int row = 0;        // node whose children are tested
    int last = 0;       // local index of the last accepted position (retrive_index = qb + last)
    int cur = 0;
    int n = 0;
    float prob_acc = 0.0f;
    int nrej = 0;
    float coin = coin_l[0];
    int64_t row_predict = greedy ? int64_t(target_predict[qb + 0]) : int64_t(-1);
    const int64_t row_base0 = qb * int64_t(V);
    int64_t row_base = row_base0;  // flat offset of target_probs[b, row, 0]
    acc_row[0] = ridx[0];

  walk_loop:
    for (int j = 1; j < S; ++j) {
#pragma HLS LOOP_TRIPCOUNT min=0 max=31
      cur = next_tok[cur];
      bool accepted = false;
    sibling_loop:
      for (int k = 0; k < Q && cur != -1; ++k) {  // a sibling chain has at most Q nodes
#pragma HLS LOOP_TRIPCOUNT min=0 max=128
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
          nrej = 0;
          row_base = (qb + row) * int64_t(V);
          if (greedy) row_predict = int64_t(target_predict[qb + row]);
          accepted = true;
          break;
        }
        if (!greedy) {
          // insert tok into the sorted set Rej (no duplicates)
          const int32_t t32 = int32_t(tok);
          int pos = nrej;
          bool dup = false;
        rej_find:
          for (int i = 0; i < MAX_VERIFY; ++i) {
#pragma HLS UNROLL
            if (i < nrej) {
              if (rej[i] == t32) dup = true;
              if (rej[i] > t32 && pos == nrej) pos = i;
            }
          }
          if (!dup) {
          rej_shift:
            for (int i = MAX_VERIFY - 1; i > 0; --i) {
#pragma HLS UNROLL
              if (i <= nrej && i > pos) rej[i] = rej[i - 1];
            }
            rej[pos] = t32;
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
      // B: residual mass, one HBM pass over the final row.
      uint64_t r_q = 0;
      int rp = 0;
    residual_loop:
      for (int v = 0; v < V; ++v) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=152064
        const float t = target_probs[row_base + v];
        row_buf[v] = t;
        if (t > 1.0f) {  // precondition of §6.6 step 2 (q_v <= 2^32)
          if (*err_info < 0) *err_info = row_base + v;
        }
        const bool excluded = rp < nrej && rej[rp] == v;
        if (excluded) ++rp;
        r_q += k6_quant(t, excluded);
      }
      if (*err_info >= 0) return K6_ERR_PROB_ABOVE_ONE;

      if (r_q > 0) {
        // C: u = floor(c * R_q / 2^24), c = min(floor(coin * 2^24), 2^24 - 1)
        const float fc = final_coins[b];
        const float cs = fc * 16777216.0f;  // exact
        uint64_t c;
        if (!(cs > 0.0f)) c = 0;  // 0, negative or NaN coin (precondition: [0, 1))
        else if (cs >= 16777215.0f) c = 16777215u;
        else c = uint64_t(cs);
        const uint64_t u = c * (r_q >> 24) + ((c * (r_q & 0xFFFFFFull)) >> 24);
        uint64_t prefix = 0;
        int32_t found = -1;
        rp = 0;
      cdf_loop:
        for (int v = 0; v < V; ++v) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=152064
          const float t = row_buf[v];
          const bool excluded = rp < nrej && rej[rp] == v;
          if (excluded) ++rp;
          prefix += k6_quant(t, excluded);
          if (prefix > u) {
            found = v;
            break;
          }
        }
        sample = found;
      } else {
        // fallback: argmax of the row (NaN largest, first NaN wins, lowest index on ties), Rej ignored
        float best = row_buf[0];
        int32_t best_i = 0;
      fallback_argmax:
        for (int v = 1; v < V; ++v) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=152064
          const float t = row_buf[v];
          if (!k6_isnan(best) && (k6_isnan(t) || t > best)) {
            best = t;
            best_i = v;
          }
        }
        sample = best_i;
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
#pragma HLS LOOP_TRIPCOUNT min=1 max=32
      accept_index[int64_t(b) * S + j] = acc_row[j];
    }
    accept_length[b] = n;
  }
  return K6_OK;
}

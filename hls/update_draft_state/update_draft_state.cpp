// K2 update_cumu_draft_state (KERNELS.md §2.5), per request b, in the pinned step order:
//   1. output_scores/tokens of the layer's top-K (parent slot and sorted index clamped)
//   2. mask prefix copy: columns [0, Ic-1) of each top-K row from its parent's row
//   3. append the C candidates at g = cc + i (g < N only); cumu_scores = in_scores * 0.9999f
//   4. parent -> first child links, ascending w after step 3 (later write wins, D6)
//   5. work_scores = [A | output_scores] with A = sort_scores[0:n0] snapshotted first, then the
//      pinned two-cursor descending merge of A and sorted_scores into sort_scores[0:n1].
// Only the regions of §2.4 are written. The only arithmetic is the one f32 multiply by 0.9999f.
#include "update_draft_state.hpp"

namespace {
using eagle4::MAX_CANDIDATES;
using eagle4::MAX_TOP_K;
using eagle4::MAX_VERIFY;
}  // namespace

// 0.9999f rounds to the binary32 pattern 0x3F7FF972 (§2.5 step 3; computing in f64 does not match
// CUDA). A literal keeps the top free of type punning; the C-ABI wrapper checks the pattern once.
const float EAGLE4_K2_DECAY = 0.9999f;

void update_draft_state_top(PORT(const float) topk_probas, PORT(const int64_t) topk_tokens,
                            PORT(const float) sorted_scores, PORT(const int64_t) sorted_indexs,
                            PORT(const int64_t) parent_indexs, PORT(const int64_t) topk_indexs,
                            PORT(const uint8_t) input_tree_mask, int batch_size, int node_top_k, int tree_width,
                            int input_count, int64_t cumu_count, int64_t verify_num, int64_t curr_depth,
                            int max_input_size, int max_node_count, int max_verify_num, PORT(int64_t) cumu_tokens,
                            PORT(float) cumu_scores, PORT(int64_t) cumu_deltas, PORT(int64_t) prev_indexs,
                            PORT(int64_t) next_indexs, PORT(int64_t) side_indexs, PORT(float) output_scores,
                            PORT(int64_t) output_tokens, PORT(float) work_scores, PORT(float) sort_scores,
                            PORT(uint8_t) output_tree_mask) {
#pragma HLS INTERFACE m_axi port = topk_probas offset = slave bundle = gmem0 depth = 8192
#pragma HLS INTERFACE m_axi port = topk_tokens offset = slave bundle = gmem0 depth = 8192
#pragma HLS INTERFACE m_axi port = sorted_scores offset = slave bundle = gmem0 depth = 8192
#pragma HLS INTERFACE m_axi port = sorted_indexs offset = slave bundle = gmem0 depth = 8192
#pragma HLS INTERFACE m_axi port = parent_indexs offset = slave bundle = gmem0 depth = 1280
#pragma HLS INTERFACE m_axi port = topk_indexs offset = slave bundle = gmem0 depth = 8192
#pragma HLS INTERFACE m_axi port = input_tree_mask offset = slave bundle = gmem1 depth = 524288
#pragma HLS INTERFACE m_axi port = cumu_tokens offset = slave bundle = gmem2 depth = 524288
#pragma HLS INTERFACE m_axi port = cumu_scores offset = slave bundle = gmem2 depth = 524288
#pragma HLS INTERFACE m_axi port = cumu_deltas offset = slave bundle = gmem2 depth = 524288
#pragma HLS INTERFACE m_axi port = prev_indexs offset = slave bundle = gmem2 depth = 524288
#pragma HLS INTERFACE m_axi port = next_indexs offset = slave bundle = gmem3 depth = 524288
#pragma HLS INTERFACE m_axi port = side_indexs offset = slave bundle = gmem2 depth = 524288
#pragma HLS INTERFACE m_axi port = output_scores offset = slave bundle = gmem4 depth = 1280
#pragma HLS INTERFACE m_axi port = output_tokens offset = slave bundle = gmem4 depth = 1280
#pragma HLS INTERFACE m_axi port = work_scores offset = slave bundle = gmem4 depth = 17664
#pragma HLS INTERFACE m_axi port = sort_scores offset = slave bundle = gmem5 depth = 16384
#pragma HLS INTERFACE m_axi port = output_tree_mask offset = slave bundle = gmem1 depth = 1312000
#pragma HLS INTERFACE s_axilite port = batch_size
#pragma HLS INTERFACE s_axilite port = node_top_k
#pragma HLS INTERFACE s_axilite port = tree_width
#pragma HLS INTERFACE s_axilite port = input_count
#pragma HLS INTERFACE s_axilite port = cumu_count
#pragma HLS INTERFACE s_axilite port = verify_num
#pragma HLS INTERFACE s_axilite port = curr_depth
#pragma HLS INTERFACE s_axilite port = max_input_size
#pragma HLS INTERFACE s_axilite port = max_node_count
#pragma HLS INTERFACE s_axilite port = max_verify_num
#pragma HLS INTERFACE s_axilite port = return
  const int B = batch_size, K = node_top_k, W = tree_width, C = W * K;
  const int Ic = input_count, I = max_input_size, N = max_node_count, M = max_verify_num;
  const int64_t cc = cumu_count;
  if (B < 0 || K < 1 || W < 1 || C > MAX_CANDIDATES || K > MAX_TOP_K || Ic < 1 || Ic - 1 > I || cc < 0 ||
      N < 0 || M < 1 || M > MAX_VERIFY)
    return;  // preconditions (§2.5): do nothing
  const int64_t vn = verify_num < 1 ? 1 : (verify_num > M ? M : verify_num);  // clamp(Vn, 1, M)
  const int n0 = static_cast<int>(vn < cc ? vn : cc);
  const int n1 = static_cast<int>(vn < cc + C ? vn : cc + C);
  const int64_t free_slots = static_cast<int64_t>(N) - cc;
  const int nk = free_slots <= 0 ? 0 : (free_slots < C ? static_cast<int>(free_slots) : C);  // kept nodes
  const int ns = n1 < C ? (n1 > K ? n1 : K) : C;  // sorted scores the kernel needs: [0, max(K, min(n1, C)))
  const int mask_w = Ic - 1;
  const float decay = EAGLE4_K2_DECAY;

  int64_t tok[MAX_CANDIDATES];
  int64_t par_id[MAX_CANDIDATES];  // topk_indexs (W <= C)
  float ss[MAX_CANDIDATES];
  float A[MAX_VERIFY];
  int pp[MAX_TOP_K];
#pragma HLS ARRAY_PARTITION variable = pp complete

per_request:
  for (int b = 0; b < B; ++b) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 128
    const int64_t rowC = static_cast<int64_t>(b) * C, rowK = static_cast<int64_t>(b) * K;
    const int64_t rowN = static_cast<int64_t>(b) * N;
  load_tokens:
    for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
      tok[c] = topk_tokens[rowC + c];
    }
  load_frontier_ids:
    for (int w = 0; w < W; ++w) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
      par_id[w] = topk_indexs[static_cast<int64_t>(b) * W + w];
    }
  load_sorted_scores:
    for (int r = 0; r < ns; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
      ss[r] = sorted_scores[rowC + r];
    }

    // 1. top-K outputs
  top_k_outputs:
    for (int r = 0; r < K; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 10
      int64_t p = parent_indexs[rowK + r];
      if (p < 0 || p >= W) p = 0;
      int64_t oi = sorted_indexs[rowC + r];
      if (oi < 0) oi = 0;
      pp[r] = static_cast<int>(p);
      output_scores[rowK + r] = ss[r];
      output_tokens[rowK + r] = tok[p * K + oi % K];
    }

    // 2. mask prefix copy: columns [0, Ic-1); column Ic-1 and beyond untouched
  mask_rows:
    for (int r = 0; r < K; ++r) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 10
      const int64_t src = (static_cast<int64_t>(b) * W + pp[r]) * mask_w;
      const int64_t dst = (rowK + r) * (static_cast<int64_t>(I) + 1);
    mask_copy:
      for (int j = 0; j < mask_w; ++j) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 1024
        output_tree_mask[dst + j] = input_tree_mask[src + j];
      }
    }

    // 3. append the kept candidates in original sampling order
    int slot = 0, kk = 0;  // i = slot*K + kk, tracked by counters instead of a divider
  append_nodes:
    for (int i = 0; i < nk; ++i) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 64
      const int64_t g = cc + i;
      cumu_tokens[rowN + g] = tok[i];
      cumu_scores[rowN + g] = topk_probas[rowC + i] * decay;  // one binary32 multiply
      cumu_deltas[rowN + g] = curr_depth;
      prev_indexs[rowN + g] = par_id[slot];
      next_indexs[rowN + g] = -1;
      side_indexs[rowN + g] = (kk == K - 1) ? int64_t(-1) : g + 1;  // g+1 even when g+1 >= N
      if (++kk == K) {
        kk = 0;
        ++slot;
      }
    }

    // 4. parent -> first child, ascending w (a later duplicate overwrites: larger w wins)
  link_parents:
    for (int w = 0; w < W; ++w) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
      const int64_t P = par_id[w];
      if (P >= 0 && P < N) next_indexs[rowN + P] = cc + static_cast<int64_t>(w) * K;
    }

    // 5.1 snapshot A = sort_scores[0:n0] before any write; work = [A | output_scores]
    const int64_t rowM = static_cast<int64_t>(b) * M, rowW = static_cast<int64_t>(b) * (M + K);
  snapshot_a:
    for (int j = 0; j < n0; ++j) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 128
      const float a = sort_scores[rowM + j];
      A[j] = a;
      work_scores[rowW + j] = a;
    }
  work_tail:
    for (int r = 0; r < K; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 10
      work_scores[rowW + n0 + r] = ss[r];
    }
    // 5.2 pinned merge: take A[ia] iff ia < n0 and (ib >= C or A[ia] >= S[ib]); NaN never wins >=
    int ia = 0, ib = 0;
  merge:
    for (int t = 0; t < n1; ++t) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 128
      const bool take_a = ia < n0 && (ib >= C || A[ia] >= ss[ib]);
      sort_scores[rowM + t] = take_a ? A[ia] : ss[ib];
      if (take_a) ++ia;
      else ++ib;
    }
  }
}

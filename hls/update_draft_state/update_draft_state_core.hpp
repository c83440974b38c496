// K2 update_cumu_draft_state (KERNELS.md §2.5): the per-request core (steps 1-5), shared by
// update_draft_state_top (state and operands on m_axi ports) and the fused draft pipeline (state
// resident in on-chip arrays for the whole draft step, operands from the K1 stage). Every accessor
// is anything indexable like a pointer (a PORT(T), a raw pointer, an on-chip array), offset to the
// request's row by the caller.
#ifndef EAGLE4_UPDATE_DRAFT_STATE_CORE_HPP
#define EAGLE4_UPDATE_DRAFT_STATE_CORE_HPP

#include <cstdint>

#include "update_draft_state.hpp"

namespace eagle4 {
namespace k2 {

// 32-bit mask offsets: a frontier row index times the mask stride (<= MAX_INPUT_SIZE + 1).
static_assert(int64_t(MAX_CANDIDATES) * (MAX_INPUT_SIZE + 1) <= INT32_MAX, "mask offsets fit 32 bits");

// x mod K (1 <= K <= MAX_TOP_K) of a non-negative 64-bit index in 32-bit arithmetic (no 64-bit divider
// in the pipelined top-K loop): x = hi * 2^32 + lo, so x mod K = ((hi mod K) * (2^32 mod K) + lo mod K) mod K,
// whose operands stay below K * K + K.
inline int mod_k(uint64_t x, uint32_t K, uint32_t two32_mod_k) {
#pragma HLS INLINE
  const uint32_t hi = static_cast<uint32_t>(x >> 32), lo = static_cast<uint32_t>(x);
  return static_cast<int>(((hi % K) * two32_mod_k + lo % K) % K);
}
static_assert(int64_t(MAX_TOP_K) * MAX_TOP_K + MAX_TOP_K <= INT32_MAX, "mod_k stays in 32 bits");

// The call-wide region sizes of §2.4 (same for every request).
struct Sizes {
  int n0;  // min(clamp(Vn, 1, M), cc): old sort entries kept (A)
  int n1;  // min(clamp(Vn, 1, M), cc + C): sort entries written
  int nk;  // candidates appended (g = cc + i < N)
  int ns;  // sorted scores the kernel needs: [0, max(K, min(n1, C)))
};
inline Sizes sizes(int K, int C, int64_t cc, int64_t verify_num, int N, int M) {
  Sizes z;
  const int64_t vn = verify_num < 1 ? 1 : (verify_num > M ? M : verify_num);  // clamp(Vn, 1, M)
  z.n0 = static_cast<int>(vn < cc ? vn : cc);
  z.n1 = static_cast<int>(vn < cc + C ? vn : cc + C);
  const int64_t free_slots = static_cast<int64_t>(N) - cc;
  z.nk = free_slots <= 0 ? 0 : (free_slots < C ? static_cast<int>(free_slots) : C);
  z.ns = z.n1 < C ? (z.n1 > K ? z.n1 : K) : C;
  return z;
}

// One request b. Row accessors: topk_probas, topk_tokens, sorted_scores, sorted_indexs: its C
// entries; parent_indexs, output_scores, output_tokens: K; topk_indexs: W; input_tree_mask: W rows
// of in_stride (columns [0, Ic-1) read); output_tree_mask: K rows of out_stride (columns [0, Ic-1)
// written); cumu_*, prev/next/side: N; work_scores: M+K; sort_scores: M.
// Preconditions (checked by the caller): 1 <= K <= MAX_TOP_K, W >= 1, W*K <= MAX_CANDIDATES,
// 1 <= Ic, M <= MAX_VERIFY.
template <typename PProb, typename PTok, typename PSS, typename PSI, typename PPar, typename PTI, typename PMIn,
          typename PCTok, typename PCSc, typename PCDel, typename PPrev, typename PNext, typename PSide, typename POSc,
          typename POTok, typename PWork, typename PSort, typename PMOut>
void update_request(PProb topk_probas, PTok topk_tokens, PSS sorted_scores, PSI sorted_indexs, PPar parent_indexs,
                    PTI topk_indexs, PMIn input_tree_mask, int64_t in_stride, int K, int W, int Ic, int64_t cc,
                    int64_t curr_depth, int N, const Sizes& z, PCTok cumu_tokens, PCSc cumu_scores,
                    PCDel cumu_deltas, PPrev prev_indexs, PNext next_indexs, PSide side_indexs, POSc output_scores,
                    POTok output_tokens, PWork work_scores, PSort sort_scores, PMOut output_tree_mask,
                    int64_t out_stride) {
#pragma HLS INLINE
  const int C = W * K;
  const int n0 = z.n0, n1 = z.n1, nk = z.nk, ns = z.ns;
  const int mask_w = Ic - 1;
  const float decay = EAGLE4_K2_DECAY;
  const uint32_t uK = static_cast<uint32_t>(K);
  const uint32_t two32_mod_k = (0xFFFFFFFFu % uK + 1u) % uK;  // 2^32 mod K, once per request

  int64_t tok[MAX_CANDIDATES];
  int64_t par_id[MAX_CANDIDATES];  // topk_indexs (W <= C)
  float ss[MAX_CANDIDATES];
  float A[MAX_VERIFY];
  int pp[MAX_TOP_K];
#pragma HLS ARRAY_PARTITION variable = pp complete

load_tokens:
  for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
    tok[c] = topk_tokens[c];
  }
load_frontier_ids:
  for (int w = 0; w < W; ++w) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
    par_id[w] = topk_indexs[w];
  }
load_sorted_scores:
  for (int r = 0; r < ns; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 64
    ss[r] = sorted_scores[r];
  }

  // 1. top-K outputs
top_k_outputs:
  for (int r = 0; r < K; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 10
    const int64_t p64 = parent_indexs[r];
    const int p = (p64 < 0 || p64 >= W) ? 0 : static_cast<int>(p64);
    const int64_t oi = sorted_indexs[r];
    const int oi_mod_k = oi < 0 ? 0 : mod_k(static_cast<uint64_t>(oi), uK, two32_mod_k);
    pp[r] = p;
    output_scores[r] = ss[r];
    output_tokens[r] = tok[p * K + oi_mod_k];
  }

  // 2. mask prefix copy: columns [0, Ic-1); column Ic-1 and beyond untouched
mask_rows:
  for (int r = 0; r < K; ++r) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 10
    const int src = pp[r] * static_cast<int>(in_stride);  // < MAX_CANDIDATES * (MAX_INPUT_SIZE + 1)
    const int dst = r * static_cast<int>(out_stride);
  mask_copy:
    for (int j = 0; j < mask_w; ++j) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 1024
      output_tree_mask[dst + j] = input_tree_mask[src + j];
    }
  }

  // 3. append the kept candidates in original sampling order
  int slot = 0, kk = 0;  // i = slot*K + kk, tracked by counters instead of a divider
  const int cc32 = nk > 0 ? static_cast<int>(cc) : 0;  // nk > 0 only when cc < N: g = cc + i < N fits 32 bits
append_nodes:
  for (int i = 0; i < nk; ++i) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 64
    const int g = cc32 + i;
    cumu_tokens[g] = tok[i];
    cumu_scores[g] = topk_probas[i] * decay;  // one binary32 multiply
    cumu_deltas[g] = curr_depth;
    prev_indexs[g] = par_id[slot];
    next_indexs[g] = int64_t(-1);
    side_indexs[g] = (kk == K - 1) ? int64_t(-1) : static_cast<int64_t>(g) + 1;  // g+1 even when g+1 >= N
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
    if (P >= 0 && P < N) next_indexs[static_cast<int>(P)] = cc + static_cast<int64_t>(w) * K;
  }

  // 5.1 snapshot A = sort_scores[0:n0] before any write; work = [A | output_scores]
snapshot_a:
  for (int j = 0; j < n0; ++j) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 128
    const float a = sort_scores[j];
    A[j] = a;
    work_scores[j] = a;
  }
work_tail:
  for (int r = 0; r < K; ++r) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 10
    work_scores[n0 + r] = ss[r];
  }
  // 5.2 pinned merge: take A[ia] iff ia < n0 and (ib >= C or A[ia] >= S[ib]); NaN never wins >=
  int ia = 0, ib = 0;
merge:
  for (int t = 0; t < n1; ++t) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 128
    const bool take_a = ia < n0 && (ib >= C || A[ia] >= ss[ib]);
    sort_scores[t] = take_a ? A[ia] : ss[ib];
    if (take_a) ++ia;
    else ++ib;
  }
}

}  // namespace k2
}  // namespace eagle4

#endif  // EAGLE4_UPDATE_DRAFT_STATE_CORE_HPP

// The phases of a draft layer's three kernels (K1 draft_tree_score, K2 update_draft_state, K3 work_deltas),
// shared by their own kernels and the draft step's one-launch kernel (draft_step.cu).
#pragma once
#include "eagle4_cuda.cuh"

// K1

// (key desc, index asc): true when (ka, ia) sorts before (kb, ib)
__device__ __forceinline__ bool k1_better(float ka, int ia, float kb, int ib) {
  return ka > kb || (ka == kb && ia < ib);
}

// 64-lane bitonic sort in one warp, two elements per lane (element e = lane + 32*j).
// Every compare-exchange of the full network executes (§12 P1); best element ends at e = 0.
__device__ __forceinline__ void warp_bitonic64(float& k0, int& i0, float& k1, int& i1) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int k = 2; k <= 64; k <<= 1) {
#pragma unroll
    for (int s = k >> 1; s > 0; s >>= 1) {
      if (s == 32) {  // only in the k == 64 merge: ascending (best first), e and e+32 in one lane
        if (k1_better(k1, i1, k0, i0)) {
          float tk = k0; k0 = k1; k1 = tk;
          int ti = i0; i0 = i1; i1 = ti;
        }
      } else {
        const bool lower = (lane & s) == 0;
        {
          float pk = __shfl_xor_sync(FULL, k0, s);
          int pi = __shfl_xor_sync(FULL, i0, s);
          const bool asc = ((lane) & k) == 0;
          const bool pb = k1_better(pk, pi, k0, i0);
          if ((lower == asc) ? pb : !pb) { k0 = pk; i0 = pi; }
        }
        {
          float pk = __shfl_xor_sync(FULL, k1, s);
          int pi = __shfl_xor_sync(FULL, i1, s);
          const bool asc = ((lane + 32) & k) == 0;
          const bool pb = k1_better(pk, pi, k1, i1);
          if ((lower == asc) ? pb : !pb) { k1 = pk; i1 = pi; }
        }
      }
    }
  }
}

// K1's phases, shared by k1_kernel and the draft-step kernel. Plain (not __restrict__) pointers: in
// the draft-step kernel the same block later reads what these write.
// Scores of request b and their (score desc, index asc) order into s_sc / s_perm; every block of the
// request computes them (ends with a block barrier).
__device__ __forceinline__ void k1_sort(int64_t b, const float* probs, const float* last, int K, int W,
                                        float* s_sc, int* s_perm) {
  const int C = W * K;
  const int tid = threadIdx.x;
  if (tid < 32) {
    float key0 = -INFINITY, key1 = -INFINITY;
    int i0 = tid, i1 = tid + 32;
    if (tid < C) {
      float s = __fmul_rn(probs[b * C + tid], last[b * W + tid / K]);
      s_sc[tid] = s;
      key0 = isnan(s) ? -INFINITY : s;
    }
    if (tid + 32 < C) {
      float s = __fmul_rn(probs[b * C + tid + 32], last[b * W + (tid + 32) / K]);
      s_sc[tid + 32] = s;
      key1 = isnan(s) ? -INFINITY : s;
    }
    warp_bitonic64(key0, i0, key1, i1);
    s_perm[tid] = i0;
    s_perm[tid + 32] = i1;
  }
  __syncthreads();
}

// K1's outputs of request b other than the hidden rows (one block per request).
__device__ __forceinline__ void k1_store(int64_t b, int64_t* tokens, float* curr, float* sscores, int64_t* sidx,
                                         int64_t* cache, int64_t* parent, const int64_t* hot, int64_t Vh, int K,
                                         int W, int64_t cc, bool use_hot, const float* s_sc, const int* s_perm) {
  const int C = W * K;
  const int tid = threadIdx.x;
  for (int c = tid; c < C; c += blockDim.x) {
    const int p = s_perm[c];
    curr[b * C + c] = s_sc[c];
    sscores[b * C + c] = s_sc[p];
    sidx[b * C + c] = p;
    if (use_hot) {
      const int64_t t = tokens[b * C + c];
      if (t >= 0 && t < Vh) tokens[b * C + c] = hot[t];
    }
  }
  for (int rr = tid; rr < K; rr += blockDim.x) {
    cache[b * K + rr] = cc + s_perm[rr];
    parent[b * K + rr] = s_perm[rr] / K;
  }
}

// K1's hidden row r of request b: the input row of its parent.
template <typename VT>
__device__ __forceinline__ void k1_copy(int64_t b, int r, const VT* hin, VT* hout, int K, int W, int64_t row_units,
                                        const int* s_perm) {
  const int p = s_perm[r] / K;
  copy_row<VT>(hin + (b * W + p) * row_units, hout + (b * K + r) * row_units, row_units, threadIdx.x, blockDim.x);
}

// K2

// K2 for request b (one block per request, blockDim % 32 == 0, >= 64 threads). sm: n0 + C + n1 floats
// of shared memory. Plain pointers (see k1_sort); k2_kernel passes its __restrict__ ones.
__device__ __forceinline__ void k2_phase(
    int64_t b, const float* in_scores, const int64_t* tokens, const float* sorted_scores, const int64_t* sorted_idx,
    const int64_t* parent_idx, const int64_t* topk_idx, const uint8_t* in_mask, int K, int W, int64_t Ic, int64_t cc,
    int64_t d, int64_t I, int64_t N, int64_t M, int64_t n0, int64_t n1, int64_t* cumu_tokens, float* cumu_scores,
    int64_t* cumu_deltas, int64_t* prev, int64_t* next, int64_t* side, float* out_scores, int64_t* out_tokens,
    float* work, float* sort_scores, uint8_t* out_mask, float* k2_sm) {
  const int C = W * K;
  const int tid = threadIdx.x, nt = blockDim.x;
  float* A = k2_sm;             // n0
  float* Bs = A + n0;           // C
  float* Mg = Bs + C;           // n1
  // 1. top-K outputs
  for (int r = tid; r < K; r += nt) {
    out_scores[b * K + r] = sorted_scores[b * C + r];
    int64_t pp = parent_idx[b * K + r];
    if (pp < 0 || pp >= W) pp = 0;
    int64_t oi = sorted_idx[b * C + r];
    if (oi < 0) oi = 0;
    out_tokens[b * K + r] = tokens[b * C + pp * K + (oi % K)];
  }
  // 2. mask prefix copy (columns [0, Ic-1))
  const int64_t mw = Ic - 1;
  for (int64_t e = tid; e < (int64_t)K * mw; e += nt) {
    const int64_t r = e / mw, j = e - r * mw;
    int64_t pp = parent_idx[b * K + r];
    if (pp < 0 || pp >= W) pp = 0;
    out_mask[(b * K + r) * (I + 1) + j] = in_mask[(b * W + pp) * mw + j];
  }
  // 3. append nodes
  for (int i = tid; i < C; i += nt) {
    const int64_t g = cc + i;
    if (g < N) {
      const int64_t o = b * N + g;
      cumu_tokens[o] = tokens[b * C + i];
      cumu_scores[o] = __fmul_rn(in_scores[b * C + i], 0.9999f);
      cumu_deltas[o] = d;
      prev[o] = topk_idx[b * W + i / K];
      next[o] = -1;
      side[o] = (i % K == K - 1) ? (int64_t)-1 : g + 1;
    }
  }
  // 5.1 snapshot A before any write to sort_scores; new sorted scores
  for (int64_t t = tid; t < n0; t += nt) A[t] = sort_scores[b * M + t];
  for (int t = tid; t < C; t += nt) Bs[t] = sorted_scores[b * C + t];
  __syncthreads();  // orders step 3's global writes before step 4 (same block)
  // 4. parent -> first child, ascending w (later write wins)
  if (tid == 0) {
    for (int w = 0; w < W; ++w) {
      const int64_t P = topk_idx[b * W + w];
      if (P >= 0 && P < N) next[b * N + P] = cc + (int64_t)w * K;
    }
  }
  // 5.1 work buffer
  for (int64_t t = tid; t < n0; t += nt) work[b * (M + K) + t] = A[t];
  for (int t = tid; t < K; t += nt) work[b * (M + K) + n0 + t] = Bs[t];
  // 5.2 merge. Two sorted (descending), NaN-free lists merge by rank: A[i] lands at i + #{Bs > A[i]},
  // Bs[j] at j + #{A >= Bs[j]} -- exactly the pinned two-cursor merge, all outputs in parallel.
  // Anything else (unsorted or NaN) runs the pinned merge itself in one thread.
  __shared__ int s_sorted;
  const int lane = tid & 31, wid = tid >> 5;
  if (wid == 1) {  // thread 0 runs step 4 meanwhile
    bool ok = true;
    for (int64_t i = lane; i < n0; i += 32) ok = ok && !isnan(A[i]) && (i + 1 >= n0 || A[i] >= A[i + 1]);
    for (int j = lane; j < C; j += 32) ok = ok && !isnan(Bs[j]) && (j + 1 >= C || Bs[j] >= Bs[j + 1]);
    ok = __all_sync(FULL, ok);
    if (lane == 0) s_sorted = ok ? 1 : 0;
  }
  __syncthreads();
  if (s_sorted) {
    for (int64_t i = tid; i < n0; i += nt) {
      int64_t pos = i;
      for (int j = 0; j < C; ++j) pos += Bs[j] > A[i];
      if (pos < n1) Mg[pos] = A[i];
    }
    for (int j = tid; j < C; j += nt) {
      int64_t pos = j;
      for (int64_t i = 0; i < n0; ++i) pos += A[i] >= Bs[j];
      if (pos < n1) Mg[pos] = Bs[j];
    }
  } else if (tid == 32) {
    int64_t ia = 0, ib = 0;
    for (int64_t t = 0; t < n1; ++t) {
      if (ia < n0 && (ib >= C || A[ia] >= Bs[ib])) Mg[t] = A[ia++];
      else Mg[t] = Bs[ib++];
    }
  }
  __syncthreads();
  for (int64_t t = tid; t < n1; t += nt) sort_scores[b * M + t] = Mg[t];
}

// K3 (the pinned sequential f32 order)

// K3's deltas of one request (one thread, the pinned sequential order): row = work + b * stride,
// out[0..K] = (base, delta of w = 1..K). Plain pointers (see k1_sort).
__device__ __forceinline__ void k3_request(const float* row, int64_t n0, int K, int64_t Vb, float* out) {
  const int64_t Vbp = Vb > 1 ? Vb : 1;
  const float* A = row;
  const float* Bn = A + n0;
  int64_t kA = n0 < Vbp ? n0 : Vbp, kB = 0;
  float base = 0.0f;
  for (int64_t i = 0; i < kA; ++i) base = __fadd_rn(base, A[i]);
  out[0] = base;
  for (int w = 1; w <= K; ++w) {
    const float x = Bn[w - 1];
    float dl;
    if (kA + kB < Vbp) {
      dl = x;
      kB += 1;
    } else if (kA > 0 && x > A[kA - 1]) {
      dl = __fsub_rn(x, A[kA - 1]);
      kA -= 1;
      kB += 1;
    } else {
      dl = 0.0f;
    }
    out[w] = dl;
  }
}

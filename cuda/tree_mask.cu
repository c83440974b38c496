// K4 fused_tree_mask_operator (KERNELS.md §4).
#include "eagle4_cuda.cuh"


__global__ void __launch_bounds__(256) k4_kernel(
    const int64_t* __restrict__ seq_lens, const int64_t* __restrict__ pool, const int32_t* __restrict__ r2t,
    int64_t P, int64_t Smax, const int64_t* __restrict__ locs, const int64_t* __restrict__ parent, int B,
    int64_t T, int64_t Q, bool wb, int32_t* __restrict__ qo, int32_t* __restrict__ kvp,
    int32_t* __restrict__ kvi, int64_t* __restrict__ pos, int32_t* __restrict__ mbits,
    int32_t* __restrict__ mbytes, uint8_t* __restrict__ packed, uint8_t* __restrict__ mbool) {
  pdl_begin();
  extern __shared__ int64_t k4_sm[];
  int64_t* pre_kv = k4_sm;               // B+1
  int64_t* pre_bits = pre_kv + (B + 1);  // B+1
  int64_t* pre_bytes = pre_bits + (B + 1);
  int64_t* s_par = pre_bytes + (B + 1);  // T
  int64_t* wbuf = s_par + T;             // 33
  uint32_t* anc = reinterpret_cast<uint32_t*>(wbuf + 33);  // Q * words
  const int64_t words = (T + 31) >> 5;
  const int b = blockIdx.x, y = blockIdx.y, Y = gridDim.y;
  const int tid = threadIdx.x, nt = blockDim.x;
  // this request's scalars, and this thread's first KV index, loaded up front: their latency
  // overlaps the indptr scans and the ancestor walk (the store waits for the request's offset)
  const int64_t L = seq_lens[b];
  const int64_t pb = pool[b];
  const bool pool_ok = pb >= 0 && pb < P;
  const int64_t rowlen = L + T;
  const int64_t j_first = (int64_t)y * nt + tid;
  int32_t kv_first = 0;
  if (j_first < rowlen)
    kv_first = j_first < L ? ((pool_ok && j_first < Smax) ? r2t[pb * Smax + j_first] : (int32_t)-1)
                           : (int32_t)locs[(int64_t)b * T + (j_first - L)];
  // the bit indptr needs no scan: every request has Q rows, so sum_{i<b} Q (L_i + T) = Q * kv_indptr[b]
  if (B <= 32) {
    // one warp: both indptr scans by shuffles and one block barrier (the block scans take six)
    for (int64_t t = tid; t < T; t += nt) s_par[t] = parent[(int64_t)b * T + t];
    if (tid < 32) {
      long long kv = 0, by = 0;
      if (tid < B) {
        const int64_t Li = tid == b ? L : seq_lens[tid];
        kv = Li + T;
        by = (Q * (Li + T) + 7) >> 3;
      }
      long long ikv = kv, iby = by;
      for (int o = 1; o < B; o <<= 1) {  // lanes >= B add nothing: ceil(log2 B) levels suffice for lanes < B
        const long long u = __shfl_up_sync(FULL, ikv, o), w = __shfl_up_sync(FULL, iby, o);
        if (tid >= o) { ikv += u; iby += w; }
      }
      if (tid < B) { pre_kv[tid] = ikv - kv; pre_bytes[tid] = iby - by; pre_bits[tid] = Q * (ikv - kv); }
      if (tid == B - 1) { pre_kv[B] = ikv; pre_bytes[B] = iby; pre_bits[B] = Q * ikv; }
    }
    __syncthreads();
  } else {
    for (int i = tid; i < B; i += nt) {
      const int64_t Li = seq_lens[i];
      pre_kv[i] = Li + T;
      pre_bytes[i] = (Q * (Li + T) + 7) >> 3;
    }
    for (int64_t t = tid; t < T; t += nt) s_par[t] = parent[(int64_t)b * T + t];
    __syncthreads();
    int64_t tot = block_exclusive_scan<int64_t>(pre_kv, B, wbuf);
    if (tid == 0) pre_kv[B] = tot;
    tot = block_exclusive_scan<int64_t>(pre_bytes, B, wbuf);
    if (tid == 0) pre_bytes[B] = tot;
    __syncthreads();
    for (int i = tid; i <= B; i += nt) pre_bits[i] = Q * pre_kv[i];
    __syncthreads();
  }
  if (b == 0 && y == 0) {
    for (int i = tid; i <= B; i += nt) {
      qo[i] = (int32_t)((int64_t)i * Q);
      kvp[i] = (int32_t)pre_kv[i];
      mbits[i] = (int32_t)pre_bits[i];
      mbytes[i] = (int32_t)pre_bytes[i];
    }
  }
  // ancestor-or-self bit rows of the Q queries
  for (int64_t q = tid; q < Q; q += nt) {
    uint32_t* row = anc + q * words;
    for (int64_t w = 0; w < words; ++w) row[w] = 0u;
    const int64_t tq = T - Q + q;
    row[tq >> 5] |= 1u << (tq & 31);
    int64_t cur = tq, depth = 0;
    for (int64_t step = 0; step < T; ++step) {
      const int64_t p = s_par[cur];
      if (p == -1 || p >= cur || p < -1) break;
      row[p >> 5] |= 1u << (p & 31);
      ++depth;
      cur = p;
    }
    if (y == 0) pos[(int64_t)b * Q + q] = L + depth;
  }
  __syncthreads();
  // KV indices
  int32_t* kv = kvi + pre_kv[b];
  if (j_first < rowlen) kv[j_first] = kv_first;
  for (int64_t j = j_first + (int64_t)Y * nt; j < rowlen; j += (int64_t)Y * nt) {
    int32_t v;
    if (j < L) v = (pool_ok && j < Smax) ? r2t[pb * Smax + j] : (int32_t)-1;
    else v = (int32_t)locs[(int64_t)b * T + (j - L)];
    kv[j] = v;
  }
  // packed mask (little bit order, per-request byte-aligned segments)
  const int64_t nbits = Q * rowlen, nbytes = (nbits + 7) >> 3;
  const bool small = nbits < 0x7fffffffll;  // the precondition's case: 32-bit division (exact) suffices
  uint8_t* pk = packed + pre_bytes[b];
  for (int64_t k = (int64_t)y * nt + tid; k < nbytes; k += (int64_t)Y * nt) {
    const int64_t f = k << 3;
    int64_t q = small ? (int64_t)((uint32_t)f / (uint32_t)rowlen) : f / rowlen, c = f - q * rowlen;
    if (c + 8 <= L) {  // all 8 bits in row q's committed prefix (c < L: ones), so inside row q and nbits
      pk[k] = 0xFFu;
      continue;
    }
    uint32_t byte = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (f + i < nbits) {
        uint32_t bit;
        if (c < L) bit = 1u;
        else {
          const int64_t t = c - L;
          bit = (anc[q * words + (t >> 5)] >> (t & 31)) & 1u;
        }
        byte |= bit << i;
      }
      if (++c == rowlen) { c = 0; ++q; }
    }
    pk[k] = (uint8_t)byte;
  }
  if (wb) {
    uint8_t* mb = mbool + pre_bits[b];
    for (int64_t f = (int64_t)y * nt + tid; f < nbits; f += (int64_t)Y * nt) {
      const int64_t q = f / rowlen, c = f - q * rowlen;
      uint8_t bit;
      if (c < L) bit = 1;
      else {
        const int64_t t = c - L;
        bit = (uint8_t)((anc[q * words + (t >> 5)] >> (t & 31)) & 1u);
      }
      mb[f] = bit;
    }
  }
}

void fused_tree_mask_operator(at::Tensor seq_lens, at::Tensor req_pool_indices, at::Tensor req_to_token,
                              int64_t S_max, at::Tensor tree_cache_locs, at::Tensor tree_parent, int64_t B,
                              int64_t T, int64_t Q, bool write_bool_mask, at::Tensor qo_indptr,
                              at::Tensor kv_indptr, at::Tensor kv_indices, at::Tensor positions,
                              at::Tensor mask_indptr_bits, at::Tensor mask_indptr_bytes, at::Tensor packed_mask,
                              std::optional<at::Tensor> mask_bool) {
  E4_PRE(B >= 0, "B must be >= 0");
  E4_PRE(Q >= 1 && Q <= T, "1 <= Q <= T required, got Q=", Q, " T=", T);
  E4_PRE(S_max >= 0, "S_max must be >= 0");
  check_tensor(seq_lens, "seq_lens", at::kLong, {B});
  check_tensor(req_pool_indices, "req_pool_indices", at::kLong, {B});
  E4_VALUE(req_to_token.dim() == 2, "req_to_token must be [P, S_max]");
  check_tensor(req_to_token, "req_to_token", at::kInt, {-1, S_max});
  check_tensor(tree_cache_locs, "tree_cache_locs", at::kLong, {B, T});
  check_tensor(tree_parent, "tree_parent", at::kLong, {B, T});
  check_tensor(qo_indptr, "qo_indptr", at::kInt, {B + 1});
  check_tensor(kv_indptr, "kv_indptr", at::kInt, {B + 1});
  check_tensor(kv_indices, "kv_indices", at::kInt, {-1});
  check_tensor(positions, "positions", at::kLong, {B, Q});
  check_tensor(mask_indptr_bits, "mask_indptr_bits", at::kInt, {B + 1});
  check_tensor(mask_indptr_bytes, "mask_indptr_bytes", at::kInt, {B + 1});
  check_tensor(packed_mask, "packed_mask", at::kByte, {-1});
  if (write_bool_mask) {
    E4_PRE(has(mask_bool), "mask_bool is required when write_bool_mask");
    check_tensor(*mask_bool, "mask_bool", at::kBool, {-1});
  }
  const int64_t words = (T + 31) / 32;
  const size_t smem = (size_t)(3 * (B + 1) + T + 33) * 8 + (size_t)Q * words * 4;
  E4_CHECK(smem <= 200 * 1024, "fused_tree_mask_operator: B/T/Q too large for shared memory");
  const c10::cuda::CUDAGuard guard(seq_lens.device());
  auto stream = c10::cuda::getCurrentCUDAStream();
  if (B == 0) {  // only the indptrs' single entry
    qo_indptr.zero_(); kv_indptr.zero_(); mask_indptr_bits.zero_(); mask_indptr_bytes.zero_();
    return;
  }
  if (smem > 48 * 1024)
    E4_CUDA_CHECK(cudaFuncSetAttribute(k4_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  // blocks per request: about 128 packed-mask bytes a block (the bound Q * (S_max + T) / 8 of a request's
  // bytes: seq_lens stay on the device), at most ~2 blocks per SM in all: few requests get many short blocks,
  // many requests are held to one wave (docs/decisions.md)
  const int64_t y_cap = std::max<int64_t>(1, 2 * (int64_t)sm_count() / B);
  const int64_t y_work = std::max<int64_t>(1, (Q * (S_max + T) / 8 + 127) / 128);
  const int Y = (int)std::min<int64_t>(65535, std::min(y_cap, y_work));
  launch_ex(k4_kernel, dim3((unsigned)B, (unsigned)Y), dim3(256), smem, 0, stream,
      ptr<int64_t>(seq_lens), ptr<int64_t>(req_pool_indices), ptr<int32_t>(req_to_token), req_to_token.size(0),
      S_max, ptr<int64_t>(tree_cache_locs), ptr<int64_t>(tree_parent), (int)B, T, Q, write_bool_mask,
      ptr<int32_t>(qo_indptr), ptr<int32_t>(kv_indptr), ptr<int32_t>(kv_indices), ptr<int64_t>(positions),
      ptr<int32_t>(mask_indptr_bits), ptr<int32_t>(mask_indptr_bytes), ptr<uint8_t>(packed_mask),
      write_bool_mask ? ptr<uint8_t>(*mask_bool) : nullptr);
  E4_CUDA_CHECK(cudaGetLastError());
}


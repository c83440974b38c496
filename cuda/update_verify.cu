// K7 update_verify_result (KERNELS.md §7).
#include "eagle4_cuda.cuh"

// Every block rebuilds the (small) per-request metadata in shared
// memory; block 0 writes the bookkeeping outputs and copies no row, blocks 1.. copy the next_hidden
// rows (they need only the accepted rows and their prefix sums: no predicts/cache-slot loads), so a
// row copy runs beside the bookkeeping chain instead of after it.

struct K7Out {
  int32_t *acc_out, *acc_len_out, *acc_indptr, *acc_flat, *verified;
  uint8_t* evict;
  int64_t *free_slots, *seq_out, *acc_node;
  int32_t* unf_count;
  int64_t* unf_index;
  int32_t *next_len, *next_indptr, *next_vid;
  int64_t* next_pos;
  int64_t *next_seq, *next_pool;
  int32_t *next_root, *next_last;
};

template <typename VT>
__global__ void __launch_bounds__(256) k7_kernel(
    const int32_t* __restrict__ acc_idx, const int32_t* __restrict__ predicts, const int32_t* __restrict__ finish,
    const int64_t* __restrict__ seq_lens, const int64_t* __restrict__ pool, int32_t* __restrict__ r2t, int64_t P,
    const int64_t* __restrict__ ocl, const VT* __restrict__ hidden, const int64_t* __restrict__ vnode, int B, int Q,
    int S, int64_t Smax, int64_t row_units, VT* __restrict__ next_hidden, K7Out o) {
  pdl_begin();
  extern __shared__ int64_t k7_sm[];
  int64_t* wbuf = k7_sm;               // 33
  int64_t* accp = wbuf + 33;           // B+1: exclusive prefix of (a_b + 1)
  int64_t* unfp = accp + (B + 1);      // B+1: same over unfinished requests
  int64_t* urank = unfp + (B + 1);     // B+1: rank among unfinished
  int64_t* s_L = urank + (B + 1);      // B: seq_lens (block 0)
  int64_t* s_pb = s_L + B;             // B: req_pool_indices (block 0)
  int32_t* row = reinterpret_cast<int32_t*>(s_pb + B);  // B*S, truncated accept rows
  int32_t* src = row + (int64_t)B * S;                         // B*S, source position of next rows
  int64_t* s_ocl = reinterpret_cast<int64_t*>(src + (int64_t)B * S);  // B*S (row + src: 8*B*S bytes, aligned)
  int64_t* s_vn = s_ocl + (int64_t)B * S;                                                    // B*S
  int32_t* s_pred = reinterpret_cast<int32_t*>(s_vn + (int64_t)B * S);                       // B*S
  uint32_t* bm = reinterpret_cast<uint32_t*>(s_pred + (int64_t)B * S);  // ceil(B*Q/32)
  const int tid = threadIdx.x, nt = blockDim.x;
  const int64_t BS = (int64_t)B * S, BQ = (int64_t)B * Q;
  const bool blk0 = blockIdx.x == 0;  // the bookkeeping block; the others copy rows
  // loads issued up front so that their latency overlaps the first phase: the per-request scalars of
  // this thread's first request, and (block 0, <= 4 slots a thread) the cache slots the free-slot
  // compaction of the end may need
  const int64_t L_pre = tid < B ? seq_lens[tid] : 0, pool_pre = tid < B ? pool[tid] : 0;
  const int32_t fin_pre = tid < B ? finish[tid] : 0;
  const int64_t ev_c = (BQ + nt - 1) / nt;
  const int64_t ev_s0 = (int64_t)tid * ev_c, ev_s1 = ev_s0 + ev_c < BQ ? ev_s0 + ev_c : BQ;
  constexpr int NPRE = 4;
  const bool ocl_pre_ok = blk0 && ev_c <= NPRE;
  int64_t ocl_pre[NPRE];
#pragma unroll
  for (int u = 0; u < NPRE; ++u) ocl_pre[u] = (ocl_pre_ok && ev_s0 + u < ev_s1) ? ocl[ev_s0 + u] : 0;
  // accepted rows, and (one parallel round of loads) what every accepted entry needs
  for (int64_t e = tid; e < BS; e += nt) {
    const int b = (int)e / S, j = (int)e - b * S;  // B*S < 2^21 (host check)
    int32_t v = acc_idx[e];
    const int32_t fp = finish[b];
    if (fp >= 0 && j > fp) v = -1;
    row[e] = v;
    if (blk0) {
      const bool pok = v >= 0 && v < BQ;
      s_pred[e] = pok ? predicts[v] : -1;
      s_ocl[e] = pok ? ocl[v] : 0;
      s_vn[e] = (pok && vnode) ? vnode[v] : -1;
    }
  }
  if (blk0) {
    for (int64_t w = tid; w < (BQ + 31) / 32; w += nt) bm[w] = 0u;
    for (int b = tid; b < B; b += nt) {
      s_L[b] = b == tid ? L_pre : seq_lens[b];
      s_pb[b] = b == tid ? pool_pre : pool[b];
    }
  }
  __syncthreads();
  // the three exclusive prefix sums (accepted entries, the same over unfinished requests, rank
  // among unfinished) in one block scan: three 21-bit fields of one int64 (every total <= B*S < 2^21)
  constexpr int64_t F21 = (1ll << 21) - 1;
  int64_t Nacc, Nunf, U;
  if (B <= 32) {
    // one warp: counts and their scan by shuffles (integer sums: the block scan's values), one block
    // barrier instead of the block scan path's five
    if (tid < 32) {
      long long v = 0;
      if (tid < B) {
        long long cnt = 0;
        for (int j = 0; j < S; ++j) cnt += row[(int64_t)tid * S + j] != -1;
        const bool unf = fin_pre < 0;
        v = cnt | ((unf ? cnt : 0ll) << 21) | ((unf ? 1ll : 0ll) << 42);
      }
      long long inc = v;
      for (int o = 1; o < B; o <<= 1) {  // lanes >= B add nothing: ceil(log2 B) levels suffice for lanes < B
        const long long u = __shfl_up_sync(FULL, inc, o);
        if (tid >= o) inc += u;
      }
      const long long ex = inc - v;
      if (tid < B) { accp[tid] = ex & F21; unfp[tid] = (ex >> 21) & F21; urank[tid] = ex >> 42; }
      if (tid == B - 1) { accp[B] = inc & F21; unfp[B] = (inc >> 21) & F21; urank[B] = inc >> 42; }
    }
    __syncthreads();
    Nacc = accp[B]; Nunf = unfp[B]; U = urank[B];
  } else {
    for (int b = tid; b < B; b += nt) {
      int64_t cnt = 0;
      for (int j = 0; j < S; ++j) cnt += row[(int64_t)b * S + j] != -1;
      const bool unf = (b == tid ? fin_pre : finish[b]) < 0;
      accp[b] = cnt | ((unf ? cnt : 0ll) << 21) | ((unf ? 1ll : 0ll) << 42);
    }
    __syncthreads();
    const int64_t tot3 = block_exclusive_scan<int64_t>(accp, B, wbuf);
    for (int b = tid; b <= B; b += nt) {
      const int64_t v = b < B ? accp[b] : tot3;
      accp[b] = v & F21;
      unfp[b] = (v >> 21) & F21;
      urank[b] = v >> 42;
    }
    __syncthreads();
    Nacc = tot3 & F21; Nunf = (tot3 >> 21) & F21; U = tot3 >> 42;
  }
  // compacted rows, one thread per accepted entry (its place k among its row's accepted entries from the
  // row in shared memory), so no thread walks a request's S entries in turn while the block waits
  for (int64_t e = tid; e < BS; e += nt) {
    const int32_t p = row[e];
    if (p == -1) continue;
    const int b = (int)e / S, j = (int)e - b * S;
    int64_t k = 0;
    for (int i = 0; i < j; ++i) k += row[(int64_t)b * S + i] != -1;
    const bool unf = urank[b + 1] > urank[b];  // urank: exclusive prefix of the unfinished flags
    if (!blk0) {
      if (unf) src[unfp[b] + k] = p;
      continue;
    }
    const bool pok = p >= 0 && p < BQ;
    const int64_t L = s_L[b], pb = s_pb[b], f = accp[b] + k;
    const int32_t pred = s_pred[e];
    o.acc_flat[f] = p;
    o.verified[f] = pred;
    if (o.acc_node) o.acc_node[f] = s_vn[e];
    if (pok) atomicOr(&bm[p >> 5], 1u << (p & 31));
    if (pb >= 0 && pb < P && L + k >= 0 && L + k < Smax && pok) r2t[pb * Smax + L + k] = (int32_t)s_ocl[e];
    if (unf) {
      const int64_t m = unfp[b] + k;
      o.next_vid[m] = pred;
      o.next_pos[m] = L + k;
    }
  }
  // per request: its counts and its last accepted entry
  for (int b = tid; blk0 && b < B; b += nt) {
    const bool unf = urank[b + 1] > urank[b];
    const int64_t L = s_L[b], pb = s_pb[b];
    int32_t lastpos = -1, lastpred = -1;
    for (int j = S - 1; j >= 0; --j) {
      const int64_t e = (int64_t)b * S + j;
      if (row[e] != -1) { lastpos = row[e]; lastpred = s_pred[e]; break; }
    }
    const int64_t cnt = accp[b + 1] - accp[b];
    o.acc_len_out[b] = (int32_t)(cnt - 1);
    o.seq_out[b] = L + cnt;
    if (unf) {
      const int64_t u = urank[b];
      o.unf_index[u] = b;
      o.next_len[u] = (int32_t)(cnt - 1);
      o.next_indptr[u] = (int32_t)unfp[b];
      o.next_seq[u] = L + cnt;
      o.next_pool[u] = pb;
      o.next_root[u] = (lastpos >= 0 && lastpos < BQ) ? lastpred : -1;
      o.next_last[u] = lastpos;
    }
  }
  if (blk0) {
    for (int64_t e = tid; e < BS; e += nt) o.acc_out[e] = row[e];
    for (int b = tid; b <= B; b += nt) o.acc_indptr[b] = (int32_t)accp[b];
    for (int64_t f = Nacc + tid; f < BS; f += nt) {
      o.acc_flat[f] = -1;
      o.verified[f] = -1;
      if (o.acc_node) o.acc_node[f] = -1;
    }
    for (int64_t m = Nunf + tid; m < BS; m += nt) { o.next_vid[m] = -1; o.next_pos[m] = -1; }
    for (int64_t u = U + tid; u < B; u += nt) {
      o.unf_index[u] = -1; o.next_len[u] = -1; o.next_seq[u] = -1; o.next_pool[u] = -1;
      o.next_root[u] = -1; o.next_last[u] = -1;
    }
    if (tid == 0) { o.next_indptr[U] = (int32_t)Nunf; o.unf_count[0] = (int32_t)U; }
    for (int64_t u = U + 1 + tid; u <= B; u += nt) o.next_indptr[u] = -1;
  }
  __syncthreads();
  if (blk0) {
    // evict mask and free-slot compaction (ascending p)
    const int64_t c = (BQ + nt - 1) / nt;
    const int64_t s0 = (int64_t)tid * c, s1 = s0 + c < BQ ? s0 + c : BQ;
    int64_t cnt = 0;
    for (int64_t p = s0; p < s1; ++p) {
      const bool ev = !((bm[p >> 5] >> (p & 31)) & 1u);
      o.evict[p] = ev ? 1 : 0;
      cnt += ev;
    }
    // exclusive scan of the per-thread counts: shuffles within each warp, the warps' totals through
    // shared memory (one block barrier)
    __shared__ long long wev[32];
    long long inc = cnt;
    if (BQ <= nt) {  // at most one slot a thread: the warp's inclusive count from one ballot
      inc = __popc(__ballot_sync(FULL, cnt != 0) & (0xffffffffu >> (31 - (tid & 31))));
    } else {
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const long long u = __shfl_up_sync(FULL, inc, o);
        if ((tid & 31) >= o) inc += u;
      }
    }
    if ((tid & 31) == 31) wev[tid >> 5] = inc;
    __syncthreads();
    long long before = 0, nev = 0;
    for (int i = 0; i < (nt >> 5); ++i) {
      const long long v = wev[i];
      if (i < (tid >> 5)) before += v;
      nev += v;
    }
    int64_t w = before + inc - cnt;
    for (int64_t p0 = s0; p0 < s1; p0 += 8) {  // 8 slot loads in flight before the stores
      int64_t v[8];
      bool ev[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int64_t p = p0 + u;
        ev[u] = p < s1 && !((bm[p >> 5] >> (p & 31)) & 1u);
        // ocl_pre_ok: one pass (p0 == s0) over <= NPRE slots
        v[u] = ev[u] ? ((u < NPRE && ocl_pre_ok) ? ocl_pre[u % NPRE] : ocl[p]) : 0;
      }
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (ev[u]) o.free_slots[w++] = v[u];
    }
    for (int64_t f = nev + tid; f < BQ; f += nt) o.free_slots[f] = -1;
  }
  // next_hidden rows [0, N_unf): blocks 1.. (block 0 has none)
  for (int64_t m = (int64_t)blockIdx.x - 1; !blk0 && m < Nunf; m += gridDim.x - 1) {
    const int32_t p = src[m];
    if (p >= 0 && p < BQ) copy_row<VT>(hidden + (int64_t)p * row_units, next_hidden + m * row_units, row_units, tid, nt);
  }
}

void update_verify_result(
    at::Tensor accept_index, at::Tensor accept_length, at::Tensor predicts, at::Tensor finish_pos, at::Tensor seq_lens,
    at::Tensor req_pool_indices, at::Tensor req_to_token, at::Tensor out_cache_loc, at::Tensor hidden_states,
    std::optional<at::Tensor> verify_node_ids, int64_t B, int64_t Q, int64_t S, int64_t H, int64_t S_max,
    at::Tensor accept_index_out, at::Tensor accept_length_out, at::Tensor accept_indptr, at::Tensor accepted_flat,
    at::Tensor verified_id, at::Tensor evict_mask, at::Tensor free_slots, at::Tensor seq_lens_out,
    std::optional<at::Tensor> accepted_node_ids, at::Tensor unfinished_count, at::Tensor unfinished_index,
    at::Tensor next_accept_length, at::Tensor next_indptr, at::Tensor next_verified_id, at::Tensor next_hidden,
    at::Tensor next_positions, at::Tensor next_seq_lens, at::Tensor next_req_pool_indices, at::Tensor next_root_token,
    at::Tensor next_last_flat) {
  E4_PRE(B >= 1 && Q >= 1 && S >= 1 && H >= 1 && S_max >= 1, "B, Q, S, H, S_max must be >= 1, got ", B, ", ",
         Q, ", ", S, ", ", H, ", ", S_max);
  check_tensor(accept_index, "accept_index", at::kInt, {B, S});
  check_tensor(accept_length, "accept_length", at::kInt, {B});
  check_tensor(predicts, "predicts", at::kInt, {B * Q});
  check_tensor(finish_pos, "finish_pos", at::kInt, {B});
  check_tensor(seq_lens, "seq_lens", at::kLong, {B});
  check_tensor(req_pool_indices, "req_pool_indices", at::kLong, {B});
  E4_VALUE(req_to_token.dim() == 2, "req_to_token must be [P, S_max]");
  check_tensor(req_to_token, "req_to_token", at::kInt, {-1, S_max});
  check_tensor(out_cache_loc, "out_cache_loc", at::kLong, {B * Q});
  check_hidden_dtype(hidden_states, "hidden_states");
  const auto ht = hidden_states.scalar_type();
  check_tensor(hidden_states, "hidden_states", ht, {B * Q, H});
  const bool with_nodes = has(verify_node_ids);
  if (with_nodes) {
    check_tensor(*verify_node_ids, "verify_node_ids", at::kLong, {B, Q});
    E4_PRE(has(accepted_node_ids), "accepted_node_ids is required when verify_node_ids is given");
    check_tensor(*accepted_node_ids, "accepted_node_ids", at::kLong, {B * S});
  }
  check_tensor(accept_index_out, "accept_index_out", at::kInt, {B, S});
  check_tensor(accept_length_out, "accept_length_out", at::kInt, {B});
  check_tensor(accept_indptr, "accept_indptr", at::kInt, {B + 1});
  check_tensor(accepted_flat, "accepted_flat", at::kInt, {B * S});
  check_tensor(verified_id, "verified_id", at::kInt, {B * S});
  check_tensor(evict_mask, "evict_mask", at::kBool, {B * Q});
  check_tensor(free_slots, "free_slots", at::kLong, {B * Q});
  check_tensor(seq_lens_out, "seq_lens_out", at::kLong, {B});
  check_tensor(unfinished_count, "unfinished_count", at::kInt, {1});
  check_tensor(unfinished_index, "unfinished_index", at::kLong, {B});
  check_tensor(next_accept_length, "next_accept_length", at::kInt, {B});
  check_tensor(next_indptr, "next_indptr", at::kInt, {B + 1});
  check_tensor(next_verified_id, "next_verified_id", at::kInt, {B * S});
  check_tensor(next_hidden, "next_hidden", ht, {B * S, H});
  check_tensor(next_positions, "next_positions", at::kLong, {B * S});
  check_tensor(next_seq_lens, "next_seq_lens", at::kLong, {B});
  check_tensor(next_req_pool_indices, "next_req_pool_indices", at::kLong, {B});
  check_tensor(next_root_token, "next_root_token", at::kInt, {B});
  check_tensor(next_last_flat, "next_last_flat", at::kInt, {B});
  const c10::cuda::CUDAGuard guard(accept_index.device());
  auto stream = c10::cuda::getCurrentCUDAStream();
  const int64_t BS = B * S, BQ = B * Q;
  const size_t smem = (size_t)(33 + 3 * (B + 1) + 2 * B) * 8 + (size_t)BS * 8 + 4 + (size_t)BS * 20 +
                     (size_t)((BQ + 31) / 32) * 4;
  E4_CHECK(smem <= 200 * 1024, "update_verify_result: B*S / B*Q too large for shared memory");
  E4_CHECK(BS < (1ll << 21), "update_verify_result: B*S >= 2^21 not supported");
  const unsigned nblk = 1 + (unsigned)std::max<int64_t>(1, std::min<int64_t>(BS, 2048));  // bookkeeping + copies
  K7Out o;
  o.acc_out = ptr<int32_t>(accept_index_out); o.acc_len_out = ptr<int32_t>(accept_length_out);
  o.acc_indptr = ptr<int32_t>(accept_indptr); o.acc_flat = ptr<int32_t>(accepted_flat);
  o.verified = ptr<int32_t>(verified_id); o.evict = ptr<uint8_t>(evict_mask);
  o.free_slots = ptr<int64_t>(free_slots); o.seq_out = ptr<int64_t>(seq_lens_out);
  o.acc_node = with_nodes ? ptr<int64_t>(*accepted_node_ids) : nullptr;
  o.unf_count = ptr<int32_t>(unfinished_count); o.unf_index = ptr<int64_t>(unfinished_index);
  o.next_len = ptr<int32_t>(next_accept_length); o.next_indptr = ptr<int32_t>(next_indptr);
  o.next_vid = ptr<int32_t>(next_verified_id); o.next_pos = ptr<int64_t>(next_positions);
  o.next_seq = ptr<int64_t>(next_seq_lens); o.next_pool = ptr<int64_t>(next_req_pool_indices);
  o.next_root = ptr<int32_t>(next_root_token); o.next_last = ptr<int32_t>(next_last_flat);
  const int64_t row_bytes = H * hidden_states.element_size();
  dispatch_units(row_bytes, {hidden_states.data_ptr(), next_hidden.data_ptr()}, [&](auto unit, int64_t ub) {
    using VT = decltype(unit);
    auto k = k7_kernel<VT>;
    if (smem > 48 * 1024)
      E4_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    launch_ex(k, dim3(nblk), dim3(256), smem, 0, stream,
        ptr<int32_t>(accept_index), ptr<int32_t>(predicts), ptr<int32_t>(finish_pos), ptr<int64_t>(seq_lens),
        ptr<int64_t>(req_pool_indices), ptr<int32_t>(req_to_token), req_to_token.size(0), ptr<int64_t>(out_cache_loc),
        ptr<VT>(hidden_states), with_nodes ? ptr<int64_t>(*verify_node_ids) : nullptr, (int)B, (int)Q, (int)S, S_max,
        row_bytes / ub, ptr<VT>(next_hidden), o);
  });
  E4_CUDA_CHECK(cudaGetLastError());
}


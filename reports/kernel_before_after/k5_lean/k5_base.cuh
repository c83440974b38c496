static constexpr unsigned FULL = 0xffffffffu;

// Programmatic dependent launch (sm_90; every op's kernel is launched with programmatic stream
// serialization, see launch_ex). Each kernel begins with griddepcontrol.wait, which returns once the
// previous kernel of the stream has completed and its memory is visible, so nothing is read or
// written earlier than with a plain launch; then launch_dependents lets the next kernel of the
// stream be launched now: its launch and block scheduling overlap this kernel instead of following
// its completion. Without a programmatic predecessor the wait returns at once.
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ __forceinline__ void pdl_begin() {
  pdl_wait();
  pdl_trigger();
}

// Development probe (E4_TRACE builds only, e.g. a copy of this file with it defined first): thread 0 of
// each block stamps its SM clock at point i of a kernel (the K6 kernels' phases), read by _trace_dump().
#ifdef E4_TRACE
__device__ long long g_e4_trace[4096][8];
#define E4_T(i)                                                                            \
  do {                                                                                     \
    const int e4b_ = (int)(blockIdx.y * gridDim.x + blockIdx.x);                           \
    if (threadIdx.x == 0 && e4b_ < 4096) g_e4_trace[e4b_][i] = clock64();                   \
  } while (0)
#else
#define E4_T(i) \
  do {          \
  } while (0)
#endif

// The two halves of a cluster barrier (cluster.sync() is arrive + wait). A block that has finished
// reading other blocks' shared memory arrives at once and waits only before it exits (a block's
// shared memory must outlive the cluster's DSMEM reads of it), so the barrier's latency overlaps the
// block's remaining work instead of following it. Every thread of the block executes both, in step.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
// The arrival of an exchange whose DSMEM stores all come from warp 0 (K5's one-round reduction, K6's
// exchanges): release from warp 0 only, relaxed from the warps that stored nothing the barrier must
// publish. Each warp's release fence costs: 0.1-0.2 us of a B = 1 launch on the H100 against every warp
// releasing (reports/kernel_before_after/xchg/, variant c2).
__device__ __forceinline__ void cluster_arrive_warp0_release() {
  if ((threadIdx.x >> 5) == 0)
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  else
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

// L2 eviction-priority helpers (sm_80+ policies, sm_90 bulk prefetch): an L2 policy of evict_normal for the
// lines an access touches; one 16-byte load under a policy; an asynchronous bulk prefetch of `bytes` (a
// multiple of 16, from a 16-byte aligned address) into L2, the lines marked evict_last.
__device__ __forceinline__ uint64_t l2_policy_evict_normal() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ float4 ld_f4_l2_policy(const float* p, uint64_t policy) {
  float4 v;
  asm volatile("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p), "l"(policy));
  return v;
}
__device__ __forceinline__ void l2_prefetch_evict_last(const float* p, uint32_t bytes) {
  uint64_t last;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(last));
  asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(p), "r"(bytes), "l"(last)
               : "memory");
}
__device__ __forceinline__ bool amax_better(float va, int64_t ia, float vb, int64_t ib) {
  const bool na = isnan(va), nb = isnan(vb);
  if (na || nb) {
    if (na && nb) return ia < ib;
    return na;
  }
  if (va > vb) return true;
  if (va == vb) return ia < ib;
  return false;
}

// max of x that propagates NaN (KERNELS.md §5.4 step 4: a NaN x gives a NaN row): once a NaN is
// seen it stays; otherwise the larger value or a NaN candidate wins.
__device__ __forceinline__ float nan_max(float m, float x) { return (x > m || (isnan(x) && !isnan(m))) ? x : m; }

// Warp reductions to lane 0 (shuffle-down tree, a fixed association), shared by K5's two kernels
// and K6: (max, argmax value, argmax index), argmax alone, and the f32 sum of one value per lane.
__device__ __forceinline__ void warp_max_argmax(float& m, float& av, long long& ai) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_down_sync(FULL, m, o);
    const float oav = __shfl_down_sync(FULL, av, o);
    const long long oai = __shfl_down_sync(FULL, ai, o);
    m = nan_max(m, om);
    if (amax_better(oav, oai, av, ai)) { av = oav; ai = oai; }
  }
}

__device__ __forceinline__ void warp_argmax(float& av, long long& ai) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float oav = __shfl_down_sync(FULL, av, o);
    const long long oai = __shfl_down_sync(FULL, ai, o);
    if (amax_better(oav, oai, av, ai)) { av = oav; ai = oai; }
  }
}

__device__ __forceinline__ float warp_sum_rn(float s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s = __fadd_rn(s, __shfl_down_sync(FULL, s, o));
  return s;
}
// K5 convert_logits_to_probas (§5): one cluster of CS blocks per row; the row chunk of each block
// stays in shared memory, so the logits are read from HBM once and the probas written once.

template <typename T> __device__ __forceinline__ float to_f(T v);
template <> __device__ __forceinline__ float to_f<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

// VEC elements of T per 16-byte load (4 for f32, 8 for 16-bit)
template <typename T, int VEC>
__device__ __forceinline__ void load_vec(const T* p, float* out) {
  if constexpr (VEC == 1) {
    out[0] = to_f<T>(p[0]);
  } else {
    uint4 raw = *reinterpret_cast<const uint4*>(p);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = to_f<T>(e[i]);
  }
}

// exp(d) for d = x - m <= 0 (or NaN) of K5's sampling rows: the SFU's exp2 of d * log2(e) (__expf).
// Its error is at most 2 + 1.16|d| ulp, i.e. below 6.2e-6 relative down to d = -87.3, where exp(d)
// reaches the smallest normal; below that it flushes to 0 (true value < 1.2e-38). Probas are TOL
// (§5.5: rtol 5e-5, atol 1e-10), and the full-precision expf made K5 issue-bound at large V (Nsight
// Compute: 78 instructions per logit, issue slots 63% busy beside 62% of DRAM bandwidth). NaN and
// -inf map as expf maps them (NaN, 0), so §5.4 step 4's NaN rows are kept.
__device__ __forceinline__ float k5_exp(float d) { return __expf(d); }

struct K5Stats {
  float m;        // block max of x (NaN-propagating)
  float s;        // block sum of exp
  float av;       // argmax value (raw logit)
  long long ai;   // argmax index
};

// Block (then, CS > 1, cluster) reduction of K5's per-thread (NaN-propagating max m, argmax of the logits): each
// warp, then warp 0 over the warps, then warp 0 over the cluster's blocks (lane k reads block k's
// stats through DSMEM, in parallel). rf/rv/ri: 32-entry shared scratch. On return (after a block
// barrier) s_m and s_ai hold the row's values in every block.
__device__ __forceinline__ void k5_reduce_stats(cg::cluster_group& cluster, int CS, float m, float av, long long ai,
                                                float* rf, float* rv, long long* ri, K5Stats& st, float& s_m,
                                                long long& s_ai) {
  const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5, nw = (int)(blockDim.x >> 5);
  warp_max_argmax(m, av, ai);
  if (lane == 0) { rf[wid] = m; rv[wid] = av; ri[wid] = ai; }
  __syncthreads();
  if (wid == 0) {
    float bm = lane < nw ? rf[lane] : -INFINITY, bav = lane < nw ? rv[lane] : -INFINITY;
    long long bai = lane < nw ? ri[lane] : LLONG_MAX;
    warp_max_argmax(bm, bav, bai);
    if (lane == 0) { st.m = bm; st.av = bav; st.ai = bai; st.s = 0.0f; s_m = bm; s_ai = bai; }
  }
  if (CS > 1) {
    cluster.sync();
    if (wid == 0) {
      float gm = -INFINITY, gav = -INFINITY;
      long long gai = LLONG_MAX;
      if (lane < CS) {
        const K5Stats* o = cluster.map_shared_rank(&st, lane);
        gm = o->m; gav = o->av; gai = o->ai;
      }
      warp_max_argmax(gm, gav, gai);
      if (lane == 0) { s_m = gm; s_ai = gai; }
    }
  }
  __syncthreads();
}

// The row's exp-sum from one partial sum per thread (>= 32 partial sums per row, §5.4: any fixed
// association): warp trees, a tree over the warps, then over the cluster's blocks. Returns it in
// every thread.
__device__ __forceinline__ float k5_reduce_sum(cg::cluster_group& cluster, int CS, float part, float* rf,
                                               K5Stats& st, float& s_s) {
  const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5, nw = (int)(blockDim.x >> 5);
  part = warp_sum_rn(part);
  if (lane == 0) rf[wid] = part;
  __syncthreads();
  if (wid == 0) {
    const float bs = warp_sum_rn(lane < nw ? rf[lane] : 0.0f);
    if (lane == 0) { st.s = bs; s_s = bs; }
  }
  if (CS > 1) {
    cluster.sync();
    if (wid == 0) {
      const float gs = warp_sum_rn(lane < CS ? cluster.map_shared_rank(&st, lane)->s : 0.0f);
      if (lane == 0) s_s = gs;
    }
  }
  __syncthreads();
  return s_s;
}

// K5's one-round form: each thread's (max of x, exp-sum against that max, argmax) merged in one reduction
// instead of a max reduction followed by a sum reduction. Merge of two partials: the larger max, each sum
// rescaled to it by exp(m - M) (a partial of sum 0, e.g. a thread whose entries are all -inf, adds 0; NaN
// and +inf give a NaN sum as in the two-round form). The merge is commutative, so an xor butterfly leaves
// the same value in every lane. The sum is §5.4's row sum in another association with each term's exp
// split in two factors: its error bound is the comment's above k5_exp with two more ulp per merge level
// (at most 16: a thread's batches, its warp, its block's warps, the cluster's blocks), far inside the
// probas' TOL; the argmax is exact (same order, same result).
struct K5Part {
  float m;   // max of x (NaN-propagating via s)
  float s;   // sum of exp(x - m)
  float av;  // argmax value (raw logit)
  int ai;    // argmax index (V < 2^31; INT_MAX: none)
};

__device__ __forceinline__ void k5_merge_ms(float& m, float& s, float om, float os) {
  const float M = fmaxf(m, om);
  const float x = s == 0.0f ? 0.0f : __fmul_rn(s, k5_exp(__fsub_rn(m, M)));
  const float y = os == 0.0f ? 0.0f : __fmul_rn(os, k5_exp(__fsub_rn(om, M)));
  m = M;
  s = __fadd_rn(x, y);
}

__device__ __forceinline__ void k5_merge(K5Part& a, float om, float os, float oav, int oai) {
  k5_merge_ms(a.m, a.s, om, os);
  if (amax_better(oav, oai, a.av, a.ai)) { a.av = oav; a.ai = oai; }
}

// xor butterfly over groups of `width` lanes (a power of two <= 32): every lane ends with its group's merge
__device__ __forceinline__ void k5_warp_merge(K5Part& a, int width = 32) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    if (o < width)
      k5_merge(a, __shfl_xor_sync(FULL, a.m, o), __shfl_xor_sync(FULL, a.s, o), __shfl_xor_sync(FULL, a.av, o),
               __shfl_xor_sync(FULL, a.ai, o));
}

// n partials p[0..n) (n <= 32) merged in every lane: lane l takes p[l mod P] (P: the power of two >= n;
// entries past n are empty), so each group of P lanes holds all of them and log2(P) butterfly levels suffice.
__device__ __forceinline__ K5Part k5_merge_n(const K5Part* p, int n) {
  const int P = n <= 1 ? 1 : 1 << (32 - __clz(n - 1));
  const int j = (threadIdx.x & 31) & (P - 1);
  K5Part a = j < n ? p[j] : K5Part{-INFINITY, 0.0f, -INFINITY, INT_MAX};
  k5_warp_merge(a, P);
  return a;
}

// The row's merged partials in every thread: warps, the block's warps (every warp merges them, one block
// barrier), then (CS > 1) the cluster's blocks: warp 0 pushes the block's partial into every block's
// xs[rank] (DSMEM stores), one cluster barrier, and every warp merges xs[0..CS) from its own shared
// memory, so no block reads another's after the barrier. The caller has arrived (relaxed) at a cluster
// barrier at its start; the wait here makes sure every block of the cluster runs before the stores.
__device__ __forceinline__ K5Part k5_reduce_one(int CS, int rank, K5Part a, K5Part* ws, K5Part* xs) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = (int)(blockDim.x >> 5);
  k5_warp_merge(a);
  if (lane == 0) ws[wid] = a;
  __syncthreads();
  a = k5_merge_n(ws, nw);
  if (CS > 1) {
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    if (wid == 0 && lane < CS) *cg::this_cluster().map_shared_rank(&xs[rank], lane) = a;
    cluster_arrive_warp0_release();
    cluster_wait();
    a = k5_merge_n(xs, CS);
  }
  return a;
}

// The one-round forms keep each entry as e = exp(x - mp), mp the max of x over a part of the row's entries
// that one thread holds (its partial's m; x = logit / temp, IEEE): mp = -inf (no entry above -inf) is taken
// as 0 there, so its e are exp(-inf) = 0 and its sum 0; NaN and +inf entries make the sum NaN. The output
// is e * k5_scale(mp, row): exp(mp - the row's max) / the row's sum, one factor a part, so an entry is
// exponentiated once. Against exp(x - m) / s its error is the factor's: two ulp and the exp's bound for
// d = mp - m (k5_exp) more, inside the probas' TOL. A row of -inf only gives exp(-inf + inf) = NaN, so a
// NaN row (§5.4 step 4), as does a row whose sum is NaN.
__device__ __forceinline__ float k5_rel_base(float mp) { return mp == -INFINITY ? 0.0f : mp; }
__device__ __forceinline__ float k5_scale(float mp, const K5Part& row) {
  return __fmul_rn(k5_exp(__fsub_rn(mp, row.m)), __frcp_rn(row.s));
}
// the register kernel's part: a thread's NV vectors (a.m: their max of x), e written over them, summed into a.s
template <int NV>
__device__ __forceinline__ void k5_exp_rel(float4 (&x)[NV], int64_t n, int tid, int nt, float temp, K5Part& a) {
  const float mc = k5_rel_base(a.m);
#pragma unroll
  for (int u = 0; u < NV; ++u) {
    const int64_t i = ((int64_t)u * nt + tid) * 4;
    if (i < n) {
      float* e = reinterpret_cast<float*>(&x[u]);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        e[k] = k5_exp(__fsub_rn(__fdiv_rn(e[k], temp), mc));
        a.s = __fadd_rn(a.s, e[k]);
      }
    }
  }
}

// A thread's argmax step over its entries in ascending index order (§5.4 step 1): a strict > keeps the lowest
// index on ties, and the first NaN wins; `none` marks "no entry yet".
template <typename I>
__device__ __forceinline__ void k5_amax_step(float v, I idx, float& av, I& ai, I none) {
  if (v > av || ai == none || (isnan(v) && !isnan(av))) { av = v; ai = idx; }
}

// The slice of a row that block `rank` of K5's shared-memory kernels holds: entries [v0, v0 + n) of row r,
// whose request's temperature is temp; rank 0 of a request's first row writes its is_greedy.
struct K5Slice {
  int64_t r, v0, n;
  float temp;
  bool need_exp;  // a sampling row whose probas are written
};
__device__ __forceinline__ K5Slice k5_slice(int rank, const float* __restrict__ temps, int64_t V, int G, bool wp,
                                            uint8_t* __restrict__ greedy, int64_t chunk) {
  K5Slice sl;
  sl.r = blockIdx.y;
  const int64_t b = sl.r / G;
  sl.temp = temps[b];
  const bool gr = sl.temp < 1e-6f;
  if (rank == 0 && threadIdx.x == 0 && (sl.r % G) == 0) greedy[b] = gr ? 1 : 0;
  sl.v0 = (int64_t)rank * chunk;
  const int64_t v1 = sl.v0 + chunk < V ? sl.v0 + chunk : V;
  sl.n = v1 > sl.v0 ? v1 - sl.v0 : 0;
  sl.need_exp = wp && !gr;
  return sl;
}

// U vectors of VEC entries at row + base + u * step, every load issued before any is used (memory-level
// parallelism); entries at or past n read as NaN (the callers skip them)
template <typename T, int VEC, int U, typename I>
__device__ __forceinline__ void k5_load(const T* __restrict__ row, I base, I step, I n, float (&v)[U][VEC]) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const I i = base + u * step;
    if (VEC > 1 && i + VEC <= n) {
      load_vec<T, VEC>(row + i, v[u]);
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) v[u][k] = (i + k < n) ? to_f<T>(row[i + k]) : NAN;
    }
  }
}

// VEC values to shared memory at xs + i (16-byte stores where the vector is whole), those at or past n skipped
template <int VEC, typename I>
__device__ __forceinline__ void k5_stage(float* xs, I i, I n, const float (&v)[VEC]) {
  if (VEC > 1 && i + VEC <= n) {
#pragma unroll
    for (int k = 0; k < VEC; k += 4)
      *reinterpret_cast<float4*>(xs + i + k) = make_float4(v[k], v[k + 1], v[k + 2], v[k + 3]);
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if (i + k < n) xs[i + k] = v[k];
  }
}

template <typename T, int VEC>
__global__ void __launch_bounds__(512, 3) k5_kernel(const T* __restrict__ logits, const float* __restrict__ temps,
                                                 int64_t V, int G, bool wp, float* __restrict__ probas,
                                                 int64_t* __restrict__ argmax, uint8_t* __restrict__ greedy,
                                                 int64_t chunk) {
  pdl_begin();
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int CS = (int)cluster.num_blocks();
  const int tid = threadIdx.x, nt = blockDim.x;
  extern __shared__ float xs[];
  __shared__ K5Stats st;  // this block's stats, read by the cluster through DSMEM
  __shared__ float rf[32];
  __shared__ float rv[32];
  __shared__ long long ri[32];
  __shared__ float s_m, s_s;
  __shared__ long long s_ai;

  const K5Slice sl = k5_slice(rank, temps, V, G, wp, greedy, chunk);
  const int64_t r = sl.r, v0 = sl.v0, n = sl.n;
  const float temp = sl.temp;
  const bool need_exp = sl.need_exp;
  const T* row = logits + r * V + v0;

  // pass 1 (HBM): the raw logits into shared (sampling rows); argmax of the raw logits, whose value is
  // also the max of x = logit / temp: division by a positive temp, rounded to nearest, is monotone, so
  // max_v x_v = RN(max_v logit_v / temp) and the row's m costs one division (NaN rows: NaN either way).
  // U vector loads are issued before any is used (memory-level parallelism).
  float av = -INFINITY;
  long long ai = LLONG_MAX;
  const int64_t step = (int64_t)nt * VEC;
  constexpr int U = VEC == 8 ? 2 : 4;  // vectors in flight per thread
#pragma unroll 1
  for (int64_t base = (int64_t)tid * VEC; base < n; base += U * step) {
    float v[U][VEC];
    k5_load<T, VEC, U>(row, base, step, n, v);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + u * step;
      const bool whole = VEC > 1 && i + VEC <= n;
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        if (whole || i + k < n) k5_amax_step<long long>(v[u][k], v0 + i + k, av, ai, LLONG_MAX);
      if (need_exp) k5_stage<VEC>(xs, i, n, v[u]);
    }
  }
  k5_reduce_stats(cluster, CS, av, av, ai, rf, rv, ri, st, s_m, s_ai);
  if (rank == 0 && tid == 0) argmax[r] = (int64_t)s_ai;
  float* out = probas + r * V + v0;
  if (need_exp) {
    const float gm = __fdiv_rn(s_m, temp);  // m = max of x (above)
    float part = 0.0f;  // one partial sum per thread: 512*CS >= 16 partial sums
    const bool vec4 = VEC > 1 && (n & 3) == 0;
    if (vec4) {
      for (int64_t i = (int64_t)tid * 4; i < n; i += (int64_t)nt * 4) {
        float4 e4 = *reinterpret_cast<const float4*>(xs + i);
        e4.x = k5_exp(__fsub_rn(__fdiv_rn(e4.x, temp), gm));
        e4.y = k5_exp(__fsub_rn(__fdiv_rn(e4.y, temp), gm));
        e4.z = k5_exp(__fsub_rn(__fdiv_rn(e4.z, temp), gm));
        e4.w = k5_exp(__fsub_rn(__fdiv_rn(e4.w, temp), gm));
        part = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(part, e4.x), e4.y), e4.z), e4.w);
        *reinterpret_cast<float4*>(xs + i) = e4;
      }
    } else {
      for (int64_t i = tid; i < n; i += nt) {
        const float e = k5_exp(__fsub_rn(__fdiv_rn(xs[i], temp), gm));
        xs[i] = e;
        part = __fadd_rn(part, e);
      }
    }
    // e_v / s as e_v * (1 / s): probas are TOL (§5.5, rtol 5e-5); this is within 2 ulp of the
    // quotient and saves an IEEE division per element (s is in [1, V] or NaN)
    const float inv = __frcp_rn(k5_reduce_sum(cluster, CS, part, rf, st, s_s));
    if (CS > 1) cluster_arrive();  // this block's DSMEM reads are over (k5_reduce_sum ends with a block barrier)
    if (vec4) {
      for (int64_t i = (int64_t)tid * 4; i < n; i += (int64_t)nt * 4) {
        float4 o4 = *reinterpret_cast<const float4*>(xs + i);
        o4.x = __fmul_rn(o4.x, inv);
        o4.y = __fmul_rn(o4.y, inv);
        o4.z = __fmul_rn(o4.z, inv);
        o4.w = __fmul_rn(o4.w, inv);
        __stcs(reinterpret_cast<float4*>(out + i), o4);
      }
    } else {
      for (int64_t i = tid; i < n; i += nt) out[i] = __fmul_rn(xs[i], inv);
    }
  } else {
    if (CS > 1) cluster_arrive();  // DSMEM reads over (k5_reduce_stats ends with a block barrier)
  }
  if (!need_exp && wp) {  // greedy row: one-hot at the argmax
    const long long am = s_ai;
    if ((V & 3) == 0) {
      for (int64_t i = (int64_t)tid * 4; i < n; i += (int64_t)nt * 4) {
        const long long g = v0 + i;
        float4 o4 = make_float4(g == am ? 1.f : 0.f, g + 1 == am ? 1.f : 0.f, g + 2 == am ? 1.f : 0.f,
                                g + 3 == am ? 1.f : 0.f);
        *reinterpret_cast<float4*>(out + i) = o4;
      }
    } else {
      for (int64_t i = tid; i < n; i += nt) out[i] = (v0 + i == am) ? 1.f : 0.f;
    }
  }
  if (CS > 1) cluster_wait();  // no block leaves while another may still read its shared memory
}

// The shared-memory kernel in one reduction round (k5_reduce_one) for slices of <= K5S_NB batches a thread:
// each thread takes its entries of the block's slice in batches of 16 (a batch: 16 * blockDim entries), and
// as it loads a batch it turns it into e = exp(x - the batch's max of x) (k5_rel_base), written to shared
// memory; its partial is its batches' (max, exp-sum) merged. After the row's merge the output pass writes
// e * k5_scale(the batch's max, row), one factor a batch. So an entry is divided and exponentiated once,
// shared memory is written once and read once, and the cluster is crossed once (the two-round kernel:
// two exchanges and a second pass over shared memory between them).
constexpr int K5S_NB = 4;
template <typename T, int VEC>
__global__ void __launch_bounds__(512, 3) k5s1_kernel(const T* __restrict__ logits, const float* __restrict__ temps,
                                                   int64_t V, int G, bool wp, float* __restrict__ probas,
                                                   int64_t* __restrict__ argmax, uint8_t* __restrict__ greedy,
                                                   int64_t chunk) {
  pdl_begin();
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int CS = (int)cluster.num_blocks();
  if (CS > 1) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");  // see k5_reduce_one
  const int tid = threadIdx.x, nt = blockDim.x;
  extern __shared__ float xs[];
  __shared__ K5Part ws1[16], xs1[16];  // the warps' and the cluster's partials

  const K5Slice sl = k5_slice(rank, temps, V, G, wp, greedy, chunk);
  const int64_t r = sl.r, v0 = sl.v0;
  const int n = (int)sl.n;    // a slice fits in shared memory: 32-bit offsets
  const int iv0 = (int)v0;    // V < 2^31 (K5Part's index)
  const float temp = sl.temp;
  const bool need_exp = sl.need_exp;
  const T* row = logits + r * V + v0;
  constexpr int U = 16 / VEC;  // vectors a batch, all in flight before any is used
  const int step = nt * VEC, span = U * step;

  K5Part a{-INFINITY, 0.0f, -INFINITY, INT_MAX};  // argmax of the raw logits: per-thread indices ascend
  float* mb = xs + chunk;  // each batch's max of x, mb[j * nt + tid] (dynamic shared memory past the slice:
                           // in registers it spilled)
#pragma unroll 1
  for (int j = 0; j < K5S_NB; ++j) {
    const int base = tid * VEC + j * span;
    if (base >= n) break;
    float v[U][VEC];
    k5_load<T, VEC, U>(row, base, step, n, v);
    float bm = -INFINITY;  // the batch's max of the raw logits (a NaN makes the sum NaN below)
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = base + u * step;
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        if (i + k < n) {
          k5_amax_step<int>(v[u][k], iv0 + i + k, a.av, a.ai, INT_MAX);
          bm = fmaxf(bm, v[u][k]);
        }
      }
    }
    if (need_exp) {
      // the batch's max of x is RN(bm / temp): division by a positive temp, rounded to nearest, is monotone
      const float mj = __fdiv_rn(bm, temp), mc = k5_rel_base(mj);
      float sj = 0.0f;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = base + u * step;
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          if (i + k < n) {
            v[u][k] = k5_exp(__fsub_rn(__fdiv_rn(v[u][k], temp), mc));
            sj = __fadd_rn(sj, v[u][k]);
          }
        }
        k5_stage<VEC>(xs, i, n, v[u]);
      }
      mb[j * nt + tid] = mj;
      k5_merge_ms(a.m, a.s, mj, sj);
    }
  }
  const K5Part one = k5_reduce_one(CS, rank, a, ws1, xs1);
  if (rank == 0 && tid == 0) argmax[r] = (int64_t)one.ai;
  float* out = probas + r * V + v0;
  if (need_exp) {
#pragma unroll 1
    for (int j = 0; j < K5S_NB; ++j) {
      const int base = tid * VEC + j * span;
      if (base >= n) break;
      const float f = k5_scale(mb[j * nt + tid], one);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = base + u * step;
        if (VEC > 1 && i + VEC <= n) {
#pragma unroll
          for (int k = 0; k < VEC; k += 4) {
            float4 o4 = *reinterpret_cast<const float4*>(xs + i + k);
            o4.x = __fmul_rn(o4.x, f);
            o4.y = __fmul_rn(o4.y, f);
            o4.z = __fmul_rn(o4.z, f);
            o4.w = __fmul_rn(o4.w, f);
            __stcs(reinterpret_cast<float4*>(out + i + k), o4);
          }
        } else {
#pragma unroll
          for (int k = 0; k < VEC; ++k)
            if (i + k < n) out[i + k] = __fmul_rn(xs[i + k], f);
        }
      }
    }
  } else if (wp) {  // greedy row: one-hot at the argmax
    const long long am = one.ai;
    for (int i = tid; i < n; i += nt) out[i] = (iv0 + i == am) ? 1.f : 0.f;
  }
  // after the exchange no block touches another's shared memory (k5_reduce_one)
}

// K5 register-resident variant (f32 logits, 16-byte aligned rows, V % 4 == 0): every thread keeps
// NV float4 vectors of its block's slice in registers, so the row is read from HBM once, reduced
// (max/argmax, then the exp-sum) and written once, with no shared-memory staging of the row.
// One block (CS == 1) or one thread-block cluster of CS blocks (DSMEM exchange) per row; the host
// picks CS and the block size so that small-V many-row launches keep whole rows per block and
// large-V few-row launches spread a row over up to 16 SMs. ONE: the one-round reduction (k5_reduce_one)
// instead of the max reduction and the sum reduction, the registers holding e = exp(x - the thread's max)
// (k5_exp_rel) in between; two rounds: only through the sweep's hook (k5r_launch).
// PF: before it reduces, the block asks L2 for the same slice of the row pf rows on (one bulk prefetch, marked
// evict_last so that the rows' other traffic does not evict it before its block loads it), and loads its own
// slice marked evict_normal: that load takes the mark off again (k5_l2_prefetch/: evict_last lines the loads
// left marked stayed in L2 through later kernels). Rows before pf_from do not prefetch: the GPU's first wave
// holds rows 0 .. pf_from + pf - 1 at once, and a prefetch landing after its row's own load would leave the
// mark on; from there on the row pf rows on starts only after pf more rows have ended.
template <int NV, bool ONE, bool PF = false>
__device__ __forceinline__ void k5r_body(const float* __restrict__ logits, const float* __restrict__ temps, int64_t V,
                                         int G, bool wp, float* __restrict__ probas, int64_t* __restrict__ argmax,
                                         uint8_t* __restrict__ greedy, int64_t chunk, int64_t pf = 0,
                                         int64_t pf_from = 0) {
  pdl_begin();
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int CS = (int)cluster.num_blocks();
  const int64_t r = blockIdx.y;
  const int64_t b = r / G;
  const int tid = threadIdx.x, nt = blockDim.x;
  __shared__ K5Stats st;
  __shared__ float rf[32];
  __shared__ float rv[32];
  __shared__ long long ri[32];
  __shared__ float s_m, s_s;
  __shared__ long long s_ai;
  if (ONE && CS > 1) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");  // see k5_reduce_one

  const float temp = temps[b];
  const bool gr = temp < 1e-6f;
  if (rank == 0 && tid == 0 && (r % G) == 0) greedy[b] = gr ? 1 : 0;
  const int64_t v0 = (int64_t)rank * chunk;
  const int64_t v1 = v0 + chunk < V ? v0 + chunk : V;
  const int64_t n = v1 > v0 ? v1 - v0 : 0;  // a multiple of 4 (V and chunk are)
  const float* row = logits + r * V + v0;
  const bool need_exp = wp && !gr;

  float4 x[NV];
  if constexpr (PF) {
    const uint64_t normal = l2_policy_evict_normal();
#pragma unroll
    for (int u = 0; u < NV; ++u) {
      const int64_t i = ((int64_t)u * nt + tid) * 4;
      x[u] = i < n ? ld_f4_l2_policy(row + i, normal) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    if (tid == 0 && n > 0 && r >= pf_from && r + pf < (int64_t)gridDim.y)
      l2_prefetch_evict_last(row + pf * V, (uint32_t)(n * 4));
  } else {
#pragma unroll
    for (int u = 0; u < NV; ++u) {
      const int64_t i = ((int64_t)u * nt + tid) * 4;
      x[u] = i < n ? __ldcs(reinterpret_cast<const float4*>(row + i)) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
  // argmax of the raw logits; its value divided by temp is the max of x (see k5_kernel)
  float av = -INFINITY;
  long long ai = LLONG_MAX;
#pragma unroll
  for (int u = 0; u < NV; ++u) {
    const int64_t i = ((int64_t)u * nt + tid) * 4;
    if (i < n) {
      const float* e = reinterpret_cast<const float*>(&x[u]);
#pragma unroll
      for (int k = 0; k < 4; ++k) k5_amax_step<long long>(e[k], v0 + i + k, av, ai, LLONG_MAX);
    }
  }
  K5Part one;  // ONE: the row's merged partials (the two-round form reads s_m, s_s, s_ai where it uses them)
  float tm = 0.0f;  // ONE: this thread's max of x, against which its registers hold e
  if constexpr (ONE) {
    // this thread's max of x (its argmax value / temp, as for the row) and its exp-sum against it; the
    // registers keep e = exp(x - that max) from here (sampling rows), so the output pass only rescales
    K5Part a{need_exp ? __fdiv_rn(av, temp) : -INFINITY, 0.0f, av, ai == LLONG_MAX ? INT_MAX : (int)ai};
    if (need_exp) k5_exp_rel<NV>(x, n, tid, nt, temp, a);
    tm = a.m;
    __shared__ K5Part ws1[8], xs1[16];  // the warps' and the cluster's partials
    one = k5_reduce_one(CS, rank, a, ws1, xs1);
  } else {
    k5_reduce_stats(cluster, CS, av, av, ai, rf, rv, ri, st, s_m, s_ai);
  }
  if (rank == 0 && tid == 0) argmax[r] = (int64_t)(ONE ? one.ai : s_ai);
  float* out = probas + r * V + v0;
  if (need_exp) {
    float part = 0.0f;  // the two-round form: one partial sum per thread, >= 32 partial sums per row
    if constexpr (!ONE) {
      const float gm = __fdiv_rn(s_m, temp);
#pragma unroll
      for (int u = 0; u < NV; ++u) {
        const int64_t i = ((int64_t)u * nt + tid) * 4;
        if (i < n) {
          float* e = reinterpret_cast<float*>(&x[u]);
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            e[k] = k5_exp(__fsub_rn(__fdiv_rn(e[k], temp), gm));
            part = __fadd_rn(part, e[k]);
          }
        }
      }
    }
    // e_v * (1 / s): see k5_kernel (TOL, within 2 ulp of e_v / s); the one-round form's e are relative to
    // the thread's max, so its factor also carries exp(that max - the row's) (k5_scale)
    const float f = ONE ? k5_scale(tm, one) : __frcp_rn(k5_reduce_sum(cluster, CS, part, rf, st, s_s));
    if (!ONE && CS > 1) cluster_arrive();  // this block's DSMEM reads are over (k5_reduce_sum ends with a block barrier)
#pragma unroll
    for (int u = 0; u < NV; ++u) {
      const int64_t i = ((int64_t)u * nt + tid) * 4;
      if (i < n) {
        float4 o4;
        o4.x = __fmul_rn(x[u].x, f);
        o4.y = __fmul_rn(x[u].y, f);
        o4.z = __fmul_rn(x[u].z, f);
        o4.w = __fmul_rn(x[u].w, f);
        __stcs(reinterpret_cast<float4*>(out + i), o4);
      }
    }
  } else {
    if (!ONE && CS > 1) cluster_arrive();  // DSMEM reads over (k5_reduce_stats ends with a block barrier)
  }
  if (!need_exp && wp) {  // greedy row: one-hot at the argmax
    const long long am = ONE ? one.ai : s_ai;
#pragma unroll
    for (int u = 0; u < NV; ++u) {
      const int64_t i = ((int64_t)u * nt + tid) * 4;
      if (i < n) {
        const long long g = v0 + i;
        __stcs(reinterpret_cast<float4*>(out + i),
               make_float4(g == am ? 1.f : 0.f, g + 1 == am ? 1.f : 0.f, g + 2 == am ? 1.f : 0.f,
                           g + 3 == am ? 1.f : 0.f));
      }
    }
  }
  if (!ONE && CS > 1) cluster_wait();  // no block leaves while another may still read its shared memory
}

#define E4_K5R_ARGS                                                                                            \
  const float *__restrict__ logits, const float *__restrict__ temps, int64_t V, int G, bool wp,               \
      float *__restrict__ probas, int64_t *__restrict__ argmax, uint8_t *__restrict__ greedy, int64_t chunk,  \
      int64_t pf, int64_t pf_from
template <int NV>
__global__ void __launch_bounds__(256) k5r_kernel(E4_K5R_ARGS) {
  k5r_body<NV, false>(logits, temps, V, G, wp, probas, argmax, greedy, chunk);
}
// The one-round form (k5_reduce_one) of the same kernel.
template <int NV>
__global__ void __launch_bounds__(256) k5r1_kernel(E4_K5R_ARGS) {
  k5r_body<NV, true>(logits, temps, V, G, wp, probas, argmax, greedy, chunk);
}
// The same kernel held to 64 registers a thread, so that 4 blocks of 256 threads share an SM instead of
// 3 (NV = 8 takes 74-80 registers unbounded): with many rows the fourth block's loads overlap the others'
// reductions and stores (kernel_bench sweep on the H100: -11% at 1024 rows of V = 32768 for the two-round
// form, -9% for the one-round form; worse at 64-128 rows), in both forms (k5r_launch says where).
template <int NV>
__global__ void __launch_bounds__(256, 4) k5r4_kernel(E4_K5R_ARGS) {
  k5r_body<NV, false>(logits, temps, V, G, wp, probas, argmax, greedy, chunk);
}
template <int NV, bool PF = false>
__global__ void __launch_bounds__(256, 4) k5r14_kernel(E4_K5R_ARGS) {
  k5r_body<NV, true, PF>(logits, temps, V, G, wp, probas, argmax, greedy, chunk, pf, pf_from);
}
#undef E4_K5R_ARGS

// K5 convert_logits_to_probas (KERNELS.md §5).
#include "eagle4_cuda.cuh"

// One cluster of CS blocks per row; the row chunk of each block
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
// k5_exp without __expf's rescaling of outputs below 2^-126 (ex2.approx.ftz): the same value wherever exp(d) >= 2^-126,
// 0 instead of a subnormal elsewhere. A thread's sum does not see the difference (it is >= 1: its max gives exp(0)),
// and an output below 2^-126 is far inside the probas' atol (1e-10).
__device__ __forceinline__ float k5_exp_ftz(float d) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(__fmul_rn(d, 1.4426950408889634f)));
  return r;
}

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
  // one exp a merge: the partial with the larger max keeps its sum as it is (its factor exp(0) is 1), the other's is
  // scaled by exp(its max - that max). A NaN max (a NaN row) compares false and its sum, NaN, is scaled: NaN either
  // way; an empty partial (sum 0, max -inf) adds 0.
  const bool keep = m >= om;
  const float big = keep ? s : os, small = keep ? os : s;
  const float t = small == 0.0f ? 0.0f : __fmul_rn(small, k5_exp_ftz(keep ? __fsub_rn(om, m) : __fsub_rn(m, om)));
  m = fmaxf(m, om);
  s = __fadd_rn(big, t);
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

// The row's merged partials in every thread: warps, the block's warps (one block barrier), then (CS > 1) the
// cluster's blocks: warp 0 pushes the block's partial into every block's xs[rank] (DSMEM stores), one cluster
// barrier, and xs[0..CS) is merged from the block's own shared memory, so no block reads another's after the
// barrier. The caller has arrived (relaxed) at a cluster barrier at its start; the wait here makes sure every
// block of the cluster runs before the stores. W0: only warp 0 merges the warps' and the blocks' partials and
// hands the result to the others through shared memory (one block barrier more on the path, the other warps'
// merges off the SM's issue slots; k5r_launch says where); else every warp merges them itself. Both give every
// thread the same bits (the same merges in the same order).
template <bool W0 = false>
__device__ __forceinline__ K5Part k5_reduce_one(int CS, int rank, K5Part a, K5Part* ws, K5Part* xs) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = (int)(blockDim.x >> 5);
  k5_warp_merge(a);
  if (lane == 0) ws[wid] = a;
  __syncthreads();
  if (!W0 || wid == 0) a = k5_merge_n(ws, nw);
  if (CS > 1) {
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    if (wid == 0 && lane < CS) *cg::this_cluster().map_shared_rank(&xs[rank], lane) = a;
    cluster_arrive_warp0_release();
    cluster_wait();
    if (!W0 || wid == 0) a = k5_merge_n(xs, CS);
  }
  if constexpr (W0) {
    __shared__ K5Part res;
    if (threadIdx.x == 0) res = a;
    __syncthreads();
    a = res;
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
  return __fmul_rn(k5_exp_ftz(__fsub_rn(mp, row.m)), __frcp_rn(row.s));
}
// the register kernel's part: a thread's NV vectors, each visited through `each` (k5_each) (a.m: their max of
// x), e written over them, summed into a.s
template <int NV, typename Each>
__device__ __forceinline__ void k5_exp_rel(float4 (&x)[NV], float temp, K5Part& a, Each each) {
  const float mc = k5_rel_base(a.m);
  each([&](int u, int) {
    float* e = reinterpret_cast<float*>(&x[u]);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      e[k] = k5_exp(__fsub_rn(__fdiv_rn(e[k], temp), mc));
      a.s = __fadd_rn(a.s, e[k]);
    }
  });
}

// x / t with y = RN(1 / t): Markstein's correction RN(q + (x - q t) y) of q = RN(x y), the remainder exact by FMA. It
// is the IEEE quotient while nothing under- or overflows (Markstein's theorem), which holds for t in [2^-32, 2^32]
// and |x| in [2^-64, 2^64], and NaN for a NaN x (k5_div_rcp_ok says where a thread may take it).
__device__ __forceinline__ float k5_div_rcp(float x, float t, float y) {
  const float q = __fmul_rn(x, y);
  return __fmaf_rn(__fmaf_rn(-q, t, x), y, q);
}
__device__ __forceinline__ bool k5_div_rcp_ok(float t, float lo, float hi) {
  return t >= 0x1p-32f && t <= 0x1p32f && lo >= 0x1p-64f && hi <= 0x1p64f;
}
// k5_exp_rel for a thread whose entries' |x| lie in [lo, hi] (NaN aside): where k5_div_rcp_ok, the division as
// k5_div_rcp (one reciprocal a thread instead of one IEEE division an entry) and the exp as k5_exp_ftz; elsewhere
// (a zero, an infinity, an entry out of range) k5_exp_rel itself. Each vector through `each` (k5_each).
template <int NV, typename Each>
__device__ __forceinline__ void k5_exp_rel_rcp(float4 (&x)[NV], float temp, float lo, float hi, K5Part& a,
                                               Each each) {
  if (!k5_div_rcp_ok(temp, lo, hi)) {
    k5_exp_rel<NV>(x, temp, a, each);
    return;
  }
  const float y = __frcp_rn(temp), mc = k5_rel_base(a.m);
  each([&](int u, int) {
    float* e = reinterpret_cast<float*>(&x[u]);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      e[k] = k5_exp_ftz(__fsub_rn(k5_div_rcp(e[k], temp, y), mc));
      a.s = __fadd_rn(a.s, e[k]);
    }
  });
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

// f(u, i) for each of the register kernel's NV vectors of a thread that lie in its block's slice (entry i = (u nt +
// tid) 4 < n), in ascending u (REV: descending). Where every thread's vectors but the last lie in it (block-uniform),
// only the last is tested: the bounds cost a compare and a branch a vector otherwise.
template <int NV, bool REV = false, typename F>
__device__ __forceinline__ void k5_each(int n, int tid, int nt, F f) {
  if ((NV - 1) * nt * 4 <= n) {
    const int il = ((NV - 1) * nt + tid) * 4;
    if (REV && il < n) f(NV - 1, il);
#pragma unroll
    for (int k = 0; k < NV - 1; ++k) {
      const int u = REV ? NV - 2 - k : k;
      f(u, (u * nt + tid) * 4);
    }
    if (!REV && il < n) f(NV - 1, il);
  } else {
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int u = REV ? NV - 1 - k : k;
      const int i = (u * nt + tid) * 4;
      if (i < n) f(u, i);
    }
  }
}

// K5 register-resident variant (f32 logits, 16-byte aligned rows, V % 4 == 0): every thread keeps
// NV float4 vectors of its block's slice in registers, so the row is read from HBM once, reduced
// (max/argmax, then the exp-sum) and written once, with no shared-memory staging of the row.
// One block (CS == 1) or one thread-block cluster of CS blocks (DSMEM exchange) per row; the host
// picks CS and the block size so that small-V many-row launches keep whole rows per block and
// large-V few-row launches spread a row over up to 16 SMs. One reduction round (k5_reduce_one), the registers
// holding e = exp(x - the thread's max) (k5_exp_rel_rcp) in between.
// PF: before it reduces, the block asks L2 for the same slice of the row pf rows on (one bulk prefetch, marked
// evict_last so that the rows' other traffic does not evict it before its block loads it), and loads its own
// slice marked evict_normal: that load takes the mark off again (k5_l2_prefetch/: evict_last lines the loads
// left marked stayed in L2 through later kernels). Rows before pf_from do not prefetch: the GPU's first wave
// holds rows 0 .. pf_from + pf - 1 at once, and a prefetch landing after its row's own load would leave the
// mark on; from there on the row pf rows on starts only after pf more rows have ended.
template <int NV, bool PF = false, bool W0 = false>
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
  if (CS > 1) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");  // see k5_reduce_one

  const float temp = temps[b];
  const bool gr = temp < 1e-6f;
  if (rank == 0 && tid == 0 && (r % G) == 0) greedy[b] = gr ? 1 : 0;
  const int64_t v0 = (int64_t)rank * chunk;
  const int64_t v1 = v0 + chunk < V ? v0 + chunk : V;
  const int64_t n = v1 > v0 ? v1 - v0 : 0;  // a multiple of 4 (V and chunk are)
  const float* row = logits + r * V + v0;
  const bool need_exp = wp && !gr;

  // The loads (and below, the greedy one-hot) keep their per-vector bounds tests: through k5_each, as the other
  // passes go, they are slower (docs/decisions.md)
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
  // The thread's argmax of the raw logits (its value divided by temp is its max of x, see k5_kernel), two passes
  // over its registers with no branch an entry: its max with NaN propagating (max.NaN), then, from the last entry
  // to the first, the first equal to that max, or, when the max is NaN, the first NaN (a NaN max means the thread
  // holds one, so `v == mx || v != v` picks exactly those); ties go to the lowest index (§5.4 step 1). The first
  // pass also takes the least and largest |logit| (NaN ignored) for k5_exp_rel_rcp. av: the max itself (equal to
  // the entry under ==, NaN when it is NaN: all a merge compares).
  float mx = -INFINITY, lo = INFINITY, hi = 0.0f;
  const int ni = (int)n;  // n <= chunk <= 8192 * 16
  auto each = [&](auto f) { k5_each<NV>(ni, tid, nt, f); };
  each([&](int u, int) {
    const float* e = reinterpret_cast<const float*>(&x[u]);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      asm("max.NaN.f32 %0, %0, %1;" : "+f"(mx) : "f"(e[k]));
      lo = fminf(lo, fabsf(e[k]));
      hi = fmaxf(hi, fabsf(e[k]));
    }
  });
  int li = INT_MAX;
  k5_each<NV, true>(ni, tid, nt, [&](int u, int i) {
    const float* e = reinterpret_cast<const float*>(&x[u]);
#pragma unroll
    for (int k = 3; k >= 0; --k)
      if (e[k] == mx || e[k] != e[k]) li = i + k;
  });
  const float av = mx;
  const long long ai = li == INT_MAX ? LLONG_MAX : v0 + li;
  // this thread's max of x (its argmax value / temp, as for the row) and its exp-sum against it; the registers
  // keep e = exp(x - that max) from here (sampling rows), so the output pass only rescales
  K5Part a{need_exp ? __fdiv_rn(av, temp) : -INFINITY, 0.0f, av, ai == LLONG_MAX ? INT_MAX : (int)ai};
  if (need_exp) k5_exp_rel_rcp<NV>(x, temp, lo, hi, a, each);
  const float tm = a.m;
  __shared__ K5Part ws1[8], xs1[16];  // the warps' and the cluster's partials
  const K5Part one = k5_reduce_one<W0>(CS, rank, a, ws1, xs1);
  if (rank == 0 && tid == 0) argmax[r] = (int64_t)one.ai;
  float* out = probas + r * V + v0;
  if (need_exp) {
    // e_v * (1 / s): see k5_kernel (TOL, within 2 ulp of e_v / s); the e are relative to the thread's max, so
    // the factor also carries exp(that max - the row's) (k5_scale)
    const float f = k5_scale(tm, one);
    each([&](int u, int i) {
      float4 o4;
      o4.x = __fmul_rn(x[u].x, f);
      o4.y = __fmul_rn(x[u].y, f);
      o4.z = __fmul_rn(x[u].z, f);
      o4.w = __fmul_rn(x[u].w, f);
      __stcs(reinterpret_cast<float4*>(out + i), o4);
    });
  }
  if (!need_exp && wp) {  // greedy row: one-hot at the argmax
    const long long am = one.ai;
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
}

#define E4_K5R_ARGS                                                                                            \
  const float *__restrict__ logits, const float *__restrict__ temps, int64_t V, int G, bool wp,               \
      float *__restrict__ probas, int64_t *__restrict__ argmax, uint8_t *__restrict__ greedy, int64_t chunk,  \
      int64_t pf, int64_t pf_from
// The register kernel's builds (k5r_launch says where each is taken): unbounded (k5r1_kernel), held to 64 registers a
// thread so that 4 blocks of 256 threads share an SM instead of 3 (k5r14_kernel: with many rows the fourth block's
// loads overlap the others' reductions and stores), and in narrow blocks (k5rn_kernel: 64 threads of 32 vectors, 6
// blocks an SM; the registers a thread needs beside its entries are paid for a quarter as many threads, so an SM
// holds 6 slices of 8192 entries instead of 4: 42 clusters of 16 blocks at once on the H100 instead of 28).
// PF: the L2-prefetching build; W0: the merges by warp 0 only (k5_reduce_one).
template <int NV, bool W0 = false>
__global__ void __launch_bounds__(256) k5r1_kernel(E4_K5R_ARGS) {
  k5r_body<NV, false, W0>(logits, temps, V, G, wp, probas, argmax, greedy, chunk);
}
template <int NV, bool PF = false, bool W0 = false>
__global__ void __launch_bounds__(256, 4) k5r14_kernel(E4_K5R_ARGS) {
  k5r_body<NV, PF, W0>(logits, temps, V, G, wp, probas, argmax, greedy, chunk, pf, pf_from);
}
template <int NV, bool PF = false, bool W0 = false>
__global__ void __launch_bounds__(64, 6) k5rn_kernel(E4_K5R_ARGS) {
  k5r_body<NV, PF, W0>(logits, temps, V, G, wp, probas, argmax, greedy, chunk, pf, pf_from);
}
#undef E4_K5R_ARGS

// The register-resident K5 where it applies (f32, 16-byte aligned rows, V % 4 == 0, V <= 16 * 8192);
// false: the caller uses the shared-memory kernel.
static bool k5r_launch(const at::Tensor& logits, const at::Tensor& temperatures, int64_t G, bool write_probas,
                       at::Tensor& probas, at::Tensor& argmax_ids, at::Tensor& is_greedy, int64_t R, int64_t V,
                       cudaStream_t stream) {
  constexpr int64_t kMaxNT = 256, kMaxPerBlock = kMaxNT * 8 * 4;
  // The register kernel is K5's fastest form wherever a cluster of <= 16 blocks holds the row (docs/decisions.md).
  if (V % 4 || reinterpret_cast<uintptr_t>(logits.data_ptr()) % 16 ||
      reinterpret_cast<uintptr_t>(probas.data_ptr()) % 16)
    return false;
  // Clusters: the grid target (2 blocks an SM) up to 32 rows, capped at 8 blocks from 8 rows on where 8 hold the
  // row; at 33-64 rows slices of 4096 entries (4 vectors a thread); the grid target from 65 rows on.
  const bool mid = R > 32 && R <= 64;
  const int64_t target = 2 * (int64_t)sm_count();
  const int64_t want = mid ? std::min<int64_t>(8, (V + 4095) / 4096) : (target + R - 1) / R;
  const int64_t max_cs = (R >= 8 && V <= 8 * kMaxPerBlock) ? 8 : 16;
  int64_t cs = std::max<int64_t>(want, (V + kMaxPerBlock - 1) / kMaxPerBlock);
  cs = std::min<int64_t>(std::max<int64_t>(cs, 1), std::min<int64_t>(max_cs, (V + 3) / 4));
  auto chunk_of = [&](int64_t c) { return ((V + c - 1) / c + 3) / 4 * 4; };
  int64_t chunk = chunk_of(cs);
  if (chunk > kMaxPerBlock) return false;
  const int64_t vecs = chunk / 4;
  const int nv = vecs <= kMaxNT ? 1 : vecs <= 2 * kMaxNT ? 2 : vecs <= 4 * kMaxNT ? 4 : 8;
  int nt = (int)std::min<int64_t>(kMaxNT, std::max<int64_t>(32, ((vecs + nv - 1) / nv + 31) / 32 * 32));
  // pfkern: the prefetching build (k5r_body's PF), taken where the launch has more rows than the GPU holds at once,
  // 25% of those rows ahead. kw / pfkw: the builds whose merges are by warp 0 only (k5_reduce_one's W0), taken
  // where the launch has more blocks than the GPU has SMs: blocks then share an SM's issue slots, which the other
  // warps' merges would take; with fewer blocks only W0's extra block barrier would show.
  auto go = [&](auto kern, decltype(kern) kw = nullptr, decltype(kern) pfkern = nullptr, decltype(kern) pfkw = nullptr) {
    int c = (int)cs;
    if (c > 8) {
      c = usable_cluster(kern, c, dim3(nt), 0);
      if (c < cs) {  // 16-block clusters not schedulable here: 8 blocks, if a block still holds its slice
        if (chunk_of(c) > (int64_t)nt * nv * 4) return false;
        chunk = chunk_of(c);
      }
    }
    c = (int)((V + chunk - 1) / chunk);
    int64_t pf = 0, pf_from = 0;
    if (pfkern) {
      const int64_t held = resident(pfkern, c, nt, 0);  // rows (clusters) the GPU holds at once
      if (held > 0 && R > held) {
        pf = std::max<int64_t>(1, std::min<int64_t>(held, held * 25 / 100));
        pf_from = held - pf;
        kern = pfkern;
        kw = pfkw;
      }
    }
    if (kw && (int64_t)c * R > sm_count()) kern = kw;
    launch_ex(kern, dim3((unsigned)c, (unsigned)R), dim3(nt), 0, c, stream, (const float*)ptr<float>(logits),
                   (const float*)ptr<float>(temperatures), V, (int)G, write_probas, ptr<float>(probas),
                   ptr<int64_t>(argmax_ids), ptr<uint8_t>(is_greedy), chunk, pf, pf_from);
    return true;
  };
  // The narrow build where a block holds 8 vectors a thread of a slice of <= 8192 entries, V > 65536 (16-block
  // clusters) and >= 512 rows (slower with fewer rows: each wave's blocks are longer). The build held to 4 blocks an
  // SM for <= 32 rows and for >= 256 rows or V > 65536; the unbounded build otherwise.
  if (nv == 8 && chunk <= 64 * 32 * 4 && V > 8 * kMaxPerBlock && R >= 512) {
    nt = 64;
    return go(k5rn_kernel<32>, k5rn_kernel<32, false, true>, k5rn_kernel<32, true>, k5rn_kernel<32, true, true>);
  }
  const bool many = R >= 256 || V > 8 * kMaxPerBlock;
  if (R <= 32 || many) {
    switch (nv) {
      case 1: return go(k5r14_kernel<1>, k5r14_kernel<1, false, true>);
      case 2: return go(k5r14_kernel<2>, k5r14_kernel<2, false, true>);
      case 4: return go(k5r14_kernel<4>, k5r14_kernel<4, false, true>);
      default: return go(k5r14_kernel<8>, k5r14_kernel<8, false, true>, k5r14_kernel<8, true>,
                         k5r14_kernel<8, true, true>);
    }
  }
  switch (nv) {
    case 1: return go(k5r1_kernel<1>, k5r1_kernel<1, true>);
    case 2: return go(k5r1_kernel<2>, k5r1_kernel<2, true>);
    case 4: return go(k5r1_kernel<4>, k5r1_kernel<4, true>);
    default: return go(k5r1_kernel<8>, k5r1_kernel<8, true>);
  }
}

void convert_logits_to_probas(at::Tensor logits, at::Tensor temperatures, int64_t rows_per_req, bool write_probas,
                              at::Tensor probas, at::Tensor argmax_ids, at::Tensor is_greedy) {
  const int64_t G = rows_per_req;
  E4_PRE(G >= 1, "rows_per_req must be >= 1, got ", G);
  E4_VALUE(logits.dim() == 2, "logits must be [R, V]");
  const auto lt = logits.scalar_type();
  E4_VALUE(lt == at::kFloat || lt == at::kHalf || lt == at::kBFloat16,
           "logits must be float32/float16/bfloat16");
  const int64_t R = logits.size(0), V = logits.size(1);
  check_tensor(logits, "logits", lt, {R, V});
  const int64_t B = temperatures.dim() == 1 ? temperatures.size(0) : -1;
  check_tensor(temperatures, "temperatures", at::kFloat, {B});
  E4_PRE(R == B * G, "logits rows must equal len(temperatures)*rows_per_req, got ", R, " vs ", B, "*", G);
  check_tensor(probas, "probas", at::kFloat, {R, V});
  check_tensor(argmax_ids, "argmax_ids", at::kLong, {R});
  check_tensor(is_greedy, "is_greedy", at::kByte, {B});
  E4_PRE(V >= 1, "V must be >= 1");
  if (R == 0) return;
  E4_CHECK(R <= 65535, "convert_logits_to_probas: more than 65535 rows per launch is not supported");
  const c10::cuda::CUDAGuard guard(logits.device());
  auto stream = c10::cuda::getCurrentCUDAStream();
  if (lt == at::kFloat && k5r_launch(logits, temperatures, G, write_probas, probas, argmax_ids, is_greedy, R, V,
                                      stream))
    return;
  const dim3 block(512);
  const int want = R <= 8 ? 16 : 8;  // very few rows: more blocks per row to fill the GPU
  const bool aligned = reinterpret_cast<uintptr_t>(logits.data_ptr()) % 16 == 0;
  auto go = [&](auto kern2, auto kern1, const auto* lp) {
    int cs = (int)std::min<int64_t>(want, std::max<int64_t>(1, (V + 4095) / 4096));
    auto chunk_of = [&](int c) { int64_t ch = (V + c - 1) / c; return (ch + 7) / 8 * 8; };
    // the one-round kernel (k5s1_kernel) up to 512 rows where a thread's part of the slice is <= K5S_NB
    // batches of 16 entries (V <= 262144 at 8 blocks a row); its shared memory also holds each batch's max,
    // a float a thread. More rows take the two-round kernel (k5_kernel), faster there (docs/decisions.md).
    auto batches_of = [&](int c) { return (chunk_of(c) + 16 * block.x - 1) / (16 * block.x); };
    auto smem_of = [&](int c, bool one) {
      return (size_t)(chunk_of(c) + (one ? batches_of(c) * block.x : 0)) * sizeof(float);
    };
    const bool one = R <= 512 && batches_of(std::min(cs, 8)) <= K5S_NB;
    if (cs > 8)
      cs = one ? usable_cluster(kern1, cs, block, smem_of(cs, true))
               : usable_cluster(kern2, cs, block, smem_of(cs, false));
    const bool use1 = one && batches_of(cs) <= K5S_NB;
    const int64_t chunk = chunk_of(cs);
    const size_t smem = smem_of(cs, use1);
    cs = (int)((V + chunk - 1) / chunk);
    E4_CHECK(smem <= 227 * 1024, "convert_logits_to_probas: V too large");
    auto launch = [&](auto kern) {
      launch_ex(kern, dim3((unsigned)cs, (unsigned)R), block, smem, cs, stream, lp,
                (const float*)ptr<float>(temperatures), V, (int)G, write_probas, ptr<float>(probas),
                ptr<int64_t>(argmax_ids), ptr<uint8_t>(is_greedy), chunk);
    };
    if (use1) launch(kern1); else launch(kern2);
  };
  if (lt == at::kFloat) {
    const float* lp = ptr<float>(logits);
    if (aligned && V % 4 == 0) go(k5_kernel<float, 4>, k5s1_kernel<float, 4>, lp);
    else go(k5_kernel<float, 1>, k5s1_kernel<float, 1>, lp);
  } else if (lt == at::kHalf) {
    const __half* lp = ptr<__half>(logits);
    if (aligned && V % 8 == 0) go(k5_kernel<__half, 8>, k5s1_kernel<__half, 8>, lp);
    else go(k5_kernel<__half, 1>, k5s1_kernel<__half, 1>, lp);
  } else {
    const __nv_bfloat16* lp = ptr<__nv_bfloat16>(logits);
    if (aligned && V % 8 == 0) go(k5_kernel<__nv_bfloat16, 8>, k5s1_kernel<__nv_bfloat16, 8>, lp);
    else go(k5_kernel<__nv_bfloat16, 1>, k5s1_kernel<__nv_bfloat16, 1>, lp);
  }
}


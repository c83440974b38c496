// Probe kernel (inside namespace base, after k5_committed.cuh and k5l2.cuh, whose L2 policies and load it uses): K5's one-round register kernel with only part of
// each thread's slice held in registers, so that every row of a two-wave launch is on chip at once. A thread's first
// NL vectors (lower indices) are loaded marked evict_last, reduced to a partial (max of x, exp-sum against it) and
// dropped; its last NR vectors stay in registers as e = exp(x - their max) (as k5r_body). After the cluster merge the
// register part is scaled and stored, and the first NL vectors are read again (from L2), exponentiated again (the
// same operations, so the same e) and stored. Sampling rows and greedy rows as k5r_body; f32, V % 4 == 0.
// the argmax step (k5_amax_step, ascending index order) over a thread's N vectors, the first of them vector u0 of
// its slice
template <int N, int NT>
__device__ __forceinline__ void k5h_amax(const float4 (&v)[N], int u0, int tid, int64_t n, int64_t v0, float& av,
                                         long long& ai) {
#pragma unroll
  for (int u = 0; u < N; ++u) {
    const int64_t i = ((int64_t)(u + u0) * NT + tid) * 4;
    if (i < n) {
      const float* e = reinterpret_cast<const float*>(&v[u]);
#pragma unroll
      for (int k = 0; k < 4; ++k) k5_amax_step<long long>(e[k], v0 + i + k, av, ai, LLONG_MAX);
    }
  }
}

template <int NL, int NR, int NT, int MINB>
__global__ void __launch_bounds__(NT, MINB)
    k5h_kernel(const float* __restrict__ logits, const float* __restrict__ temps, int64_t V, int G, bool wp,
               float* __restrict__ probas, int64_t* __restrict__ argmax, uint8_t* __restrict__ greedy, int64_t chunk,
               int64_t, int64_t) {
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int CS = (int)cluster.num_blocks();
  const int64_t r = blockIdx.y;
  const int64_t b = r / G;
  const int tid = threadIdx.x;
  if (CS > 1) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");  // see k5_reduce_one
  const float temp = temps[b];
  const bool gr = temp < 1e-6f;
  if (rank == 0 && tid == 0 && (r % G) == 0) greedy[b] = gr ? 1 : 0;
  const int64_t v0 = (int64_t)rank * chunk;
  const int64_t v1 = v0 + chunk < V ? v0 + chunk : V;
  const int64_t n = v1 > v0 ? v1 - v0 : 0;
  const float* row = logits + r * V + v0;
  const bool need_exp = wp && !gr;
  const uint64_t last = policy(1);

  // the L2 part: loaded, reduced, dropped
  float av = -INFINITY;
  long long ai = LLONG_MAX;
  float mL = -INFINITY, sL = 0.0f;
  {
    float4 y[NL];
#pragma unroll
    for (int u = 0; u < NL; ++u) {
      const int64_t i = ((int64_t)u * NT + tid) * 4;
      y[u] = i < n ? ldp(row + i, last) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    k5h_amax<NL, NT>(y, 0, tid, n, v0, av, ai);
    if (need_exp) {
      mL = __fdiv_rn(av, temp);  // the part's max of x (its argmax value / temp, as k5r_body)
      const float mc = k5_rel_base(mL);
#pragma unroll
      for (int u = 0; u < NL; ++u) {
        const int64_t i = ((int64_t)u * NT + tid) * 4;
        if (i < n) {
          const float* e = reinterpret_cast<const float*>(&y[u]);
#pragma unroll
          for (int k = 0; k < 4; ++k) sL = __fadd_rn(sL, k5_exp(__fsub_rn(__fdiv_rn(e[k], temp), mc)));
        }
      }
    }
  }
  // the register part: as k5r_body's registers
  float4 x[NR];
#pragma unroll
  for (int u = 0; u < NR; ++u) {
    const int64_t i = ((int64_t)(u + NL) * NT + tid) * 4;
    x[u] = i < n ? __ldcs(reinterpret_cast<const float4*>(row + i)) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  float avR = -INFINITY;
  long long aiR = LLONG_MAX;
  k5h_amax<NR, NT>(x, NL, tid, n, v0, avR, aiR);
  K5Part a{need_exp ? __fdiv_rn(avR, temp) : -INFINITY, 0.0f, avR, aiR == LLONG_MAX ? INT_MAX : (int)aiR};
  if (need_exp) {
    const float mc = k5_rel_base(a.m);
#pragma unroll
    for (int u = 0; u < NR; ++u) {
      const int64_t i = ((int64_t)(u + NL) * NT + tid) * 4;
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
  const float tm = a.m;  // the register part's base
  // the thread's partial: the register part merged with the L2 part (whose indices come first)
  k5_merge(a, mL, sL, av, ai == LLONG_MAX ? INT_MAX : (int)ai);
  __shared__ K5Part ws1[NT / 32], xs1[16];
  const K5Part one = k5_reduce_one(CS, rank, a, ws1, xs1);
  if (rank == 0 && tid == 0) argmax[r] = (int64_t)one.ai;
  float* out = probas + r * V + v0;
  if (need_exp) {
    const float f = k5_scale(tm, one);
#pragma unroll
    for (int u = 0; u < NR; ++u) {
      const int64_t i = ((int64_t)(u + NL) * NT + tid) * 4;
      if (i < n)
        __stcs(reinterpret_cast<float4*>(out + i),
               make_float4(__fmul_rn(x[u].x, f), __fmul_rn(x[u].y, f), __fmul_rn(x[u].z, f), __fmul_rn(x[u].w, f)));
    }
    const float fL = k5_scale(mL, one), mc = k5_rel_base(mL);
    const uint64_t first = policy(3);
#pragma unroll
    for (int u = 0; u < NL; ++u) {
      const int64_t i = ((int64_t)u * NT + tid) * 4;
      if (i < n) {
        float4 y = ldp(row + i, first);
        y.x = __fmul_rn(k5_exp(__fsub_rn(__fdiv_rn(y.x, temp), mc)), fL);
        y.y = __fmul_rn(k5_exp(__fsub_rn(__fdiv_rn(y.y, temp), mc)), fL);
        y.z = __fmul_rn(k5_exp(__fsub_rn(__fdiv_rn(y.z, temp), mc)), fL);
        y.w = __fmul_rn(k5_exp(__fsub_rn(__fdiv_rn(y.w, temp), mc)), fL);
        __stcs(reinterpret_cast<float4*>(out + i), y);
      }
    }
  } else if (wp) {  // greedy row: one-hot at the argmax
    const long long am = one.ai;
    for (int u = 0; u < NL + NR; ++u) {
      const int64_t i = ((int64_t)u * NT + tid) * 4;
      if (i < n) {
        const long long g = v0 + i;
        __stcs(reinterpret_cast<float4*>(out + i),
               make_float4(g == am ? 1.f : 0.f, g + 1 == am ? 1.f : 0.f, g + 2 == am ? 1.f : 0.f,
                           g + 3 == am ? 1.f : 0.f));
      }
    }
  }
}

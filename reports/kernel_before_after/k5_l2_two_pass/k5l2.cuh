// the L2 two-pass probe kernel (probe.cu), shared with probe3.cu
__device__ __forceinline__ uint64_t policy(int kind) {
  uint64_t p;
  if (kind == 1)
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  else if (kind == 2)
    asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
  else
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ float4 ldp(const float* p, uint64_t pol) {
  float4 v;
  asm("ld.global.L1::no_allocate.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "l"(p), "l"(pol));
  return v;
}

struct Part {
  float m, s, av;
  int ai;
};
__device__ __forceinline__ bool amax_better(float v, int i, float av, int ai) {
  if (ai == INT_MAX) return true;
  if (isnan(av)) return isnan(v) && i < ai;
  if (isnan(v)) return true;
  return v > av || (v == av && i < ai);
}
__device__ __forceinline__ void merge_ms(float& m, float& s, float om, float os) {
  const float M = fmaxf(m, om);
  const float x = s == 0.0f ? 0.0f : __fmul_rn(s, __expf(__fsub_rn(m, M)));
  const float y = os == 0.0f ? 0.0f : __fmul_rn(os, __expf(__fsub_rn(om, M)));
  m = M;
  s = __fadd_rn(x, y);
}
__device__ __forceinline__ void merge(Part& a, float om, float os, float oav, int oai) {
  merge_ms(a.m, a.s, om, os);
  if (amax_better(oav, oai, a.av, a.ai)) {
    a.av = oav;
    a.ai = oai;
  }
}
__device__ __forceinline__ void warp_merge(Part& a) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    merge(a, __shfl_xor_sync(~0u, a.m, o), __shfl_xor_sync(~0u, a.s, o), __shfl_xor_sync(~0u, a.av, o),
          __shfl_xor_sync(~0u, a.ai, o));
}

// grid (CS, R), clusters of CS blocks, one cluster a row. p1/p2: L2 policy of pass 1 / pass 2 loads
// (1 evict_last, 2 evict_normal, 3 evict_first); rev: pass 2 walks the slice backwards; cs_store: st.cs.
template <int NT, int U, int MINB>
__global__ void __launch_bounds__(NT, MINB)
    k5l2(const float* __restrict__ logits, const float* __restrict__ temps, int V, int G, float* __restrict__ probas,
         long long* __restrict__ amax, int chunk, int p1, int p2, int rev, int cs_store, int R) {
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank(), CS = (int)cluster.num_blocks();
  const int tid = threadIdx.x;
  __shared__ Part ws[NT / 32];
  __shared__ Part xs[16];
  for (int r = blockIdx.y; r < R; r += gridDim.y) {
  const float temp = temps[r / G];
  const bool gr = temp < 1e-6f;
  const int v0 = rank * chunk;
  const int n = max(0, min(chunk, V - v0));
  const float* row = logits + (size_t)r * V + v0;
  const uint64_t pol1 = policy(p1);
  Part a{-INFINITY, 0.0f, -INFINITY, INT_MAX};
  constexpr int STEP = NT * 4 * U;
  for (int i0 = tid * 4; i0 < n; i0 += STEP) {
    float4 x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = i0 + u * NT * 4;
      x[u] = i < n ? ldp(row + i, pol1) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    }
    float bm = -INFINITY;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = i0 + u * NT * 4;
      const float* e = reinterpret_cast<const float*>(&x[u]);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        if (i < n && amax_better(e[k], v0 + i + k, a.av, a.ai)) {
          a.av = e[k];
          a.ai = v0 + i + k;
        }
        bm = fmaxf(bm, e[k]);
      }
    }
    if (!gr) {
      const float M = fmaxf(a.m, __fdiv_rn(bm, temp));
      if (a.s != 0.0f) a.s = __fmul_rn(a.s, __expf(__fsub_rn(a.m, M)));
      a.m = M;
      const float base = M == -INFINITY ? 0.0f : M;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const float* e = reinterpret_cast<const float*>(&x[u]);
#pragma unroll
        for (int k = 0; k < 4; ++k) a.s = __fadd_rn(a.s, __expf(__fsub_rn(__fdiv_rn(e[k], temp), base)));
      }
    }
  }
  // block, then cluster merge
  warp_merge(a);
  const int lane = tid & 31, wid = tid >> 5;
  if (lane == 0) ws[wid] = a;
  __syncthreads();
  a = lane < NT / 32 ? ws[lane] : Part{-INFINITY, 0.0f, -INFINITY, INT_MAX};
  warp_merge(a);
  __syncthreads();  // ws is reused by the next row
  if (CS > 1) {
    cluster.sync();
    if (wid == 0 && lane < CS) *cluster.map_shared_rank(&xs[rank], lane) = a;
    cluster.sync();
    a = lane < CS ? xs[lane] : Part{-INFINITY, 0.0f, -INFINITY, INT_MAX};
    warp_merge(a);
  }
  if (rank == 0 && tid == 0) amax[r] = a.ai;
  float* out = probas + (size_t)r * V + v0;
  const uint64_t pol2 = policy(p2);
  const float base = a.m == -INFINITY ? 0.0f : a.m;
  const float inv = __frcp_rn(a.s);
  const int nsteps = (n + STEP - 1) / STEP;
  for (int j = 0; j < nsteps; ++j) {
    const int i0 = (rev ? nsteps - 1 - j : j) * STEP + tid * 4;
    float4 x[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = i0 + u * NT * 4;
      if (i < n) x[u] = ldp(row + i, pol2);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = i0 + u * NT * 4;
      if (i < n) {
        float4 o;
        if (gr) {
          o = make_float4(v0 + i == a.ai, v0 + i + 1 == a.ai, v0 + i + 2 == a.ai, v0 + i + 3 == a.ai);
        } else {
          o.x = __fmul_rn(__expf(__fsub_rn(__fdiv_rn(x[u].x, temp), base)), inv);
          o.y = __fmul_rn(__expf(__fsub_rn(__fdiv_rn(x[u].y, temp), base)), inv);
          o.z = __fmul_rn(__expf(__fsub_rn(__fdiv_rn(x[u].z, temp), base)), inv);
          o.w = __fmul_rn(__expf(__fsub_rn(__fdiv_rn(x[u].w, temp), base)), inv);
        }
        if (cs_store)
          __stcs(reinterpret_cast<float4*>(out + i), o);
        else
          *reinterpret_cast<float4*>(out + i) = o;
      }
    }
  }
  if (CS > 1) cluster.sync();  // xs is rewritten by the next row; no block leaves while another may still write it
  }
}


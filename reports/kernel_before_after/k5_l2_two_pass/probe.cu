// Probe: K5 as two passes over L2 (pass 1 streams the row from HBM, marking it evict_last, and keeps only
// per-thread (max, sum, argmax); a cluster merges them; pass 2 reads the row again, from L2, and writes
// the probas). Against: one D2D copy of the same bytes, a pure read and a pure write of them.
// Standalone (nvcc -O3 -arch=sm_90), one process, one card.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
namespace cg = cooperative_groups;

#include "probe_common.cuh"

#include "k5l2.cuh"

__global__ void read_only(const float4* __restrict__ p, size_t n4, float* sink) {
  float acc = 0.f;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
    const float4 v = __ldcs(p + i);
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 12345.678f) sink[0] = acc;
}
__global__ void write_only(float4* __restrict__ p, size_t n4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x)
    __stcs(p + i, make_float4(1.f, 2.f, 3.f, 4.f));
}

// reference in double: one block a row
__global__ void ref_kernel(const float* logits, const float* temps, int V, int G, float* probas, long long* amax) {
  const int r = blockIdx.x;
  const float temp = temps[r / G];
  const float* row = logits + (size_t)r * V;
  __shared__ double red[256];
  __shared__ int redi[256];
  __shared__ float redv[256];
  double m = -INFINITY;
  float av = -INFINITY;
  int ai = INT_MAX;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    m = fmax(m, (double)__fdiv_rn(row[v], temp));
    if (amax_better(row[v], v, av, ai)) {
      av = row[v];
      ai = v;
    }
  }
  red[threadIdx.x] = m;
  redv[threadIdx.x] = av;
  redi[threadIdx.x] = ai;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int t = 1; t < blockDim.x; ++t) {
      red[0] = fmax(red[0], red[t]);
      if (amax_better(redv[t], redi[t], redv[0], redi[0])) {
        redv[0] = redv[t];
        redi[0] = redi[t];
      }
    }
    amax[r] = redi[0];
  }
  __syncthreads();
  m = red[0];
  __syncthreads();
  double s = 0;
  for (int v = threadIdx.x; v < V; v += blockDim.x) s += exp((double)__fdiv_rn(row[v], temp) - m);
  red[threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int t = 1; t < blockDim.x; ++t) red[0] += red[t];
  }
  __syncthreads();
  s = red[0];
  for (int v = threadIdx.x; v < V; v += blockDim.x)
    probas[(size_t)r * V + v] = (float)(exp((double)__fdiv_rn(row[v], temp) - m) / s);
}

struct Shape {
  const char* name;
  int B, G, V;
};

using KFn = void (*)(const float*, const float*, int, int, float*, long long*, int, int, int, int, int, int);
struct Build {
  const char* name;
  KFn fn;
  int nt, u;
};

static cudaStream_t st;

int main(int argc, char** argv) {
  CK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs, L2 %d MB, persisting max %d MB\n", prop.name, prop.multiProcessorCount,
         prop.l2CacheSize >> 20, prop.persistingL2CacheMaxSize >> 20);
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const Shape shapes[] = {{"verify_B1_Q64_V128256", 1, 64, 128256}, {"draft_B32_Q8_V32768", 32, 8, 32768}};
  if (const char* mbs = getenv("PROBE_PERSIST_MB")) {  // L2 set-aside for persisting (evict_last) lines
    CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)atoi(mbs) << 20));
    size_t got = 0;
    CK(cudaDeviceGetLimit(&got, cudaLimitPersistingL2CacheSize));
    printf("persisting L2 set-aside: %zu MB\n", got >> 20);
  }
  const Build builds[] = {{"nt128_u4_b8", k5l2<128, 4, 8>, 128, 4}, {"nt256_u4_b4", k5l2<256, 4, 4>, 256, 4},
                          {"nt256_u2_b8", k5l2<256, 2, 8>, 256, 2}, {"nt512_u2_b4", k5l2<512, 2, 4>, 512, 2},
                          {"nt256_u8_b4", k5l2<256, 8, 4>, 256, 8}};
  for (const Build& b : builds) {
    CK(cudaFuncSetAttribute(b.fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, b.fn));
    printf("build %s: %d regs, %zu local bytes\n", b.name, fa.numRegs, fa.localSizeBytes);
  }
  const int reps = argc > 1 ? atoi(argv[1]) : 15;
  const int per_graph = 10;
  float* sink;
  CK(cudaMalloc(&sink, 16));

  for (const Shape& sh : shapes) {
    const int R = sh.B * sh.G, V = sh.V;
    const size_t N = (size_t)R * V;
    const double mb = 2.0 * N * 4 / 1e6;
    // two input/output sets: "rot" alternates them so a launch never finds the previous launch's lines
    float *lg[2], *pr[2], *ref, *tp;
    long long *am, *amr;
    for (int s = 0; s < 2; ++s) {
      CK(cudaMalloc(&lg[s], N * 4));
      CK(cudaMalloc(&pr[s], N * 4));
    }
    CK(cudaMalloc(&ref, N * 4));
    CK(cudaMalloc(&tp, sh.B * 4));
    CK(cudaMalloc(&am, R * 8));
    CK(cudaMalloc(&amr, R * 8));
    {
      std::vector<float> h(N);
      std::mt19937 rng(1234 + R);
      std::normal_distribution<float> nd(0.f, 4.f);
      for (auto& x : h) x = nd(rng);
      h[5] = h[77] = 40.f;  // a tie at the max
      CK(cudaMemcpy(lg[0], h.data(), N * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(lg[1], h.data(), N * 4, cudaMemcpyHostToDevice));
      std::vector<float> t(sh.B, 0.7f);
      CK(cudaMemcpy(tp, t.data(), sh.B * 4, cudaMemcpyHostToDevice));
    }
    ref_kernel<<<R, 256>>>(lg[0], tp, V, sh.G, ref, amr);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> href(N), hout(N);
    std::vector<long long> hamr(R), ham(R);
    CK(cudaMemcpy(href.data(), ref, N * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hamr.data(), amr, R * 8, cudaMemcpyDeviceToHost));

    // times a graph of per_graph launches of f(set), reps replays; median per launch (us)
    auto timeit = [&](auto f, bool rot) { return time_graph(st, f, rot, per_graph, reps); };
    const int nblk = prop.multiProcessorCount * 8;
    const size_t n4 = N / 4;
    const float t_copy = timeit([&](int s) { CK(cudaMemcpyAsync(pr[s], lg[s], N * 4, cudaMemcpyDeviceToDevice, st)); }, false);
    const float t_copy_rot =
        timeit([&](int s) { CK(cudaMemcpyAsync(pr[s], lg[s], N * 4, cudaMemcpyDeviceToDevice, st)); }, true);
    const float t_read = timeit([&](int s) { read_only<<<nblk, 256, 0, st>>>((const float4*)lg[s], n4, sink); }, true);
    const float t_write = timeit([&](int s) { write_only<<<nblk, 256, 0, st>>>((float4*)pr[s], n4); }, true);
    printf("\n== %s: R=%d V=%d, %.1f MB moved, roofline %.2f us (3.35 TB/s)\n", sh.name, R, V, mb, mb / 3.35);
    printf("copy %.2f us (rotating sets %.2f), read-only %.2f, write-only %.2f (rotating)\n", t_copy, t_copy_rot, t_read,
           t_write);
    printf("%-14s %3s %4s %6s %2s %2s %3s | %8s %8s %6s | %s\n", "build", "cs", "D", "blocks", "p1", "p2", "rev",
           "us", "us_rot", "/copy", "check");
    struct Res {
      std::string line;
      float t;
    };
    std::vector<Res> res;
    const int css_v[] = {4, 8, 16};
    const int css_d[] = {1, 2, 4, 8};
    const bool big = V > 65536;
    const char* only = getenv("PROBE_ONLY");  // "shape build cs D p1 p2 rev": that config alone, 3 launches (ncu)
    for (const Build& b : builds) {
      for (int ci = 0; ci < (big ? 3 : 4); ++ci) {
        const int cs = big ? css_v[ci] : css_d[ci];
        const int chunk = ((V + cs - 1) / cs + 3) / 4 * 4;
        for (int D : {R, R / 2, R / 4, R / 8})
        for (int p1 : {1, 2})
          for (int p2 : {2, 3})
            for (int rev : {0, 1})
              for (int cst : {1}) {
                if (p1 == 2 && (p2 != 3 || rev)) continue;  // without the evict_last mark, one control
                if (p2 == 2 && (rev || D != R)) continue;
                if ((size_t)D * cs > 1600) continue;
                char key[200];
                snprintf(key, sizeof key, "%s %s %d %d %d %d %d", sh.name, b.name, cs, D, p1, p2, rev);
                if (only && strcmp(only, key)) continue;
                auto launch = [&](int s) {
                  launch_cluster(b.fn, dim3(cs, D), b.nt, cs, st, (const float*)lg[s], (const float*)tp, V, sh.G, pr[s],
                                 am, chunk, p1, p2, rev, cst, R);
                };
                if (only) {
                  for (int k = 0; k < 3; ++k) launch(k & 1);
                  CK(cudaStreamSynchronize(st));
                  printf("ran %s 3 times\n", key);
                  continue;
                }
                // correctness: poison, run, compare with the double reference
                CK(cudaMemsetAsync(pr[0], 0xff, N * 4, st));
                CK(cudaMemsetAsync(am, 0xff, R * 8, st));
                launch(0);
                CK(cudaGetLastError());
                CK(cudaStreamSynchronize(st));
                CK(cudaMemcpy(hout.data(), pr[0], N * 4, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(ham.data(), am, R * 8, cudaMemcpyDeviceToHost));
                double worst = 0;
                size_t bad = 0;
                const bool check = p1 == 1 && p2 == 3 && rev == 0;  // the policies and order leave the math alone
                for (size_t i = 0; check && i < N; ++i) {
                  const double d = fabs((double)hout[i] - href[i]);
                  if (!(d <= 1e-10 + 5e-5 * fabs(href[i]))) ++bad;
                  if (href[i] > 1e-30) worst = std::max(worst, d / href[i]);
                }
                int abad = 0;
                for (int i = 0; i < R; ++i) abad += ham[i] != hamr[i];
                const int held = clusters_held(b.fn, cs, b.nt);
                const float t = timeit(launch, false);
                const float tr = timeit(launch, true);
                char buf[400];
                snprintf(buf, sizeof buf, "%-14s %3d %4d %6d %2d %2d %3d | %8.2f %8.2f %6.3f | bad=%zu amax_bad=%d maxrel=%.2e held=%d rows",
                         b.name, cs, D, D * cs, p1, p2, rev, t, tr, tr / t_copy_rot, bad, abad, worst, held);
                printf("%s\n", buf);
                res.push_back({buf, tr});
              }
      }
    }
    std::sort(res.begin(), res.end(), [](const Res& x, const Res& y) { return x.t < y.t; });
    printf("-- best 5 of %s (rotating sets; copy %.2f):\n", sh.name, t_copy_rot);
    for (size_t i = 0; i < std::min<size_t>(5, res.size()); ++i) printf("   %s\n", res[i].line.c_str());
    for (int s = 0; s < 2; ++s) {
      CK(cudaFree(lg[s]));
      CK(cudaFree(pr[s]));
    }
    CK(cudaFree(ref));
    CK(cudaFree(tp));
    CK(cudaFree(am));
    CK(cudaFree(amr));
  }
  return 0;
}

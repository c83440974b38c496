// Probe 5: K5's committed register kernel (cut from cuda/cost_draft_tree_kernel.cu by extract.py) against k5h.cuh,
// the same kernel holding only part of each thread's slice in registers and reading the rest again from L2, so that a
// two-wave launch's rows are all on chip at once; same process, rounds alternating, outputs checked against the
// committed kernel's (probas TOL rtol 5e-5 atol 1e-10, NaN where it has NaN, argmax exact).
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
#include <vector>
namespace cg = cooperative_groups;

#include "probe_common.cuh"

namespace base {
#include "k5_committed.cuh"
#include "k5l2.cuh"
#include "k5h.cuh"
}  // namespace base

using KFn = void (*)(const float*, const float*, int64_t, int, bool, float*, int64_t*, uint8_t*, int64_t, int64_t,
                     int64_t);

struct Form {
  const char* name;
  KFn fn;
  int nt, vecs;  // threads, vectors a thread (NL + NR)
};
struct Shape {
  const char* name;
  int B, G, V, cs;  // cs: the committed kernel's cluster (k5r_launch)
};

int main() {
  CK(cudaSetDevice(0));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const Form forms[] = {{"h_L6R5_t256_b6", base::k5h_kernel<6, 5, 256, 6>, 256, 11},
                        {"h_L7R4_t256_b6", base::k5h_kernel<7, 4, 256, 6>, 256, 11},
                        {"h_L5R6_t256_b6", base::k5h_kernel<5, 6, 256, 6>, 256, 11},
                        {"h_L6R5_t192_b8", base::k5h_kernel<6, 5, 192, 8>, 192, 11},
                        {"h_L4R4_t256_b8", base::k5h_kernel<4, 4, 256, 8>, 256, 8}};
  KFn committed[2] = {base::k5r14_kernel<8, false>, base::k5r14_kernel<8, true>};
  for (KFn f : committed) CK(cudaFuncSetAttribute(f, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  for (const Form& f : forms) {
    CK(cudaFuncSetAttribute(f.fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, f.fn));
    printf("%s: %d regs, %zu local bytes\n", f.name, fa.numRegs, fa.localSizeBytes);
  }
  const Shape shapes[] = {{"verify_B1_Q64_V128256", 1, 64, 128256, 16}, {"draft_B32_Q8_V32768", 32, 8, 32768, 4}};
  const int per_graph = 10, reps = 15, rounds = 3;
  for (const Shape& sh : shapes) {
    const int R = sh.B * sh.G;
    const int64_t V = sh.V;
    const size_t N = (size_t)R * V;
    K5Bufs buf(R, V, sh.B);
    {
      std::vector<float> h = normal_logits(N, 7 + R);
      h[3] = 1e4f; h[10] = -1e4f; h[(size_t)V + 5] = INFINITY; h[2 * (size_t)V + 7] = NAN;
      h[3 * (size_t)V + 9] = 40.f; h[3 * (size_t)V + 4000] = 40.f;                       // a tie
      for (int64_t v = 0; v < V; ++v) h[4 * (size_t)V + v] = -INFINITY;                  // an all -inf row
      for (int64_t v = 0; v < V / 2; ++v) h[5 * (size_t)V + v] = -INFINITY;              // -inf in a half
      std::vector<float> t = request_temps(sh.B);
      if (sh.B >= 8) t[5] = 0.0f;  // a greedy request
      buf.upload(h, t);
    }
    const int held = clusters_held(committed[1], sh.cs, 256);
    const int64_t pf = R > held ? std::max(1, held * 25 / 100) : 0, pf_from = held - pf;
    const int64_t cchunk = ((V + sh.cs - 1) / sh.cs + 3) / 4 * 4;
    auto launch = [&](KFn fn, int cs, int nt, int64_t chunk, int s) {
      launch_cluster(fn, dim3(cs, R), nt, cs, st, (const float*)buf.lg[s], (const float*)buf.tp, V, sh.G, true, buf.pr[s], buf.am[s], buf.gr,
                     chunk, pf, pf_from);
    };
    auto timeit = [&](auto f, bool rot) { return time_graph(st, f, rot, per_graph, reps); };
    std::vector<float> h0(N), h1(N);
    std::vector<int64_t> a0(R), a1(R);
    auto grab = [&](std::vector<float>& h, std::vector<int64_t>& a) { buf.take(h, a, st); };
    grab(h0, a0);
    launch(committed[pf > 0], sh.cs, 256, cchunk, 0);
    grab(h0, a0);
    printf("\n== %s: R=%d V=%lld; committed: cs=%d, %d clusters held, pf=%lld\n", sh.name, R, (long long)V, sh.cs, held,
           (long long)pf);
    struct Cfg {
      int f, cs;
    };
    std::vector<Cfg> cfgs;
    for (int f = 0; f < 5; ++f)
      for (int cs : {3, 4, 6, 8, 12, 16}) {
        const int64_t chunk = ((V + cs - 1) / cs + 3) / 4 * 4;
        if (chunk > (int64_t)forms[f].vecs * forms[f].nt * 4 || chunk * 2 <= (int64_t)forms[f].vecs * forms[f].nt * 4) continue;
        const int h = clusters_held(forms[f].fn, cs, forms[f].nt);
        if (h <= 0) continue;
        launch(forms[f].fn, cs, forms[f].nt, chunk, 0);
        grab(h1, a1);
        size_t bad = 0, nanbad = 0;
        for (size_t i = 0; i < N; ++i) {
          if (std::isnan(h0[i]) || std::isnan(h1[i])) {
            nanbad += std::isnan(h0[i]) != std::isnan(h1[i]);
            continue;
          }
          if (!(fabs((double)h1[i] - h0[i]) <= 1e-10 + 5e-5 * fabs((double)h0[i]))) ++bad;
        }
        int abad = 0;
        for (int i = 0; i < R; ++i) abad += a0[i] != a1[i];
        printf("%s cs=%d: %d clusters held (%s), against committed: tol_bad=%zu nan_bad=%zu argmax_bad=%d\n",
               forms[f].name, cs, h, h >= R ? "every row at once" : "two waves", bad, nanbad, abad);
        cfgs.push_back({f, cs});
      }
    for (int round = 0; round < rounds; ++round) {
      auto cp = [&](int s) { CK(cudaMemcpyAsync(buf.pr[s], buf.lg[s], N * 4, cudaMemcpyDeviceToDevice, st)); };
      printf("r%d %-24s %8.2f %8.2f\n", round, "copy", timeit(cp, false), timeit(cp, true));
      auto cm = [&](int s) { launch(committed[pf > 0], sh.cs, 256, cchunk, s); };
      printf("r%d %-24s %8.2f %8.2f\n", round, "committed", timeit(cm, false), timeit(cm, true));
      for (auto& c : cfgs) {
        const int64_t chunk = ((V + c.cs - 1) / c.cs + 3) / 4 * 4;
        auto f = [&](int s) { launch(forms[c.f].fn, c.cs, forms[c.f].nt, chunk, s); };
        char nm[64];
        snprintf(nm, sizeof nm, "%s_cs%d", forms[c.f].name, c.cs);
        printf("r%d %-24s %8.2f %8.2f\n", round, nm, timeit(f, false), timeit(f, true));
      }
    }
  }
  return 0;
}

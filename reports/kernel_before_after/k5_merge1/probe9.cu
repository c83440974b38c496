// Probe 9: K5's register kernel as 08010d1 committed it (its device code cut from cuda/cost_draft_tree_kernel.cu by
// ../k5_l2_two_pass/extract.py) against k5_merge1.cuh, the same with a cheaper merge of two partials: one exp a merge
// instead of two (the partial with the larger max keeps its sum, exp(0) = 1), the exp as ex2.approx.ftz there and in
// k5_scale, and the argmax order on 32-bit indices. Same launches as k5r_launch picks. Outputs: argmax exact; probas
// bitwise, and where not, whether every difference lies below 2^-126 and within the spec's TOL.
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

namespace base {
#include "k5_committed.cuh"
}  // namespace base
namespace fast {
#include "k5_merge1.cuh"
}  // namespace fast

#define K5R_SIG const float*, const float*, int64_t, int, bool, float*, int64_t*, uint8_t*, int64_t, int64_t, int64_t
using K5RFn = void (*)(K5R_SIG);

struct Shape {
  const char* name;
  int B, G, V, cs;  // cs: the register kernel's cluster as k5r_launch picks it (nv = 8, 256 threads, 4 blocks an SM)
};

int main() {
  CK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  K5RFn reg[2][2] = {{base::k5r14_kernel<8, false>, base::k5r14_kernel<8, true>},
                     {fast::k5r14_kernel<8, false>, fast::k5r14_kernel<8, true>}};
  for (auto& row : reg)
    for (auto f : row) {
      CK(cudaFuncSetAttribute(f, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
      cudaFuncAttributes fa;
      CK(cudaFuncGetAttributes(&fa, f));
      printf("register kernel: %d regs, %zu local bytes\n", fa.numRegs, fa.localSizeBytes);
    }
  const Shape shapes[] = {{"verify_B1_Q64_V128256", 1, 64, 128256, 16},
                          {"draft_B32_Q8_V32768", 32, 8, 32768, 4},
                          {"draft_B128_Q8_V32768", 128, 8, 32768, 4},
                          {"verify_B8_Q64_V128256", 8, 64, 128256, 16}};
  const int per_graph = 10, reps = 15, rounds = 3;
  for (const Shape& sh : shapes) {
    const int R = sh.B * sh.G, V = sh.V;
    const size_t N = (size_t)R * V;
    K5Bufs buf(R, V, sh.B);
    {
      std::vector<float> h = normal_logits(N, 99 + R);
      // edges for the division's fallback: +-1e4, tiny, zero, huge, inf, -inf in some rows
      h[3] = 1e4f; h[10] = -1e4f; h[20] = 1e-35f; h[21] = 0.0f; h[22] = -0.0f; h[23] = 3e38f;
      h[(size_t)V + 5] = INFINITY; h[2 * (size_t)V + 7] = -INFINITY; h[3 * (size_t)V + 9] = 1e-30f;
      // argmax edges: two NaNs of different payloads (the first wins), a tie at the max, an all -inf row, -0 / +0 as
      // the max of a row of negatives
      h[4 * (size_t)V + 100] = NAN; h[4 * (size_t)V + 50] = __builtin_nanf("0x123");
      h[5 * (size_t)V + 7] = 50.f; h[5 * (size_t)V + 3000] = 50.f;
      for (int v = 0; v < V; ++v) h[6 * (size_t)V + v] = -INFINITY;
      for (int v = 0; v < V; ++v) h[7 * (size_t)V + v] = -fabsf(h[7 * (size_t)V + v]) - 1.0f;
      h[7 * (size_t)V + 10] = -0.0f; h[7 * (size_t)V + 20] = 0.0f;
      // exp outputs below 2^-126 (d down to -99 at temp 0.7): the committed exp gives subnormals, the lean one 0
      for (int v = 0; v < V; ++v) h[8 * (size_t)V + v] = -0.7f * (float)(v % 100);
      // the lean division's per-thread fallback: entries of 1e-30 and 1e25 (outside [2^-64, 2^64]) in row 9
      h[9 * (size_t)V + 4] = 1e-30f; h[9 * (size_t)V + 1030] = 1e25f;
      std::vector<float> t = request_temps(sh.B);
      if (sh.B >= 8) { t[5] = 1e-6f; t[6] = 2e7f; t[7] = 0.0f; }
      buf.upload(h, t);
    }
    const int cs = sh.cs, nt = 256;
    const int64_t chunk = ((V + cs - 1) / cs + 3) / 4 * 4;
    const int held = clusters_held((const void*)reg[0][1], cs, nt);
    const int64_t pf = R > held ? std::max(1, held * 25 / 100) : 0, pf_from = held - pf;
    auto reg_launch = [&](int d, int s) {
      launch_cluster(reg[d][pf > 0], dim3(cs, R), nt, cs, st, (const float*)buf.lg[s], (const float*)buf.tp, (int64_t)V,
                     sh.G, true, buf.pr[s], buf.am[s], buf.gr, chunk, pf, pf_from);
    };
    auto timeit = [&](auto f, bool rot) { return time_graph(st, f, rot, per_graph, reps); };
    // bitwise: committed division against the fast one (same launch), register kernel and L2 kernel
    std::vector<float> h0(N), h1(N);
    std::vector<int64_t> a0(R), a1(R);
    auto grab = [&](std::vector<float>& h, std::vector<int64_t>& a) { buf.take(h, a, st); };
    auto same = [&]() {
      return memcmp(h0.data(), h1.data(), N * 4) == 0 && memcmp(a0.data(), a1.data(), R * 8) == 0;
    };
    grab(h0, a0);
    reg_launch(0, 0);
    grab(h0, a0);
    reg_launch(1, 0);
    grab(h1, a1);
    const bool reg_same = same();
    // where not bitwise equal: the entries that differ, those of them with either value >= 2^-126, and the spec's TOL
    size_t ndiff = 0, nbig = 0, ntol = 0, nanmis = 0;
    for (size_t j = 0; j < N; ++j) {
      const float p = h0[j], q = h1[j];
      if (std::isnan(p) || std::isnan(q)) { nanmis += std::isnan(p) != std::isnan(q); continue; }
      if (p == q && std::signbit(p) == std::signbit(q)) continue;
      ++ndiff;
      nbig += fabsf(p) >= 0x1p-126f || fabsf(q) >= 0x1p-126f;
      ntol += fabs((double)p - q) > 1e-10 + 5e-5 * fabs((double)p);
    }
    const bool am_same = memcmp(a0.data(), a1.data(), R * 8) == 0;
    size_t nan0 = 0;
    for (float x : h0) nan0 += std::isnan(x);
    printf("\n== %s: R=%d V=%d cs=%d held=%d clusters pf=%lld pf_from=%lld; merge1 outputs bitwise equal: %s; argmax "
           "equal: %s; probas differing %zu (of them >= 2^-126: %zu, outside TOL: %zu), NaN pattern mismatches %zu "
           "(NaN entries %zu)\n", sh.name, R, V, cs, held, (long long)pf, (long long)pf_from, reg_same ? "yes" : "NO",
           am_same ? "yes" : "NO", ndiff, nbig, ntol, nanmis, nan0);
    printf("%-32s %10s %10s\n", "form", "us", "us_rot");
    for (int round = 0; round < rounds; ++round) {
      const float tc = timeit([&](int s) { CK(cudaMemcpyAsync(buf.pr[s], buf.lg[s], N * 4, cudaMemcpyDeviceToDevice, st)); }, false);
      const float tcr = timeit([&](int s) { CK(cudaMemcpyAsync(buf.pr[s], buf.lg[s], N * 4, cudaMemcpyDeviceToDevice, st)); }, true);
      printf("r%d %-29s %10.2f %10.2f\n", round, "copy", tc, tcr);
      for (int d = 0; d < 2; ++d) {
        const float t = timeit([&](int s) { reg_launch(d, s); }, false);
        const float tr = timeit([&](int s) { reg_launch(d, s); }, true);
        printf("r%d %-29s %10.2f %10.2f\n", round, d ? "register_merge1" : "register_committed", t, tr);
      }
    }
  }
  return 0;
}

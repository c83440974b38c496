// Probe 6: how K5's committed register kernel (cut from cuda/cost_draft_tree_kernel.cu by extract.py) scales with the
// number of rows at deployment-8b's two shapes, its cluster held fixed (16 blocks at V = 128256, 4 at V = 32768, as
// k5r_launch picks at verify B = 1 and draft B = 32): where the time jumps is where a wave of clusters ends, which tells
// how many clusters the GPU really holds at once against cudaOccupancyMaxActiveClusters' answer.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
namespace cg = cooperative_groups;
#include "probe_common.cuh"

namespace base {
#include "k5_committed.cuh"
}  // namespace base

int main() {
  CK(cudaSetDevice(0));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  using KFn = void (*)(const float*, const float*, int64_t, int, bool, float*, int64_t*, uint8_t*, int64_t, int64_t,
                       int64_t);
  KFn k[2] = {base::k5r14_kernel<8, false>, base::k5r14_kernel<8, true>};
  for (KFn f : k) CK(cudaFuncSetAttribute(f, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  struct Shape {
    int V, G, cs;
    std::vector<int> rows;
  } shapes[] = {{128256, 64, 16, {8, 16, 24, 27, 28, 29, 30, 32, 33, 34, 40, 48, 56, 57, 60, 64}},
                {32768, 8, 4, {64, 120, 124, 125, 128, 132, 133, 136, 192, 240, 248, 249, 256}}};
  for (auto& sh : shapes) {
    const int held = clusters_held(k[1], sh.cs, 256);
    const int Rmax = sh.rows.back();
    K5Bufs buf(Rmax, sh.V, Rmax / sh.G);
    {
      std::vector<float> h((size_t)Rmax * sh.V);
      uint64_t x = 88172645463325252ull;
      for (auto& v : h) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        v = (float)((int64_t)(x % 20001) - 10000) * 1e-3f;  // [-10, 10]
      }
      buf.upload(h, std::vector<float>(Rmax / sh.G, 0.7f));
    }
    const int64_t chunk = ((sh.V + sh.cs - 1) / sh.cs + 3) / 4 * 4;
    printf("\n== V=%d, clusters of %d: cudaOccupancyMaxActiveClusters %d (%d blocks)\n", sh.V, sh.cs, held,
           held * sh.cs);
    printf("%5s %6s %10s %10s %10s\n", "rows", "waves", "us_rot", "us/row", "copy_rot");
    const char* only = getenv("PROBE6_ONLY");  // "V R": that launch alone, 3 times (ncu)
    for (int R : sh.rows) {
      if (only) {
        int oV = 0, oR = 0;
        if (sscanf(only, "%d %d", &oV, &oR) != 2 || oV != sh.V || oR != R) continue;
      }
      const int64_t pf = R > held ? std::max(1, held * 25 / 100) : 0, pf_from = held - pf;
      auto f = [&](int s) {
        launch_cluster(k[pf > 0], dim3(sh.cs, R), 256, sh.cs, st, (const float*)buf.lg[s], (const float*)buf.tp,
                       (int64_t)sh.V, sh.G, true, buf.pr[s], buf.am[s], buf.gr, chunk, pf, pf_from);
      };
      const size_t bytes = (size_t)R * sh.V * 4;
      auto c = [&](int s) { CK(cudaMemcpyAsync(buf.pr[s], buf.lg[s], bytes, cudaMemcpyDeviceToDevice, st)); };
      if (only) {
        for (int i = 0; i < 3; ++i) f(i & 1);
        CK(cudaStreamSynchronize(st));
        printf("ran V=%d R=%d 3 times\n", sh.V, R);
        continue;
      }
      const float t = time_graph(st, f, true, 10, 15);
      printf("%5d %6.2f %10.2f %10.3f %10.2f\n", R, (double)R / held, t, t / R, time_graph(st, c, true, 10, 15));
    }
  }
  return 0;
}

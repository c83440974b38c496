// K3 calculate_work_deltas (KERNELS.md §3.4): the per-request core, shared by work_deltas_top
// (row read from HBM) and the fused draft pipeline (row handed over on chip by K2).
#ifndef EAGLE4_WORK_DELTAS_CORE_HPP
#define EAGLE4_WORK_DELTAS_CORE_HPP

#include "eagle4_bounds.h"

namespace eagle4 {
namespace k3 {

// One request's [A | Bn] row (row[0..n0+K), on chip) -> delta[0] = base (sum of the best Vb'
// scores of A), delta[1..K] = marginal gain of each new score. Every f32 sum is a chain of single
// binary32 additions in the pinned order (EXACT parity). verify_num: Vb (D25: Vb' = max(Vb, 1)).
inline void work_deltas_request(const float row[], int n0, int K, int verify_num, float delta[]) {
#pragma HLS INLINE
  const int vb = verify_num < 1 ? 1 : verify_num;
  int kA = n0 < vb ? n0 : vb;  // entries of A in the kept set: always the prefix A[0..kA-1]
  int kB = 0;
  float base = 0.0f;
base_sum:  // sequential f32, left to right (pinned order; II bounded by the adder latency)
  for (int j = 0; j < kA; ++j) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 128
    base = base + row[j];
  }
  delta[0] = base;
marginal:
  for (int w = 1; w <= K; ++w) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 10
    const float x = row[n0 + w - 1];
    float d;
    if (kA + kB < vb) {  // a free slot
      d = x;
      kB += 1;
    } else if (kA > 0 && x > row[kA - 1]) {  // strictly greater: evict A[kA-1]; NaN never evicts
      d = x - row[kA - 1];
      kA -= 1;
      kB += 1;
    } else {
      d = 0.0f;
    }
    delta[w] = d;
  }
}

}  // namespace k3
}  // namespace eagle4

#endif  // EAGLE4_WORK_DELTAS_CORE_HPP

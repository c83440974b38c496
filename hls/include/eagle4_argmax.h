// The argmax order shared by K5 (argmax_ids) and K6 (fallback sample), KERNELS.md §5.4 step 1 and
// D19: NaN above every number (lowest index among NaNs), then the larger value, then the lower
// index (-0.0 == +0.0). A total order, so lanes can be merged in any order with the same result.
#ifndef EAGLE4_ARGMAX_H
#define EAGLE4_ARGMAX_H

#include <cstdint>

namespace eagle4 {

struct ArgBest {
  float val;
  int32_t idx;  // -1: empty (no element seen yet)
};

inline bool f32_isnan(float x) { return x != x; }

inline ArgBest argmax_better(ArgBest a, ArgBest b) {
  if (a.idx < 0) return b;
  if (b.idx < 0) return a;
  const bool na = f32_isnan(a.val), nb = f32_isnan(b.val);
  if (na || nb) {
    if (na && nb) return a.idx < b.idx ? a : b;
    return na ? a : b;
  }
  if (a.val > b.val) return a;
  if (b.val > a.val) return b;
  return a.idx < b.idx ? a : b;
}

}  // namespace eagle4

#endif  // EAGLE4_ARGMAX_H

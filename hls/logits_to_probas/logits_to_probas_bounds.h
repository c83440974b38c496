// Compile-time bounds of K5 logits_to_probas (KERNELS.md §0.4, §5), taken from the shared
// hls/include/eagle4_bounds.h (override there with -D) plus the kernel's own lane count.
#ifndef EAGLE4_LOGITS_TO_PROBAS_BOUNDS_H
#define EAGLE4_LOGITS_TO_PROBAS_BOUNDS_H

#include "eagle4_bounds.h"

namespace eagle4 {
namespace k5 {
constexpr int MAX_BATCH = ::eagle4::MAX_BATCH_SIZE;     // B
constexpr int MAX_ROWS_PER_REQ = ::eagle4::MAX_VERIFY;  // G = Q <= M (verify) or W <= 64 (draft)
constexpr int MAX_VOCAB = ::eagle4::MAX_VOCAB;          // V: one row is kept on chip (4*V bytes)
// Independent partial sums of the softmax denominator (§5.4 step 3): lane = v mod LANES, the
// order pinned by src/eagle4/kernels/logits_to_probas.py.
constexpr int LANES = 16;
static_assert(LANES == 16, "the reference pins 16 lanes");
static_assert(MAX_ROWS_PER_REQ >= ::eagle4::MAX_TREE_WIDTH, "G covers the draft use (W rows)");
}  // namespace k5
}  // namespace eagle4

#endif  // EAGLE4_LOGITS_TO_PROBAS_BOUNDS_H

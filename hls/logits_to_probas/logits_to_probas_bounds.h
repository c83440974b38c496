// Compile-time bounds of K5 logits_to_probas (KERNELS.md §0.4, §5).
// Kept local to the kernel; values agree with hls/include/eagle4_bounds.h where that defines them.
#ifndef EAGLE4_LOGITS_TO_PROBAS_BOUNDS_H
#define EAGLE4_LOGITS_TO_PROBAS_BOUNDS_H

namespace eagle4 {
namespace k5 {
constexpr int MAX_BATCH = 128;         // MAX_BATCH_SIZE
constexpr int MAX_ROWS_PER_REQ = 128;  // G = Q <= MAX_VERIFY (verify) or W <= 64 (draft)
constexpr int MAX_VOCAB = 153600;      // 152064 (largest target vocab) + margin; multiple of 128
constexpr int LANES = 16;              // independent partial sums of the softmax denominator (§5.4)
static_assert((LANES & (LANES - 1)) == 0, "LANES must be a power of two");
}  // namespace k5
}  // namespace eagle4

#endif  // EAGLE4_LOGITS_TO_PROBAS_BOUNDS_H

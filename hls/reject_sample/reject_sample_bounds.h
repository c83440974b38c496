// Compile-time bounds of K6 reject_sample (KERNELS.md §0.4, §6).
#ifndef EAGLE4_REJECT_SAMPLE_BOUNDS_H
#define EAGLE4_REJECT_SAMPLE_BOUNDS_H

namespace eagle4 {
namespace k6 {
constexpr int MAX_BATCH = 128;    // MAX_BATCH_SIZE
constexpr int MAX_VERIFY = 128;   // Q <= M = MAX_Verify_Num
constexpr int MAX_ACCEPT = 32;    // S = D_max + 1 (accept row length)
constexpr int MAX_VOCAB = 153600; // 152064 + margin
}  // namespace k6
}  // namespace eagle4

#endif  // EAGLE4_REJECT_SAMPLE_BOUNDS_H

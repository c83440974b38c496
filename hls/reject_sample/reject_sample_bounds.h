// Compile-time bounds of K6 reject_sample (KERNELS.md §0.4, §6), taken from the shared
// hls/include/eagle4_bounds.h (override there with -D).
#ifndef EAGLE4_REJECT_SAMPLE_BOUNDS_H
#define EAGLE4_REJECT_SAMPLE_BOUNDS_H

#include "eagle4_bounds.h"

namespace eagle4 {
namespace k6 {
constexpr int MAX_BATCH = ::eagle4::MAX_BATCH_SIZE;   // B
constexpr int MAX_VERIFY = ::eagle4::MAX_VERIFY;      // Q <= M
constexpr int MAX_ACCEPT = ::eagle4::MAX_ACCEPT_LEN;  // S = D_max + 1
constexpr int MAX_VOCAB = ::eagle4::MAX_VOCAB;        // V: the final row is kept on chip
static_assert(MAX_VERIFY <= 32767, "local tree links are stored as int16");
// Phases B/C stream the final row in chunks of LANES consecutive floats (one 512-bit beat).
constexpr int LANES = 16;
constexpr int MAX_CHUNKS = (MAX_VOCAB + LANES - 1) / LANES;
// Partial argmax candidates per lane (interleaved by chunk) for the R_q = 0 fallback.
constexpr int ARG_DEPTH = 8;
}  // namespace k6
}  // namespace eagle4

#endif  // EAGLE4_REJECT_SAMPLE_BOUNDS_H

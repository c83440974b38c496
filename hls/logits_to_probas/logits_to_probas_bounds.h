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
// Datapath width: one chunk = LANES consecutive f32 of a row = one 512-bit AXI beat per cycle.
// Lane l of a chunk holds v with v mod LANES == l: the lane assignment that
// src/eagle4/kernels/logits_to_probas.py pins for the softmax denominator (§5.4 step 3).
constexpr int LANES = 16;
static_assert(LANES == 16, "the reference pins 16 lanes");
// Each lane's partial sum is split into ACC_DEPTH interleaved sub-accumulators (chunk c adds into
// sub-accumulator c mod ACC_DEPTH), so that consecutive chunks never wait for one f32 adder
// (its latency is 4-8 cycles at 300 MHz): the exp/sum loop keeps II = 1 at 16 elements per cycle.
// The sub-accumulators of a lane are then added in ascending order, then the 16 lanes by the
// reference's neighbours-first tree. ACC_DEPTH = 1 is exactly the reference's association
// (but limits that loop to one chunk per adder latency); probas are TOL-compared either way.
#ifndef EAGLE4_K5_ACC_DEPTH
#define EAGLE4_K5_ACC_DEPTH 8
#endif
constexpr int ACC_DEPTH = EAGLE4_K5_ACC_DEPTH;
static_assert(ACC_DEPTH >= 1 && (ACC_DEPTH & (ACC_DEPTH - 1)) == 0, "ACC_DEPTH must be a power of two");
static_assert(MAX_ROWS_PER_REQ >= ::eagle4::MAX_TREE_WIDTH, "G covers the draft use (W rows)");
}  // namespace k5
}  // namespace eagle4

#endif  // EAGLE4_LOGITS_TO_PROBAS_BOUNDS_H

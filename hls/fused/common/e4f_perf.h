// Lanes and initiation intervals of the fused designs' hot loops, as named constants, and the C-sim trip
// counter the cycle model (eagle4.budget.cycles) reads.
//
// Every counted loop is written
//     for (...) {
//   #pragma HLS PIPELINE II = E4F_II_ID
//       E4F_TRIPS(ID, 1);          // C-sim: one iteration of loop ID (nothing in synthesis)
//       [#pragma HLS UNROLL factor = E4F_LANES_ID   on its lane loop, when E4F_LANES_ID > 1]
// so the model's cycles (trips x II / lanes) use the very constants the pragmas ask Vitis for; a test
// (tests/harness/test_hls_cycles.py) fails when a pragma and its constant disagree. Where a synthesis
// report exists, its II replaces the constant (eagle4.budget.cycles says which).
//
// The values are what the code does: lanes 1 where no loop is unrolled; the LM head is a MAC array whose
// logits are each a sequential f32 sum (KERNELS.md §0.2: no reassociation). Not counted (the model is a lower bound): the
// draft top-K insertion scan, K6's sampling passes and the per-request loops of the K1-K4 cores.
#ifndef E4F_PERF_H
#define E4F_PERF_H

#include <cstdint>

// loop ids
#define E4F_LOOPS(X) \
  X(LMH_HLOAD)       /* LM head: frontier hidden rows HBM -> on-chip, one element per iteration */ \
  X(LMH_WLOAD)       /* LM head: one weight row HBM -> on-chip */                                  \
  X(LMH_MAC)         /* LM head: one multiply-add of a logit's dot product */                      \
  X(ROW_LOAD)        /* a draft logits row -> the row buffer (tile or spill) */                     \
  X(VROW_LOAD)       /* a verify logits row HBM -> the row buffer, full 512-bit beats */             \
  X(ROW_AMAX)        /* K5 row statistics: argmax pass */                                           \
  X(ROW_MAX)         /* K5 row statistics: max pass */                                              \
  X(ROW_EXP)         /* K5 row statistics: exp-sum pass (16 partial sums) */                        \
  X(ROW_PROBA)       /* softmax probability of one element */

#define E4F_II_LMH_HLOAD 1
#define E4F_LANES_LMH_HLOAD 1
#define E4F_II_LMH_WLOAD 1
#define E4F_LANES_LMH_WLOAD 64  // one 512-bit beat of int8 weights per cycle (masked tail)
// The LM head's MAC array: E4F_LMH_RT hidden rows x E4F_LMH_VT vocabulary rows per cycle, over
// E4F_LMH_IL sub-tiles visited in turn so that an accumulator is revisited every E4F_LMH_IL cycles
// (>= the f32 adder's latency): II = 1 with each logit still one sequential sum over h.
#define E4F_LMH_RT 4
#define E4F_LMH_VT 8
#define E4F_LMH_IL 4
// II 1: the weight tile is partitioned by rows into E4F_LMH_VT banks of 512-bit words and hid_bits by rows
// into E4F_LMH_RT banks (draft_pipeline.cpp), so one iteration reads one word of each bank.
#define E4F_II_LMH_MAC 1
#define E4F_LANES_LMH_MAC 32  // E4F_LMH_RT * E4F_LMH_VT
#define E4F_II_ROW_LOAD 1
#define E4F_LANES_ROW_LOAD 1
#define E4F_II_VROW_LOAD 1
#define E4F_LANES_VROW_LOAD 16  // one 512-bit beat of f32 logits per cycle (masked tail)
// K5 row statistics (e4f_stages.hpp row_stats): E4F_ROW_LANES = 16 lanes, combined exactly
#define E4F_II_ROW_AMAX 1
#define E4F_LANES_ROW_AMAX 16
#define E4F_II_ROW_MAX 1
#define E4F_LANES_ROW_MAX 16
#define E4F_II_ROW_EXP 4  // each lane's partial sum is carried: the f32 adder's latency
#define E4F_LANES_ROW_EXP 16
#define E4F_II_ROW_PROBA 1
#define E4F_LANES_ROW_PROBA 1

static_assert(E4F_LANES_LMH_MAC == E4F_LMH_RT * E4F_LMH_VT, "the MAC array's lanes are its rows x vocabulary rows");

namespace e4f {
namespace perf {
#define E4F_LOOP_ENUM(id) L_##id,
enum Loop : int { E4F_LOOPS(E4F_LOOP_ENUM) N_LOOPS };
#undef E4F_LOOP_ENUM
}  // namespace perf
}  // namespace e4f

#if defined(EAGLE4_CSIM_COUNTERS) && !defined(EAGLE4_SYNTHESIS)
namespace e4f {
namespace perf {
inline uint64_t* trips() {
  static uint64_t t[N_LOOPS] = {};
  return t;
}
inline void reset() {
  for (int i = 0; i < N_LOOPS; ++i) trips()[i] = 0;
}
}  // namespace perf
}  // namespace e4f
#define E4F_TRIPS(id, n) (::e4f::perf::trips()[::e4f::perf::L_##id] += static_cast<uint64_t>(n))
#else
namespace e4f {
namespace perf {
inline void reset() {}
}  // namespace perf
}  // namespace e4f
#define E4F_TRIPS(id, n) ((void)0)
#endif

#endif  // E4F_PERF_H

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
// The values are what the code does: lanes 1 where no loop is unrolled. Not counted (the model is a lower bound):
// K6's sampling passes, the per-request loops of the K1-K4 cores, and a row's tail past its last full beat.
#ifndef E4F_PERF_H
#define E4F_PERF_H

#include <cstdint>

// loop ids
#define E4F_LOOPS(X) \
  X(LMH_HLOAD)       /* LM head: frontier hidden rows HBM -> on-chip, one 512-bit beat per iteration */ \
  X(LMH_WLOAD)       /* LM head: one 512-bit beat of every weight port HBM -> the ping-pong tile */  \
  X(LMH_MAC)         /* LM head: E4F_LMH_VP words of 64 weights x E4F_LMH_RT hidden rows */          \
  X(LMH_RED)         /* LM head: the lane reduction tree + row scale of E4F_LANES_LMH_RED logits */  \
  X(ROW_LOAD)        /* a draft logits row -> the row buffer (tile or spill) */                     \
  X(VROW_LOAD)       /* a verify logits row HBM -> the row buffer, full 512-bit beats */             \
  X(ROW_AMAX)        /* K5 row statistics: argmax pass */                                           \
  X(ROW_MAX)         /* K5 row statistics: max pass */                                              \
  X(ROW_EXP)         /* K5 row statistics: exp-sum pass (16 partial sums) */                        \
  X(ROW_PROBA)       /* softmax probability of one element */                                       \
  X(TOPK_SCAN)       /* draft top-K: 16 lane-local sorted lists, one insertion per lane and cycle */  \
  X(TOPK_MERGE)      /* draft top-K: one pick of the merge of the lanes' lists */

// Loops that run beside others (ping-pong buffers): X(producer, consumer). The producer's iterations run
// while its consumers work on the other buffer, except those counted with E4F_EXPOSED on (the first
// tile, which nothing overlaps); the cycle model (eagle4.budget.cycles) charges
//   max(producer - producer exposed, sum of its consumers) + producer exposed.
#define E4F_PINGPONG(X) X(LMH_WLOAD, LMH_MAC) X(LMH_WLOAD, LMH_RED)

// ---- the draft LM head (draft_pipeline.cpp stage_lm_head) ----
// A MAC array over tiled weights streamed through E4F_LMH_PORTS m_axi ports, each a 512-bit bundle of its
// own (striped over its own HBM pseudo-channels by the xclbin's connectivity): port p holds the rows
// v = p (mod E4F_LMH_PORTS) of the LM head, so a tile of E4F_LMH_IL rows is E4F_LMH_IL / E4F_LMH_PORTS
// contiguous rows of every port, read side by side. A beat is E4F_LMH_BEAT port elements: 64 int8 weights
// or 64 bytes of packed int4 (128 weights, the synthesized precision: [fpga.fused] lm_head_dtype).
// Every cycle the MAC array takes one word of E4F_LMH_LANES weights (h = 64 j .. 64 j + 63) of each of
// E4F_LMH_VP vocabulary rows and meets them with the same 64 hidden elements of E4F_LMH_RT frontier rows:
// VP x RT x 64 multiply-adds (at int4, the ports deliver exactly VP words per cycle). Each (vocabulary row,
// hidden row) keeps E4F_LMH_LANES partial sums (lane k sums h = k, k + 64, ... in ascending order) reduced
// by a fixed pairwise tree (e4f_stages.hpp lm_tree): the stage library's lm_dot sums in the same order, so
// the fused and unfused chains are bit-exact. The tile's E4F_LMH_IL rows are visited VP at a time, so an
// accumulator is revisited every E4F_LMH_IL / E4F_LMH_VP cycles (>= the f32 adder's latency): II 1.
// Weight tiles are double-buffered: tile t + 1 is read from HBM while tile t's MACs run (E4F_PINGPONG).
#define E4F_LMH_PORTS 4   // weight ports (m_axi bundles), one beat each per cycle
#define E4F_LMH_BEAT 64   // port elements per 512-bit beat (int8 weights or packed int4 bytes)
#define E4F_LMH_LANES 64  // h lanes of one MAC-array word
#define E4F_LMH_VP 8      // vocabulary rows per MAC-array cycle (= ports x 2 int4 words per beat)
#define E4F_LMH_RT 8      // hidden rows per cycle: 8 x 8 x 64 = 4096 MACs per cycle
#define E4F_LMH_IL 32     // vocabulary rows per weight tile: VP x 4 (the accumulator's revisit distance)
#define E4F_II_LMH_HLOAD 1
#define E4F_LANES_LMH_HLOAD 32  // one 512-bit beat of bf16 hidden elements per cycle (masked tail)
#define E4F_II_LMH_WLOAD 1
#define E4F_LANES_LMH_WLOAD 64  // E4F_LMH_BEAT elements of every weight port per cycle (a beat of each, side by side)
// II 1: the tile is a memory of 64-lane words partitioned by rows into E4F_LMH_VP banks (one word of each
// per cycle), hid_bits holds 64-element words partitioned by rows into E4F_LMH_RT banks, the partial sums
// are E4F_LMH_VP x E4F_LMH_RT x E4F_LMH_LANES banks of E4F_LMH_IL / E4F_LMH_VP words.
#define E4F_II_LMH_MAC 1
#define E4F_LANES_LMH_MAC 4096  // E4F_LMH_VP * E4F_LMH_RT * E4F_LMH_LANES
#define E4F_II_LMH_RED 1
#define E4F_LANES_LMH_RED 8  // 8 trees of 63 f32 adders: 8 logits of one hidden row per cycle
#define E4F_II_ROW_LOAD 1
#define E4F_LANES_ROW_LOAD 16  // 16 logits per cycle: 8 banks of the tile's 64-bit words, or a 512-bit spill beat
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
#define E4F_LANES_ROW_PROBA 16  // element-wise over a row buffer partitioned cyclically by 16
// draft top-K (e4f_stages.hpp topk_row): 16 lanes over the row buffer, each a K-entry sorted list in
// registers compared with the new element at once (one insertion per cycle); the merge picks one of K per cycle
#define E4F_II_TOPK_SCAN 1
#define E4F_LANES_TOPK_SCAN 16
#define E4F_II_TOPK_MERGE 1
#define E4F_LANES_TOPK_MERGE 1

static_assert(E4F_LANES_LMH_MAC == E4F_LMH_VP * E4F_LMH_RT * E4F_LMH_LANES,
              "the MAC array's lanes are its vocabulary rows x hidden rows x h lanes");
static_assert(E4F_LANES_LMH_WLOAD == E4F_LMH_BEAT, "a weight-load cycle is one beat of each weight port");
static_assert(E4F_LMH_VP == 2 * E4F_LMH_PORTS && E4F_LMH_BEAT == E4F_LMH_LANES,
              "balanced at int4: a beat of packed int4 is two MAC-array words, one per port and row");
static_assert(E4F_LMH_IL % E4F_LMH_VP == 0 && E4F_LMH_IL / E4F_LMH_VP >= 4 && E4F_LMH_IL % E4F_LMH_PORTS == 0,
              "a tile is whole MAC cycles, an accumulator waits >= 4 cycles, every port reads whole rows");
static_assert(E4F_LMH_LANES % E4F_LANES_LMH_HLOAD == 0, "a hidden word is whole 512-bit beats");
static_assert(E4F_LMH_IL % E4F_LANES_LMH_RED == 0 && E4F_LANES_LMH_RED % 2 == 0,
              "the trees write whole words (two logits) of one row");
static_assert((E4F_LMH_LANES & (E4F_LMH_LANES - 1)) == 0, "the reduction tree halves the lanes");

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
// the trips counted while no consumer runs beside the loop (the ping-pong's first tile)
inline uint64_t* exposed() {
  static uint64_t t[N_LOOPS] = {};
  return t;
}
inline bool& exposing() {
  static bool on = false;
  return on;
}
inline void count(int id, uint64_t n) {
  trips()[id] += n;
  if (exposing()) exposed()[id] += n;
}
inline void reset() {
  for (int i = 0; i < N_LOOPS; ++i) trips()[i] = exposed()[i] = 0;
  exposing() = false;
}
}  // namespace perf
}  // namespace e4f
#define E4F_TRIPS(id, n) ::e4f::perf::count(::e4f::perf::L_##id, static_cast<uint64_t>(n))
#define E4F_EXPOSED(on) (::e4f::perf::exposing() = (on))
#else
namespace e4f {
namespace perf {
inline void reset() {}
}  // namespace perf
}  // namespace e4f
#define E4F_TRIPS(id, n) ((void)0)
#define E4F_EXPOSED(on) ((void)0)
#endif

#endif  // E4F_PERF_H

// K5 convert_logits_to_probas (KERNELS.md §5.4).
//
// The row is streamed in chunks of LANES = 16 consecutive floats (one 512-bit beat; the unrolled
// consecutive reads let Vitis widen the m_axi port and burst), lane l = v mod 16. Every port access
// of a pipelined loop is unconditional: the V / 16 whole beats of a row in one loop, the V mod 16
// lanes of its last beat in a short tail loop (a lane test `v < V` around a port access would keep
// Vitis from inferring the burst). Per row r
// (request b = r / G):
//   read pass  (the only HBM read of the row): argmax of the raw logits in LANES x ACC_DEPTH
//              partial (value, index) candidates merged by the torch.argmax rule (a total order,
//              so the merge order does not matter); for sampling rows x_v = logits / temp (IEEE
//              division) goes to the on-chip row buffer and the partial maxima of x are kept;
//   exp pass   (on chip): e_v = exp(x_v - m) back into the row buffer and into the partitioned
//              accumulator array acc[c mod ACC_DEPTH][v mod 16] (chunk c); then each lane's
//              sub-accumulators in ascending order, then the neighbours-first binary tree over the
//              16 lanes pinned by src/eagle4/kernels/logits_to_probas.py (see
//              logits_to_probas_bounds.h: ACC_DEPTH = 1 is exactly the reference's association);
//   write pass probas = e_v / s (IEEE division), 16 per cycle.
// Greedy rows (temp < 1e-6f in binary32: negative and zero included) only need the read pass and
// a one-hot write. write_probas = false leaves probas untouched (argmax and is_greedy only).
// NaN / +inf / all -inf rows need no special case: IEEE propagation gives a NaN row (§5.4 step 4).
// Not done here (a dataflow refinement): overlapping row r's exp/write passes with row r+1's read
// pass through a ping-pong pair of row buffers.
#include "eagle4_argmax.h"
#include "logits_to_probas.hpp"

#include <cmath>
#ifdef __SYNTHESIS__
#include "hls_math.h"
#endif

// Dependence distance of the sub-accumulators (= ACC_DEPTH chunks) as an HLS pragma argument.
#define K5_PRAGMA(x) _Pragma(#x)
#define K5_INTER_DISTANCE(var, dist) K5_PRAGMA(HLS DEPENDENCE variable=var type=inter distance=dist dependent=true)

namespace {

using namespace eagle4::k5;

// 32-bit row and element indices; only the flat offset of a row (R * V) needs 64 bits.
static_assert(int64_t(MAX_BATCH) * MAX_ROWS_PER_REQ <= INT32_MAX, "row index r fits 32 bits");
static_assert(int64_t(MAX_VOCAB) + LANES <= INT32_MAX, "element index v fits 32 bits");


inline float k5_exp(float x) {
#ifdef __SYNTHESIS__
  return hls::exp(x);
#else
  return std::exp(x);
#endif
}

// Candidate of the argmax (index -1: empty).
using K5Arg = eagle4::ArgBest;  // idx -1: empty

// torch.argmax order: NaN above every number (lowest index among NaNs), then the larger value,
// then the lower index (-0.0 == +0.0). A total order: merging in any order gives the same result.
inline K5Arg k5_better(K5Arg a, K5Arg b) { return eagle4::argmax_better(a, b); }

// One element of the read pass (lane l of chunk c, v = c*16 + l): its partial argmax candidate and, for
// sampling rows, x/temp into the row buffer and the lane's partial maximum. Ascending v per partial: the
// candidate is replaced unless it is NaN or x is not larger.
inline void k5_read_lane(float x, int v, float temp, bool sampling, K5Arg& arg, float& xmax, float* row_buf) {
#pragma HLS INLINE
  if (arg.idx < 0 || (!eagle4::f32_isnan(arg.val) && (eagle4::f32_isnan(x) || x > arg.val))) {
    arg.val = x;
    arg.idx = v;
  }
  if (sampling) {
    const float xt = x / temp;
    row_buf[v] = xt;
    if (xt > xmax) xmax = xt;  // NaN is skipped: its row is NaN anyway
  }
}

}  // namespace

void logits_to_probas_top(PORT(const float) logits, PORT(const float) temperatures, PORT(float) probas,
                          PORT(int64_t) argmax_ids, PORT(uint8_t) is_greedy, int B, int G, int V,
                          bool write_probas) {
#pragma HLS INTERFACE m_axi port=logits offset=slave bundle=gmem0 max_widen_bitwidth=512 max_read_burst_length=64 depth=4096
#pragma HLS INTERFACE m_axi port=probas offset=slave bundle=gmem1 max_widen_bitwidth=512 max_write_burst_length=64 depth=4096
#pragma HLS INTERFACE m_axi port=temperatures offset=slave bundle=gmem2 depth=128
#pragma HLS INTERFACE m_axi port=argmax_ids offset=slave bundle=gmem2 depth=1024
#pragma HLS INTERFACE m_axi port=is_greedy offset=slave bundle=gmem2 depth=128
#pragma HLS INTERFACE s_axilite port=B
#pragma HLS INTERFACE s_axilite port=G
#pragma HLS INTERFACE s_axilite port=V
#pragma HLS INTERFACE s_axilite port=write_probas
#pragma HLS INTERFACE s_axilite port=return

  // One row of x_v, then of e_v: 16 banks so that a whole chunk is read or written per cycle
  // (4 * MAX_VOCAB bytes: URAM).
  static float row_buf[MAX_VOCAB];
#pragma HLS ARRAY_PARTITION variable=row_buf type=cyclic factor=16
#pragma HLS BIND_STORAGE variable=row_buf type=ram_2p impl=uram

  const float kGreedyTemp = 1e-6f;  // binary32 0x358637BD (§5.3, D17)
  const int n_chunks = (V + LANES - 1) / LANES;  // the on-chip exp pass (a masked tail is free on chip)
  const int n_full = V / LANES;                   // whole 512-bit beats of a row
  const int n_tail = V - n_full * LANES;          // lanes of the last, partial beat (0..15)
  const int d_tail = n_full & (ACC_DEPTH - 1);    // the tail beat is chunk n_full

batch_loop:
  for (int b = 0; b < B; ++b) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=128
    const float temp = temperatures[b];
    const bool greedy = temp < kGreedyTemp;
    is_greedy[b] = greedy ? uint8_t(1) : uint8_t(0);
    const bool sampling = !greedy && write_probas;

  row_loop:
    for (int g = 0; g < G; ++g) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=128
      const int r = b * G + g;  // < MAX_BATCH * MAX_ROWS_PER_REQ (static_assert above)
      const int64_t base = int64_t(r) * V;  // 64-bit: R * V reaches 2^32 at the bounds

      K5Arg part_arg[ACC_DEPTH][LANES];
      float part_xmax[ACC_DEPTH][LANES];
#pragma HLS ARRAY_PARTITION variable=part_arg complete dim=0
#pragma HLS ARRAY_PARTITION variable=part_xmax complete dim=0
    init_parts:
      for (int d = 0; d < ACC_DEPTH; ++d) {
#pragma HLS UNROLL
        for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
          part_arg[d][l].val = 0.0f;
          part_arg[d][l].idx = -1;
          part_xmax[d][l] = -INFINITY;
        }
      }

      // ---- read pass: whole beats, every lane read unconditionally (one burst of n_full beats), then the
      // tail beat's valid lanes; a lane's update is the same function in both loops (chunk c, lane l)
    read_chunks:
      for (int c = 0; c < n_full; ++c) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=9504
        K5_INTER_DISTANCE(part_arg, EAGLE4_K5_ACC_DEPTH)
        K5_INTER_DISTANCE(part_xmax, EAGLE4_K5_ACC_DEPTH)
        const int d = c & (ACC_DEPTH - 1);
      read_lanes:
        for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
          const int v = c * LANES + l;
          k5_read_lane(logits[base + v], v, temp, sampling, part_arg[d][l], part_xmax[d][l], row_buf);
        }
      }
    read_tail:
      for (int l = 0; l < n_tail; ++l) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=15
        const int v = n_full * LANES + l;
        k5_read_lane(logits[base + v], v, temp, sampling, part_arg[d_tail][l], part_xmax[d_tail][l], row_buf);
      }

      K5Arg best = part_arg[0][0];
      float m = part_xmax[0][0];
    merge_parts:
      for (int d = 0; d < ACC_DEPTH; ++d) {
#pragma HLS UNROLL
        for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
          best = k5_better(best, part_arg[d][l]);
          if (part_xmax[d][l] > m) m = part_xmax[d][l];
        }
      }
      argmax_ids[r] = int64_t(best.idx);

      if (!write_probas) continue;

      if (greedy) {
      onehot_chunks:
        for (int c = 0; c < n_full; ++c) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=9504
          for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
            const int v = c * LANES + l;
            probas[base + v] = (v == best.idx) ? 1.0f : 0.0f;
          }
        }
      onehot_tail:
        for (int l = 0; l < n_tail; ++l) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=15
          const int v = n_full * LANES + l;
          probas[base + v] = (v == best.idx) ? 1.0f : 0.0f;
        }
        continue;
      }

      // ---- exp pass (on chip)
      float acc[ACC_DEPTH][LANES];
#pragma HLS ARRAY_PARTITION variable=acc complete dim=0
    init_acc:
      for (int d = 0; d < ACC_DEPTH; ++d) {
#pragma HLS UNROLL
        for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
          acc[d][l] = 0.0f;
        }
      }
    exp_chunks:
      for (int c = 0; c < n_chunks; ++c) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=9504
        K5_INTER_DISTANCE(acc, EAGLE4_K5_ACC_DEPTH)
        const int d = c & (ACC_DEPTH - 1);
      exp_lanes:
        for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
          const int v = c * LANES + l;
          if (v < V) {
            const float e = k5_exp(row_buf[v] - m);
            row_buf[v] = e;
            acc[d][l] = acc[d][l] + e;
          }
        }
      }
      // each lane: its sub-accumulators in ascending order
      float lane_sum[LANES];
#pragma HLS ARRAY_PARTITION variable=lane_sum complete
    fold_depth:
      for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
        float s_l = acc[0][l];
        for (int d = 1; d < ACC_DEPTH; ++d) {
#pragma HLS UNROLL
          s_l = s_l + acc[d][l];
        }
        lane_sum[l] = s_l;
      }
      // 16 lanes: balanced tree, neighbours first ((s0+s1)+(s2+s3)) + ..., as the reference pins it
    reduce_tree:
      for (int w = 1; w < LANES; w *= 2) {
#pragma HLS UNROLL
        for (int l = 0; l + w < LANES; l += 2 * w) {
#pragma HLS UNROLL
          lane_sum[l] = lane_sum[l] + lane_sum[l + w];
        }
      }
      const float s = lane_sum[0];

      // ---- write pass: whole beats unconditionally, then the tail beat's valid lanes
    write_chunks:
      for (int c = 0; c < n_full; ++c) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=9504
        for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
          const int v = c * LANES + l;
          probas[base + v] = row_buf[v] / s;
        }
      }
    write_tail:
      for (int l = 0; l < n_tail; ++l) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=15
        const int v = n_full * LANES + l;
        probas[base + v] = row_buf[v] / s;
      }
    }
  }
}

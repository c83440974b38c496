// K5 convert_logits_to_probas (KERNELS.md §5.4).
//
// Per row r (request b = r / G):
//   read pass  (logits read once from HBM, 1 element/cycle): argmax of the raw logits in LANES
//              interleaved lanes (lane = v mod LANES) merged by the torch.argmax rule; for
//              sampling rows x_v = logits / temp (IEEE division) goes to the on-chip row buffer
//              and the lane maxima of x are tracked;
//   exp pass   (on-chip): e_v = exp(x_v - m) back into the row buffer, accumulated into LANES
//              partial sums acc[v mod LANES] (each lane sequential in ascending v), then the fixed
//              neighbours-first binary tree pinned by src/eagle4/kernels/logits_to_probas.py;
//   write pass probas = e_v / s (IEEE division).
// Greedy rows (temp < 1e-6f in binary32, negative and -0 included) only need the read pass and
// a one-hot write. write_probas = false leaves probas untouched.
#include "logits_to_probas.hpp"

#include <cmath>
#ifdef __SYNTHESIS__
#include "hls_math.h"
#endif

namespace {

using namespace eagle4::k5;

inline bool k5_isnan(float x) { return x != x; }

inline float k5_exp(float x) {
#ifdef __SYNTHESIS__
  return hls::exp(x);
#else
  return std::exp(x);
#endif
}

// Candidate of the argmax (index -1: empty lane).
struct K5Arg {
  float val;
  int32_t idx;
};

// torch.argmax order: NaN above every number (first NaN wins), then larger value, then lower index.
// `b` must not precede `a` in index order when both are valid and equal (callers merge in order).
inline K5Arg k5_better(K5Arg a, K5Arg b) {
  if (a.idx < 0) return b;
  if (b.idx < 0) return a;
  const bool na = k5_isnan(a.val), nb = k5_isnan(b.val);
  if (na || nb) {
    if (na && nb) return a.idx < b.idx ? a : b;
    return na ? a : b;
  }
  if (a.val > b.val) return a;
  if (b.val > a.val) return b;
  return a.idx < b.idx ? a : b;
}

}  // namespace

void logits_to_probas_top(PORT(const float) logits, PORT(const float) temperatures, PORT(float) probas,
                          PORT(int64_t) argmax_ids, PORT(uint8_t) is_greedy, int B, int G, int V,
                          bool write_probas) {
#pragma HLS INTERFACE m_axi port=logits offset=slave bundle=gmem0 max_read_burst_length=256 depth=1024
#pragma HLS INTERFACE m_axi port=probas offset=slave bundle=gmem1 max_write_burst_length=256 depth=1024
#pragma HLS INTERFACE m_axi port=temperatures offset=slave bundle=gmem2 depth=128
#pragma HLS INTERFACE m_axi port=argmax_ids offset=slave bundle=gmem2 depth=1024
#pragma HLS INTERFACE m_axi port=is_greedy offset=slave bundle=gmem2 depth=128
#pragma HLS INTERFACE s_axilite port=B
#pragma HLS INTERFACE s_axilite port=G
#pragma HLS INTERFACE s_axilite port=V
#pragma HLS INTERFACE s_axilite port=write_probas
#pragma HLS INTERFACE s_axilite port=return

  // One row of x_v, then of e_v (608 KB at V = 152k: URAM).
  static float row_buf[MAX_VOCAB];
#pragma HLS BIND_STORAGE variable=row_buf type=ram_2p impl=uram

  const float kGreedyTemp = 1e-6f;  // binary32 0x358637BD (§5.3, D17)

batch_loop:
  for (int b = 0; b < B; ++b) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=128
    const float temp = temperatures[b];
    const bool greedy = temp < kGreedyTemp;
    is_greedy[b] = greedy ? uint8_t(1) : uint8_t(0);

  row_loop:
    for (int g = 0; g < G; ++g) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=128
      const int64_t r = int64_t(b) * G + g;
      const int64_t base = r * int64_t(V);
      const bool sampling = !greedy && write_probas;

      K5Arg lane_arg[LANES];
      float lane_xmax[LANES];
#pragma HLS ARRAY_PARTITION variable=lane_arg complete
#pragma HLS ARRAY_PARTITION variable=lane_xmax complete
    init_lanes:
      for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
        lane_arg[l].val = 0.0f;
        lane_arg[l].idx = -1;
        lane_xmax[l] = -INFINITY;
      }

      // Read pass: the only HBM read of the row.
    read_loop:
      for (int v = 0; v < V; ++v) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=152064
#pragma HLS DEPENDENCE variable=lane_arg inter distance=16 true
#pragma HLS DEPENDENCE variable=lane_xmax inter distance=16 true
        const int l = v & (LANES - 1);
        const float x = logits[base + v];
        // Ascending v within a lane: replace unless the current best is NaN, or x is not larger.
        const K5Arg cur = lane_arg[l];
        if (cur.idx < 0 || (!k5_isnan(cur.val) && (k5_isnan(x) || x > cur.val))) {
          lane_arg[l].val = x;
          lane_arg[l].idx = v;
        }
        if (sampling) {
          const float xt = x / temp;
          row_buf[v] = xt;
          if (xt > lane_xmax[l]) lane_xmax[l] = xt;  // NaN never becomes the max (NaN row anyway)
        }
      }

      K5Arg best = lane_arg[0];
    merge_arg:
      for (int l = 1; l < LANES; ++l) {
#pragma HLS UNROLL
        best = k5_better(best, lane_arg[l]);
      }
      argmax_ids[r] = int64_t(best.idx);

      if (!write_probas) continue;

      if (greedy) {
      onehot_loop:
        for (int v = 0; v < V; ++v) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=152064
          probas[base + v] = (v == best.idx) ? 1.0f : 0.0f;
        }
        continue;
      }

      float m = lane_xmax[0];
    merge_max:
      for (int l = 1; l < LANES; ++l) {
#pragma HLS UNROLL
        if (lane_xmax[l] > m) m = lane_xmax[l];
      }

      float acc[LANES];
#pragma HLS ARRAY_PARTITION variable=acc complete
    init_acc:
      for (int l = 0; l < LANES; ++l) {
#pragma HLS UNROLL
        acc[l] = 0.0f;
      }
    exp_loop:
      for (int v = 0; v < V; ++v) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=152064
#pragma HLS DEPENDENCE variable=acc inter distance=16 true
        const float d = row_buf[v] - m;
        const float e = k5_exp(d);
        row_buf[v] = e;
        acc[v & (LANES - 1)] += e;
      }
      // balanced tree, neighbours first: ((s0+s1)+(s2+s3)) + ... as the reference pins it
    reduce_tree:
      for (int w = 1; w < LANES; w *= 2) {
#pragma HLS UNROLL
        for (int l = 0; l + w < LANES; l += 2 * w) {
#pragma HLS UNROLL
          acc[l] = acc[l] + acc[l + w];
        }
      }
      const float s = acc[0];

    write_loop:
      for (int v = 0; v < V; ++v) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=152064
        probas[base + v] = row_buf[v] / s;
      }
    }
  }
}

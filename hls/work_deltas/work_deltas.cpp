// K3 calculate_work_deltas (KERNELS.md §3.4): per request, the sum of the best Vb' scores of the
// old set A plus the marginal gain of each of the layer's top-K new scores, reduced over the batch.
// Every f32 sum is a chain of single binary32 additions in the pinned order (EXACT parity), so the
// accumulations are sequential on purpose (no adder tree): n0 <= MAX_VERIFY and B <= 128 keep
// them short.
#include "work_deltas.hpp"

#include "work_deltas_core.hpp"

namespace {
constexpr int ROW_MAX = eagle4::MAX_VERIFY + eagle4::MAX_TOP_K;
}

void work_deltas_top(PORT(const float) work_scores, int batch_size, int node_count, int node_top_k,
                     int verify_num, int row_stride, PORT(float) work_deltas, PORT(float) per_req_deltas,
                     bool write_per_req) {
#pragma HLS INTERFACE m_axi port = work_scores offset = slave bundle = gmem0 depth = 17408 max_read_burst_length = 64
#pragma HLS INTERFACE m_axi port = work_deltas offset = slave bundle = gmem1 depth = 11
#pragma HLS INTERFACE m_axi port = per_req_deltas offset = slave bundle = gmem1 depth = 1408
#pragma HLS INTERFACE s_axilite port = batch_size
#pragma HLS INTERFACE s_axilite port = node_count
#pragma HLS INTERFACE s_axilite port = node_top_k
#pragma HLS INTERFACE s_axilite port = verify_num
#pragma HLS INTERFACE s_axilite port = row_stride
#pragma HLS INTERFACE s_axilite port = write_per_req
#pragma HLS INTERFACE s_axilite port = return
  const int B = batch_size;
  const int n0 = node_count;
  const int K = node_top_k;
  const int len = n0 + K;
  if (B < 0 || n0 < 0 || K < 0 || n0 > eagle4::MAX_VERIFY || K > eagle4::MAX_TOP_K) return;  // do nothing

  float acc[eagle4::MAX_TOP_K + 1];  // batch totals, from +0.0
#pragma HLS ARRAY_PARTITION variable = acc complete
  float row[ROW_MAX];  // one request's [A | Bn], read once from HBM
  float delta[eagle4::MAX_TOP_K + 1];
#pragma HLS ARRAY_PARTITION variable = delta complete

init_acc:
  for (int w = 0; w <= eagle4::MAX_TOP_K; ++w) {
#pragma HLS UNROLL
    acc[w] = 0.0f;
  }

per_request:
  for (int b = 0; b < B; ++b) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 128
  load_row:
    for (int j = 0; j < len; ++j) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 138
      row[j] = work_scores[b * row_stride + j];
    }
    eagle4::k3::work_deltas_request(row, n0, K, verify_num, delta);
  reduce_and_store:  // acc[w] += delta[w] in ascending b (one add per column per request)
    for (int w = 0; w <= K; ++w) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 11
      acc[w] = acc[w] + delta[w];
    }
    if (write_per_req) {  // the optional port in its own loop: no run-time test around a port write
    store_per_req:
      for (int w = 0; w <= K; ++w) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 11
        per_req_deltas[b * (K + 1) + w] = delta[w];
      }
    }
  }

store_totals:
  for (int w = 0; w <= K; ++w) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 11
    work_deltas[w] = acc[w];
  }
}

// K2 update_cumu_draft_state (KERNELS.md §2.5), per request b, in the pinned step order:
//   1. output_scores/tokens of the layer's top-K (parent slot and sorted index clamped)
//   2. mask prefix copy: columns [0, Ic-1) of each top-K row from its parent's row
//   3. append the C candidates at g = cc + i (g < N only); cumu_scores = in_scores * 0.9999f
//   4. parent -> first child links, ascending w after step 3 (later write wins, D6)
//   5. work_scores = [A | output_scores] with A = sort_scores[0:n0] snapshotted first, then the
//      pinned two-cursor descending merge of A and sorted_scores into sort_scores[0:n1].
// Only the regions of §2.4 are written. The only arithmetic is the one f32 multiply by 0.9999f.
#include "update_draft_state.hpp"

#include "update_draft_state_core.hpp"

namespace {
// 32-bit request offsets: B*N node rows, B*W mask rows of <= MAX_INPUT_SIZE bytes, B*K rows of I+1.
static_assert(int64_t(eagle4::MAX_BATCH_SIZE) * eagle4::MAX_NODE_COUNT <= INT32_MAX, "node-row offsets fit 32 bits");
static_assert(int64_t(eagle4::MAX_BATCH_SIZE) * eagle4::MAX_CANDIDATES * (eagle4::MAX_INPUT_SIZE + 1) <= INT32_MAX,
              "mask-row offsets fit 32 bits");
using eagle4::MAX_CANDIDATES;
using eagle4::MAX_TOP_K;
using eagle4::MAX_VERIFY;
}  // namespace

// 0.9999f rounds to the binary32 pattern 0x3F7FF972 (§2.5 step 3; computing in f64 does not match
// CUDA). A literal keeps the top free of type punning; the C-ABI wrapper checks the pattern once.
const float EAGLE4_K2_DECAY = 0.9999f;

void update_draft_state_top(PORT(const float) topk_probas, PORT(const int64_t) topk_tokens,
                            PORT(const float) sorted_scores, PORT(const int64_t) sorted_indexs,
                            PORT(const int64_t) parent_indexs, PORT(const int64_t) topk_indexs,
                            PORT(const uint8_t) input_tree_mask, int batch_size, int node_top_k, int tree_width,
                            int input_count, int64_t cumu_count, int64_t verify_num, int64_t curr_depth,
                            int max_input_size, int max_node_count, int max_verify_num, PORT(int64_t) cumu_tokens,
                            PORT(float) cumu_scores, PORT(int64_t) cumu_deltas, PORT(int64_t) prev_indexs,
                            PORT(int64_t) next_indexs, PORT(int64_t) side_indexs, PORT(float) output_scores,
                            PORT(int64_t) output_tokens, PORT(float) work_scores, PORT(float) sort_scores,
                            PORT(uint8_t) output_tree_mask) {
#pragma HLS INTERFACE m_axi port = topk_probas offset = slave bundle = gmem0 depth = 8192
#pragma HLS INTERFACE m_axi port = topk_tokens offset = slave bundle = gmem0 depth = 8192
#pragma HLS INTERFACE m_axi port = sorted_scores offset = slave bundle = gmem0 depth = 8192
#pragma HLS INTERFACE m_axi port = sorted_indexs offset = slave bundle = gmem0 depth = 8192
#pragma HLS INTERFACE m_axi port = parent_indexs offset = slave bundle = gmem0 depth = 1280
#pragma HLS INTERFACE m_axi port = topk_indexs offset = slave bundle = gmem0 depth = 8192
#pragma HLS INTERFACE m_axi port = input_tree_mask offset = slave bundle = gmem1 depth = 524288
// the node arrays append_nodes writes in one iteration sit on their own bundles (one write per bundle
// and cycle: on one bundle the loop's II would be 5)
#pragma HLS INTERFACE m_axi port = cumu_tokens offset = slave bundle = gmem2 depth = 524288
#pragma HLS INTERFACE m_axi port = cumu_scores offset = slave bundle = gmem6 depth = 524288
#pragma HLS INTERFACE m_axi port = cumu_deltas offset = slave bundle = gmem7 depth = 524288
#pragma HLS INTERFACE m_axi port = prev_indexs offset = slave bundle = gmem8 depth = 524288
#pragma HLS INTERFACE m_axi port = next_indexs offset = slave bundle = gmem3 depth = 524288
#pragma HLS INTERFACE m_axi port = side_indexs offset = slave bundle = gmem9 depth = 524288
#pragma HLS INTERFACE m_axi port = output_scores offset = slave bundle = gmem4 depth = 1280
#pragma HLS INTERFACE m_axi port = output_tokens offset = slave bundle = gmem4 depth = 1280
#pragma HLS INTERFACE m_axi port = work_scores offset = slave bundle = gmem4 depth = 17664
#pragma HLS INTERFACE m_axi port = sort_scores offset = slave bundle = gmem5 depth = 16384
#pragma HLS INTERFACE m_axi port = output_tree_mask offset = slave bundle = gmem1 depth = 1312000
#pragma HLS INTERFACE s_axilite port = batch_size
#pragma HLS INTERFACE s_axilite port = node_top_k
#pragma HLS INTERFACE s_axilite port = tree_width
#pragma HLS INTERFACE s_axilite port = input_count
#pragma HLS INTERFACE s_axilite port = cumu_count
#pragma HLS INTERFACE s_axilite port = verify_num
#pragma HLS INTERFACE s_axilite port = curr_depth
#pragma HLS INTERFACE s_axilite port = max_input_size
#pragma HLS INTERFACE s_axilite port = max_node_count
#pragma HLS INTERFACE s_axilite port = max_verify_num
#pragma HLS INTERFACE s_axilite port = return
  const int B = batch_size, K = node_top_k, W = tree_width, C = W * K;
  const int Ic = input_count, I = max_input_size, N = max_node_count, M = max_verify_num;
  const int64_t cc = cumu_count;
  if (B < 0 || K < 1 || W < 1 || C > MAX_CANDIDATES || K > MAX_TOP_K || Ic < 1 || Ic - 1 > I || cc < 0 ||
      N < 0 || M < 1 || M > MAX_VERIFY)
    return;  // preconditions (§2.5): do nothing
  const eagle4::k2::Sizes z = eagle4::k2::sizes(K, C, cc, verify_num, N, M);
  const int mask_w = Ic - 1;

per_request:
  for (int b = 0; b < B; ++b) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 128
    const int rowC = b * C, rowK = b * K, rowN = b * N, rowW = b * W;  // 32-bit (static_assert above)
    // steps 1-5 (update_draft_state_core.hpp)
    eagle4::k2::update_request(
        topk_probas + rowC, topk_tokens + rowC, sorted_scores + rowC, sorted_indexs + rowC, parent_indexs + rowK,
        topk_indexs + rowW, mask_w > 0 ? input_tree_mask + rowW * mask_w : input_tree_mask, mask_w, K, W, Ic, cc, curr_depth, N, z,
        cumu_tokens + rowN, cumu_scores + rowN, cumu_deltas + rowN, prev_indexs + rowN, next_indexs + rowN,
        side_indexs + rowN, output_scores + rowK, output_tokens + rowK,
        work_scores + b * (M + K), sort_scores + b * M, output_tree_mask + rowK * (I + 1), I + 1);
  }
}

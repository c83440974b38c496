// K2 update_cumu_draft_state (KERNELS.md §2): one block per request.
#include "draft_layer.cuh"


__global__ void __launch_bounds__(128) k2_kernel(
    const float* __restrict__ in_scores, const int64_t* __restrict__ tokens,
    const float* __restrict__ sorted_scores, const int64_t* __restrict__ sorted_idx,
    const int64_t* __restrict__ parent_idx, const int64_t* __restrict__ topk_idx,
    const uint8_t* __restrict__ in_mask, int K, int W, int64_t Ic, int64_t cc, int64_t d, int64_t I,
    int64_t N, int64_t M, int64_t n0, int64_t n1, int64_t* __restrict__ cumu_tokens,
    float* __restrict__ cumu_scores, int64_t* __restrict__ cumu_deltas, int64_t* __restrict__ prev,
    int64_t* __restrict__ next, int64_t* __restrict__ side, float* __restrict__ out_scores,
    int64_t* __restrict__ out_tokens, float* __restrict__ work, float* __restrict__ sort_scores,
    uint8_t* __restrict__ out_mask) {
  pdl_begin();
  extern __shared__ float k2_sm[];
  k2_phase(blockIdx.x, in_scores, tokens, sorted_scores, sorted_idx, parent_idx, topk_idx, in_mask, K, W, Ic, cc, d,
           I, N, M, n0, n1, cumu_tokens, cumu_scores, cumu_deltas, prev, next, side, out_scores, out_tokens, work,
           sort_scores, out_mask, k2_sm);
}

void update_cumu_draft_state(
    at::Tensor topk_probas, at::Tensor topk_tokens, at::Tensor sorted_scores, at::Tensor sorted_indexs,
    at::Tensor parent_indexs, at::Tensor topk_indexs, at::Tensor input_tree_mask, int64_t batch_size,
    int64_t node_top_k, int64_t tree_width, int64_t input_count, int64_t cumu_count, int64_t verify_num,
    int64_t curr_depth, int64_t max_input_size, int64_t max_node_count, int64_t max_verify_num,
    at::Tensor cumu_tokens, at::Tensor cumu_scores, at::Tensor cumu_deltas, at::Tensor prev_indexs,
    at::Tensor next_indexs, at::Tensor side_indexs, at::Tensor output_scores, at::Tensor output_tokens,
    at::Tensor work_scores, at::Tensor sort_scores, at::Tensor output_tree_mask) {
  const int64_t B = batch_size, K = node_top_k, W = tree_width, C = W * K, Ic = input_count;
  const int64_t I = max_input_size, N = max_node_count, M = max_verify_num, cc = cumu_count;
  E4_PRE(K >= 1, "node_top_k must be >= 1, got ", K);
  E4_PRE(W >= 1, "tree_width must be >= 1, got ", W);
  E4_PRE(C <= 64, "tree_width*node_top_k must be <= 64, got ", C);
  E4_PRE(Ic >= 1, "input_count must be >= 1, got ", Ic);
  E4_PRE(Ic - 1 <= I, "input_count-1 must be <= max_input_size, got ", Ic, " and ", I);
  E4_PRE(M >= 1, "max_verify_num must be >= 1, got ", M);
  E4_PRE(N >= 0 && cc >= 0, "max_node_count and cumu_count must be >= 0");
  check_tensor(topk_probas, "topk_probas", at::kFloat, {B, C});
  check_tensor(topk_tokens, "topk_tokens", at::kLong, {B, C});
  check_tensor(sorted_scores, "sorted_scores", at::kFloat, {B, C});
  check_tensor(sorted_indexs, "sorted_indexs", at::kLong, {B, C});
  check_tensor(parent_indexs, "parent_indexs", at::kLong, {B, K});
  check_tensor(topk_indexs, "topk_indexs", at::kLong, {B, W});
  check_tensor(input_tree_mask, "input_tree_mask", at::kBool, {B, W, Ic - 1});
  check_tensor(cumu_tokens, "cumu_tokens", at::kLong, {B, N});
  check_tensor(cumu_scores, "cumu_scores", at::kFloat, {B, N});
  check_tensor(cumu_deltas, "cumu_deltas", at::kLong, {B, N});
  check_tensor(prev_indexs, "prev_indexs", at::kLong, {B, N});
  check_tensor(next_indexs, "next_indexs", at::kLong, {B, N});
  check_tensor(side_indexs, "side_indexs", at::kLong, {B, N});
  check_tensor(output_scores, "output_scores", at::kFloat, {B, K});
  check_tensor(output_tokens, "output_tokens", at::kLong, {B, K});
  check_tensor(work_scores, "work_scores", at::kFloat, {B, M + K});
  check_tensor(sort_scores, "sort_scores", at::kFloat, {B, M});
  check_tensor(output_tree_mask, "output_tree_mask", at::kBool, {B, K, I + 1});
  if (B == 0) return;
  const int64_t Vn = std::min(std::max(verify_num, (int64_t)1), M);
  const int64_t n0 = std::min(Vn, cc), n1 = std::min(Vn, cc + C);
  const size_t smem = (size_t)(n0 + C + n1) * sizeof(float);
  E4_CHECK(smem <= 48 * 1024, "update_cumu_draft_state: max_verify_num too large for shared memory");
  if (check_only) return;
  const c10::cuda::CUDAGuard guard(topk_probas.device());
  auto stream = c10::cuda::getCurrentCUDAStream();
  launch_ex(k2_kernel, dim3((unsigned)B), dim3(128), smem, 0, stream,
      ptr<float>(topk_probas), ptr<int64_t>(topk_tokens), ptr<float>(sorted_scores),
      ptr<int64_t>(sorted_indexs), ptr<int64_t>(parent_indexs), ptr<int64_t>(topk_indexs),
      ptr<uint8_t>(input_tree_mask), (int)K, (int)W, Ic, cc, curr_depth, I, N, M, n0, n1,
      ptr<int64_t>(cumu_tokens), ptr<float>(cumu_scores), ptr<int64_t>(cumu_deltas),
      ptr<int64_t>(prev_indexs), ptr<int64_t>(next_indexs), ptr<int64_t>(side_indexs),
      ptr<float>(output_scores), ptr<int64_t>(output_tokens), ptr<float>(work_scores),
      ptr<float>(sort_scores), ptr<uint8_t>(output_tree_mask));
  E4_CUDA_CHECK(cudaGetLastError());
}


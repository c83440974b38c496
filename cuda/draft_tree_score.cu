// K1 draft_tree_layer_score_index_gen_op (KERNELS.md §1): one block per (request, hidden row).
#include "draft_layer.cuh"

template <typename VT>
__global__ void __launch_bounds__(256) k1_kernel(
    const float* __restrict__ probs, int64_t* __restrict__ tokens, const float* __restrict__ last,
    float* __restrict__ curr, float* __restrict__ sscores, int64_t* __restrict__ sidx,
    int64_t* __restrict__ cache, int64_t* __restrict__ parent, const VT* __restrict__ hin,
    VT* __restrict__ hout, const int64_t* __restrict__ hot, int64_t Vh, int K, int W, int64_t cc,
    bool use_hot, int64_t row_units) {
  pdl_begin();
  const int64_t b = blockIdx.x;
  const int r = blockIdx.y;
  __shared__ float s_sc[64];
  __shared__ int s_perm[64];
  k1_sort(b, probs, last, K, W, s_sc, s_perm);
  if (r == 0) k1_store(b, tokens, curr, sscores, sidx, cache, parent, hot, Vh, K, W, cc, use_hot, s_sc, s_perm);
  k1_copy<VT>(b, r, hin, hout, K, W, row_units, s_perm);
}

void draft_tree_layer_score_index_gen_op(
    at::Tensor topk_probas_sampling, std::optional<at::Tensor> topk_tokens_sampling,
    at::Tensor last_layer_scores, at::Tensor curr_layer_scores, at::Tensor sort_layer_scores,
    at::Tensor sort_layer_indices, at::Tensor cache_topk_indices, at::Tensor parent_indices_in_layer,
    at::Tensor input_hidden_states, at::Tensor output_hidden_states, std::optional<at::Tensor> hot_token_id,
    int64_t batch_size, int64_t node_top_k, int64_t tree_width, int64_t cumu_count, bool use_hot_token_id) {
  const int64_t B = batch_size, K = node_top_k, W = tree_width, C = W * K;
  E4_PRE(K >= 1, "node_top_k must be >= 1, got ", K);
  E4_PRE(W >= 1, "tree_width must be >= 1, got ", W);
  E4_PRE(C <= 64, "tree_width*node_top_k must be <= 64, got ", C);
  E4_PRE(K <= C, "node_top_k must be <= tree_width*node_top_k");
  E4_PRE(B >= 0, "batch_size must be >= 0");
  check_tensor(topk_probas_sampling, "topk_probas_sampling", at::kFloat, {B, C});
  check_tensor(last_layer_scores, "last_layer_scores", at::kFloat, {B, W});
  check_tensor(curr_layer_scores, "curr_layer_scores", at::kFloat, {B, C});
  check_tensor(sort_layer_scores, "sort_layer_scores", at::kFloat, {B, C});
  check_tensor(sort_layer_indices, "sort_layer_indices", at::kLong, {B, C});
  check_tensor(cache_topk_indices, "cache_topk_indices", at::kLong, {B, K});
  check_tensor(parent_indices_in_layer, "parent_indices_in_layer", at::kLong, {B, K});
  check_hidden_dtype(input_hidden_states, "input_hidden_states");
  const int64_t H = input_hidden_states.dim() == 2 ? input_hidden_states.size(1) : -1;
  check_tensor(input_hidden_states, "input_hidden_states", input_hidden_states.scalar_type(), {B * W, H});
  check_tensor(output_hidden_states, "output_hidden_states", input_hidden_states.scalar_type(), {B, K, H});
  int64_t Vh = 0;
  if (use_hot_token_id) {
    E4_PRE(has(topk_tokens_sampling), "topk_tokens_sampling is required when use_hot_token_id");
    E4_PRE(has(hot_token_id), "hot_token_id is required when use_hot_token_id");
    check_tensor(*topk_tokens_sampling, "topk_tokens_sampling", at::kLong, {B, C});
    check_tensor(*hot_token_id, "hot_token_id", at::kLong, {-1});
    Vh = hot_token_id->size(0);
  }
  if (B == 0 || check_only) return;
  const c10::cuda::CUDAGuard guard(topk_probas_sampling.device());
  auto stream = c10::cuda::getCurrentCUDAStream();
  const int64_t row_bytes = H * input_hidden_states.element_size();
  int64_t* tok = use_hot_token_id ? ptr<int64_t>(*topk_tokens_sampling) : nullptr;
  const int64_t* hot = use_hot_token_id ? ptr<int64_t>(*hot_token_id) : nullptr;
  dim3 grid((unsigned)B, (unsigned)K);
  dispatch_units(row_bytes, {input_hidden_states.data_ptr(), output_hidden_states.data_ptr()},
                 [&](auto unit, int64_t ub) {
                   using VT = decltype(unit);
                   launch_ex(k1_kernel<VT>, grid, dim3(256), 0, 0, stream,
                       ptr<float>(topk_probas_sampling), tok, ptr<float>(last_layer_scores),
                       ptr<float>(curr_layer_scores), ptr<float>(sort_layer_scores),
                       ptr<int64_t>(sort_layer_indices), ptr<int64_t>(cache_topk_indices),
                       ptr<int64_t>(parent_indices_in_layer), ptr<VT>(input_hidden_states),
                       ptr<VT>(output_hidden_states), hot, Vh, (int)K, (int)W, cumu_count,
                       use_hot_token_id, row_bytes / ub);
                 });
  E4_CUDA_CHECK(cudaGetLastError());
}


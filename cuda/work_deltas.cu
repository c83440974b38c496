// K3 calculate_work_deltas (KERNELS.md §3): one block, each request's deltas in the pinned sequential f32 order,
// then their sum over the requests in ascending order.
#include "draft_layer.cuh"


__global__ void __launch_bounds__(128) k3_kernel(const float* __restrict__ work, int64_t B, int64_t n0, int K,
                                                 int64_t Vb, int64_t stride, float* __restrict__ deltas,
                                                 float* __restrict__ per_req) {
  pdl_begin();
  extern __shared__ float pr[];  // [B, K+1]
  const int tid = threadIdx.x, nt = blockDim.x;
  for (int64_t b = tid; b < B; b += nt) k3_request(work + b * stride, n0, K, Vb, pr + b * (K + 1));
  __syncthreads();
  if (per_req)
    for (int64_t e = tid; e < B * (K + 1); e += nt) per_req[e] = pr[e];
  for (int w = tid; w <= K; w += nt) {
    float s = 0.0f;
    for (int64_t b = 0; b < B; ++b) s = __fadd_rn(s, pr[b * (K + 1) + w]);
    deltas[w] = s;
  }
}

void calculate_work_deltas(at::Tensor work_scores, int64_t batch_size, int64_t node_count, int64_t node_top_k,
                           int64_t verify_num, int64_t row_stride, at::Tensor work_deltas,
                           std::optional<at::Tensor> per_req_deltas) {
  const int64_t B = batch_size, n0 = node_count, K = node_top_k;
  E4_PRE(K >= 0, "node_top_k must be >= 0, got ", K);
  E4_PRE(n0 >= 0, "node_count must be >= 0, got ", n0);
  E4_PRE(n0 + K <= row_stride, "node_count + node_top_k must be <= row_stride, got ", n0, " + ", K, " > ",
         row_stride);
  check_tensor(work_scores, "work_scores", at::kFloat, {B, row_stride});
  check_tensor(work_deltas, "work_deltas", at::kFloat, {K + 1});
  if (has(per_req_deltas)) check_tensor(*per_req_deltas, "per_req_deltas", at::kFloat, {B, K + 1});
  const size_t smem = (size_t)std::max<int64_t>(B, 1) * (K + 1) * sizeof(float);
  E4_CHECK(smem <= 48 * 1024, "calculate_work_deltas: batch too large for shared memory");
  if (check_only) return;
  const c10::cuda::CUDAGuard guard(work_scores.device());
  auto stream = c10::cuda::getCurrentCUDAStream();
  launch_ex(k3_kernel, dim3(1), dim3(128), smem, 0, stream, ptr<float>(work_scores), B, n0, (int)K, verify_num,
            row_stride, ptr<float>(work_deltas), optptr<float>(per_req_deltas));
  E4_CUDA_CHECK(cudaGetLastError());
}


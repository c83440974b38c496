// The draft step: K1 -> K2 -> K3 of one draft layer in one launch.
#include "draft_layer.cuh"

// Grid (B, K + 1): every block sorts request b's scores; block (b, 0) stores K1's outputs of request
// b other than the hidden rows, then runs K2 for request b (it reads only request b's K1 outputs,
// written by this block before a block barrier), then K3's per-request deltas of b; block (b, r + 1)
// copies hidden row r (K1 has block (b, r) do both, so there the bookkeeping block's row copy would
// follow its K2 and K3 phases on the launch's critical path). K3's
// only cross-request step, deltas[w] = sum over b in ascending order, is done by the last block
// (b, 0) to finish (threadfence + arrival counter, the counter reset by that block), in K3's order:
// results are bit-identical to the three kernels. No block waits for another, so any grid size runs.
// The arrival counter is one per device: two draft steps must not run concurrently on two streams.

__device__ unsigned int step_arrivals = 0;
// floats of shared memory staging K3's per-request rows: B = 128 rows of K + 1 = 9 (deployment-8b) in one
// round of L2 loads (1024 took two)
static constexpr int STEP_STAGE = 1536;

struct StepArgs {
  // K1
  const float* probs; int64_t* tokens; const float* last; float* curr; float* sscores; int64_t* sidx;
  int64_t* cache; int64_t* parent; const int64_t* hot; int64_t Vh; int K; int W; int64_t cc1; bool use_hot;
  int64_t row_units;
  // K2 (its other inputs are K1's outputs above)
  const int64_t* k2_tokens; const int64_t* topk_idx; const uint8_t* in_mask; int64_t Ic; int64_t cc; int64_t d;
  int64_t I; int64_t N; int64_t M; int64_t n0; int64_t n1; int64_t* cumu_tokens; float* cumu_scores;
  int64_t* cumu_deltas; int64_t* prev; int64_t* next; int64_t* side; float* out_scores; int64_t* out_tokens;
  float* work; float* sort_scores; uint8_t* out_mask;
  // K3 (reads K2's work rows)
  int64_t n0_3; int K3; int64_t Vb; int64_t stride3; float* deltas; float* per_req;
};

template <typename VT>
__global__ void __launch_bounds__(256) step_kernel(StepArgs a, const VT* hin, VT* hout) {
  pdl_begin();
  const int64_t b = blockIdx.x;
  const int r = blockIdx.y;
  __shared__ float s_sc[64];
  __shared__ int s_perm[64];
  __shared__ int s_last;
  __shared__ float s_stage[STEP_STAGE];  // K3's per-request rows (B = 1: the row; else chunks of the B rows)
  extern __shared__ float step_sm[];  // K2: n0 + C + n1 floats
  k1_sort(b, a.probs, a.last, a.K, a.W, s_sc, s_perm);
  if (r == 0) {  // uniform per block: every barrier below is reached by the whole block
    k1_store(b, a.tokens, a.curr, a.sscores, a.sidx, a.cache, a.parent, a.hot, a.Vh, a.K, a.W, a.cc1, a.use_hot,
             s_sc, s_perm);
    __syncthreads();  // K1's outputs of request b (this block's global writes) before K2 reads them
    k2_phase(b, a.curr, a.k2_tokens, a.sscores, a.sidx, a.parent, a.topk_idx, a.in_mask, a.K, a.W, a.Ic, a.cc, a.d,
             a.I, a.N, a.M, a.n0, a.n1, a.cumu_tokens, a.cumu_scores, a.cumu_deltas, a.prev, a.next, a.side,
             a.out_scores, a.out_tokens, a.work, a.sort_scores, a.out_mask, step_sm);
    __syncthreads();  // K2's work row b before K3 reads it
    const int KW = a.K3 + 1;
    if (gridDim.x == 1 && KW <= STEP_STAGE) {
      // one request (B = 1): the deltas are its own row summed from 0.0f (K3's order), so no arrival
      // counter, no fences and no read-back through L2
      if (threadIdx.x == 0) k3_request(a.work, a.n0_3, a.K3, a.Vb, s_stage);
      __syncthreads();
      for (int w = threadIdx.x; w < KW; w += blockDim.x) {
        a.per_req[w] = s_stage[w];
        a.deltas[w] = __fadd_rn(0.0f, s_stage[w]);
      }
    } else {
      if (threadIdx.x == 0) {
        // K2 left work row b in shared memory too: A (n0 floats) then Bs, whose first K entries are the
        // row's [n0, n0 + K). When K3 reads only those (its n0 + K <= K2's), its serial row walk reads
        // shared memory instead of L2 (faster at many requests; the B = 1 path above reads the global row,
        // which is faster there: docs/decisions.md)
        if (a.n0_3 + a.K3 <= a.n0 + a.K) k3_request(step_sm, a.n0_3, a.K3, a.Vb, a.per_req + b * KW);
        else k3_request(a.work + b * a.stride3, a.n0_3, a.K3, a.Vb, a.per_req + b * KW);
        __threadfence();  // the row is visible device-wide before this block counts as arrived
        s_last = atomicAdd(&step_arrivals, 1u) == gridDim.x - 1;
      }
      __syncthreads();
      if (s_last) {
        __threadfence();
        if (KW <= (int)blockDim.x && KW <= STEP_STAGE) {
          // the B rows staged through shared memory in chunks (one parallel round of L2 loads per
          // chunk), then thread w sums its column in ascending b from 0.0f, as K3 does
          const int rows = STEP_STAGE / KW;
          float s = 0.0f;
          for (int64_t q0 = 0; q0 < (int64_t)gridDim.x; q0 += rows) {
            const int nq = (int)((int64_t)gridDim.x - q0 < rows ? (int64_t)gridDim.x - q0 : rows);
            for (int i = threadIdx.x; i < nq * KW; i += blockDim.x) s_stage[i] = __ldcg(a.per_req + q0 * KW + i);
            __syncthreads();
            if ((int)threadIdx.x < KW)
              for (int q = 0; q < nq; ++q) s = __fadd_rn(s, s_stage[q * KW + threadIdx.x]);
            __syncthreads();
          }
          if ((int)threadIdx.x < KW) a.deltas[threadIdx.x] = s;
        } else {
          for (int w = threadIdx.x; w < KW; w += blockDim.x) {
            float s = 0.0f;
            for (int64_t q = 0; q < (int64_t)gridDim.x; ++q) s = __fadd_rn(s, __ldcg(a.per_req + q * KW + w));
            a.deltas[w] = s;
          }
        }
        if (threadIdx.x == 0) atomicExch(&step_arrivals, 0u);
      }
    }
  } else {
    k1_copy<VT>(b, r - 1, hin, hout, a.K, a.W, a.row_units, s_perm);
  }
}

static bool same_tensor(const at::Tensor& x, const at::Tensor& y) {
  return x.defined() && y.defined() && x.data_ptr() == y.data_ptr() && x.sizes() == y.sizes() &&
         x.scalar_type() == y.scalar_type();
}
static bool overlaps(const at::Tensor& x, const at::Tensor& y) {
  if (!x.defined() || !y.defined() || x.numel() == 0 || y.numel() == 0) return false;
  const uintptr_t x0 = reinterpret_cast<uintptr_t>(x.data_ptr()), y0 = reinterpret_cast<uintptr_t>(y.data_ptr());
  return x0 < y0 + y.nbytes() && y0 < x0 + x.nbytes();
}
static bool any_overlap(std::initializer_list<at::Tensor> xs, std::initializer_list<at::Tensor> ys) {
  for (const auto& x : xs)
    for (const auto& y : ys)
      if (overlaps(x, y)) return true;
  return false;
}

// draft_step: the arguments of K1, K2 and K3 in their ABI order, one after the other. When K2's
// inputs are K1's outputs and K3's work buffer is K2's (the draft layer's wiring) and no phase writes
// what another block reads, one launch of step_kernel; otherwise (or B = 0, or K2's shared memory too
// large) the three ops in sequence. Each op's own checks run first either way. Returns true for the
// one launch, false for the three.
bool draft_step(
    // K1
    at::Tensor topk_probas_sampling, std::optional<at::Tensor> topk_tokens_sampling,
    at::Tensor last_layer_scores, at::Tensor curr_layer_scores, at::Tensor sort_layer_scores,
    at::Tensor sort_layer_indices, at::Tensor cache_topk_indices, at::Tensor parent_indices_in_layer,
    at::Tensor input_hidden_states, at::Tensor output_hidden_states, std::optional<at::Tensor> hot_token_id,
    int64_t batch_size, int64_t node_top_k, int64_t tree_width, int64_t cumu_count, bool use_hot_token_id,
    // K2
    at::Tensor topk_probas, at::Tensor topk_tokens, at::Tensor sorted_scores, at::Tensor sorted_indexs,
    at::Tensor parent_indexs, at::Tensor topk_indexs, at::Tensor input_tree_mask, int64_t batch_size2,
    int64_t node_top_k2, int64_t tree_width2, int64_t input_count, int64_t cumu_count2, int64_t verify_num,
    int64_t curr_depth, int64_t max_input_size, int64_t max_node_count, int64_t max_verify_num,
    at::Tensor cumu_tokens, at::Tensor cumu_scores, at::Tensor cumu_deltas, at::Tensor prev_indexs,
    at::Tensor next_indexs, at::Tensor side_indexs, at::Tensor output_scores, at::Tensor output_tokens,
    at::Tensor work_scores, at::Tensor sort_scores, at::Tensor output_tree_mask,
    // K3
    at::Tensor work_scores3, int64_t batch_size3, int64_t node_count3, int64_t node_top_k3, int64_t verify_num3,
    int64_t row_stride3, at::Tensor work_deltas, std::optional<at::Tensor> per_req_deltas) {
  auto k1 = [&] {
    draft_tree_layer_score_index_gen_op(topk_probas_sampling, topk_tokens_sampling, last_layer_scores,
        curr_layer_scores, sort_layer_scores, sort_layer_indices, cache_topk_indices, parent_indices_in_layer,
        input_hidden_states, output_hidden_states, hot_token_id, batch_size, node_top_k, tree_width, cumu_count,
        use_hot_token_id);
  };
  auto k2 = [&] {
    update_cumu_draft_state(topk_probas, topk_tokens, sorted_scores, sorted_indexs, parent_indexs, topk_indexs,
        input_tree_mask, batch_size2, node_top_k2, tree_width2, input_count, cumu_count2, verify_num, curr_depth,
        max_input_size, max_node_count, max_verify_num, cumu_tokens, cumu_scores, cumu_deltas, prev_indexs,
        next_indexs, side_indexs, output_scores, output_tokens, work_scores, sort_scores, output_tree_mask);
  };
  auto k3 = [&] {
    calculate_work_deltas(work_scores3, batch_size3, node_count3, node_top_k3, verify_num3, row_stride3, work_deltas,
                          per_req_deltas);
  };
  const int64_t B = batch_size, K = node_top_k, W = tree_width, C = W * K, M = max_verify_num;
  {
    CheckOnly only;  // every precondition and shape check of the three ops, nothing launched
    k1();
    k2();
    k3();
  }
  const at::Tensor none;
  const at::Tensor tok1 = use_hot_token_id ? *topk_tokens_sampling : none;
  const at::Tensor hot = use_hot_token_id ? *hot_token_id : none;
  const at::Tensor per_req = has(per_req_deltas) ? *per_req_deltas : none;
  // K2's inputs: K1's outputs (tokens too when K1 remaps them), else disjoint from everything K1 writes
  bool wired = B >= 1 && batch_size2 == B && batch_size3 == B && node_top_k2 == K && tree_width2 == W &&
               same_tensor(topk_probas, curr_layer_scores) && same_tensor(sorted_scores, sort_layer_scores) &&
               same_tensor(sorted_indexs, sort_layer_indices) && same_tensor(parent_indexs, parent_indices_in_layer) &&
               (use_hot_token_id ? same_tensor(topk_tokens, tok1) : true) &&
               same_tensor(work_scores3, work_scores) && row_stride3 == M + K;
  // what one block writes must not be what another block reads or writes (beyond the wiring above)
  wired = wired &&
      !any_overlap({use_hot_token_id ? none : topk_tokens, topk_indexs, input_tree_mask},
                   {tok1, curr_layer_scores, sort_layer_scores, sort_layer_indices, cache_topk_indices,
                    parent_indices_in_layer, output_hidden_states}) &&
      !any_overlap({cumu_tokens, cumu_scores, cumu_deltas, prev_indexs, next_indexs, side_indexs, output_scores,
                    output_tokens, work_scores, sort_scores, output_tree_mask, work_deltas, per_req},
                   {topk_probas_sampling, tok1, last_layer_scores, input_hidden_states, hot, curr_layer_scores,
                    sort_layer_scores, sort_layer_indices, cache_topk_indices, parent_indices_in_layer,
                    output_hidden_states, use_hot_token_id ? none : topk_tokens, topk_indexs, input_tree_mask}) &&
      !any_overlap({work_deltas, per_req}, {cumu_tokens, cumu_scores, cumu_deltas, prev_indexs, next_indexs,
                                            side_indexs, output_scores, output_tokens, work_scores, sort_scores,
                                            output_tree_mask}) &&
      !overlaps(work_deltas, per_req);
  const int64_t Vn = std::min(std::max(verify_num, (int64_t)1), M);
  const int64_t n0 = std::min(Vn, cumu_count2), n1 = std::min(Vn, cumu_count2 + C);
  const size_t smem = (size_t)(n0 + C + n1) * sizeof(float);
  if (!wired || smem > 46 * 1024) {
    k1();
    k2();
    k3();
    return false;
  }
  const c10::cuda::CUDAGuard guard(topk_probas_sampling.device());
  auto stream = c10::cuda::getCurrentCUDAStream();
  // K3's per-request rows: the caller's per_req_deltas, else scratch from the caching allocator
  const at::Tensor pr = per_req.defined() ? per_req : at::empty({B, node_top_k3 + 1}, work_deltas.options());
  const int64_t row_bytes = input_hidden_states.size(1) * input_hidden_states.element_size();
  StepArgs a;
  a.probs = ptr<float>(topk_probas_sampling);
  a.tokens = use_hot_token_id ? ptr<int64_t>(tok1) : nullptr;
  a.last = ptr<float>(last_layer_scores);
  a.curr = ptr<float>(curr_layer_scores);
  a.sscores = ptr<float>(sort_layer_scores);
  a.sidx = ptr<int64_t>(sort_layer_indices);
  a.cache = ptr<int64_t>(cache_topk_indices);
  a.parent = ptr<int64_t>(parent_indices_in_layer);
  a.hot = use_hot_token_id ? ptr<int64_t>(hot) : nullptr;
  a.Vh = use_hot_token_id ? hot.size(0) : 0;
  a.K = (int)K;
  a.W = (int)W;
  a.cc1 = cumu_count;
  a.use_hot = use_hot_token_id;
  a.k2_tokens = ptr<int64_t>(topk_tokens);
  a.topk_idx = ptr<int64_t>(topk_indexs);
  a.in_mask = ptr<uint8_t>(input_tree_mask);
  a.Ic = input_count;
  a.cc = cumu_count2;
  a.d = curr_depth;
  a.I = max_input_size;
  a.N = max_node_count;
  a.M = M;
  a.n0 = n0;
  a.n1 = n1;
  a.cumu_tokens = ptr<int64_t>(cumu_tokens);
  a.cumu_scores = ptr<float>(cumu_scores);
  a.cumu_deltas = ptr<int64_t>(cumu_deltas);
  a.prev = ptr<int64_t>(prev_indexs);
  a.next = ptr<int64_t>(next_indexs);
  a.side = ptr<int64_t>(side_indexs);
  a.out_scores = ptr<float>(output_scores);
  a.out_tokens = ptr<int64_t>(output_tokens);
  a.work = ptr<float>(work_scores);
  a.sort_scores = ptr<float>(sort_scores);
  a.out_mask = ptr<uint8_t>(output_tree_mask);
  a.n0_3 = node_count3;
  a.K3 = (int)node_top_k3;
  a.Vb = verify_num3;
  a.stride3 = row_stride3;
  a.deltas = ptr<float>(work_deltas);
  a.per_req = ptr<float>(pr);
  dim3 grid((unsigned)B, (unsigned)(K + 1));  // y = 0: the bookkeeping block; y = r + 1: hidden row r
  dispatch_units(row_bytes, {input_hidden_states.data_ptr(), output_hidden_states.data_ptr()},
                 [&](auto unit, int64_t ub) {
                   using VT = decltype(unit);
                   a.row_units = row_bytes / ub;
                   // static shared memory (s_stage and K1's arrays, about 6.6 KB) plus K2's dynamic part
                   // may pass the 48 KB a kernel gets without opting in (launch_ex opts in above 48 KB
                   // of dynamic memory only)
                   if (smem > 32 * 1024 && smem <= 48 * 1024)
                     E4_CUDA_CHECK(cudaFuncSetAttribute(step_kernel<VT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                        (int)smem));
                   launch_ex(step_kernel<VT>, grid, dim3(256), smem, 0, stream, a, ptr<VT>(input_hidden_states),
                             ptr<VT>(output_hidden_states));
                 });
  E4_CUDA_CHECK(cudaGetLastError());
  return true;
}


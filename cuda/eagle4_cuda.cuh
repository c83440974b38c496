// Shared by the EAGLE4 CUDA kernels (one source a kernel, cuda/<key>.cu; keys as in src/eagle4/spec.py): error
// reporting, programmatic dependent launch, cluster barriers, L2 cache hints, host-side tensor checks, the launch
// helper, occupancy queries and the device reductions more than one kernel uses.
//
// Built as a PyTorch extension by src/eagle4/backends/cuda.py (torch.utils.cpp_extension.load,
// -gencode=arch=compute_90,code=sm_90, -fmad=false, no fast-math). Every op takes the ABI's
// arguments in the order of KERNELS.md / src/eagle4/spec.py and mutates its output tensors in
// place, like the PyTorch reference. Violated preconditions raise ValueError("precondition: ...").
//
// Floating point: every multiply/add/divide the spec separates is written with the _rn intrinsics
// (and the build uses -fmad=false as a second guard), so no FMA contraction can happen.
#pragma once
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <cfloat>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <tuple>

namespace cg = cooperative_groups;

// Every refusal of these sources throws a standard exception, which pybind11 turns into a Python exception:
// std::invalid_argument -> ValueError (bad arguments, violated preconditions), std::runtime_error ->
// RuntimeError (limits, CUDA errors). Messages are joined from std::to_string and plain strings, never
// through an iostream: on the H100 machine a number formatted by std::ostream inside this extension (c10::str,
// TORCH_CHECK's message) killed the process with a segmentation fault in std::ostream::_M_insert<long>, while
// literal messages raised.
inline std::string e4_part(const char* s) { return s; }
inline std::string e4_part(const std::string& s) { return s; }
inline std::string e4_part(at::ScalarType st) { return c10::toString(st); }
inline std::string e4_part(at::IntArrayRef a) {
  std::string out = "[";
  for (size_t i = 0; i < a.size(); ++i) out += (i ? ", " : "") + std::to_string(a[i]);
  return out + "]";
}
template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
inline std::string e4_part(T v) {
  return std::to_string(v);
}
template <typename E, typename... A>
[[noreturn]] static void e4_throw(const A&... a) {
  std::string msg;
  ((msg += e4_part(a)), ...);
  throw E(msg);
}
#define E4_VALUE(cond, ...)                                      \
  do {                                                           \
    if (!(cond)) e4_throw<std::invalid_argument>(__VA_ARGS__);   \
  } while (0)
#define E4_CHECK(cond, ...)                                      \
  do {                                                           \
    if (!(cond)) e4_throw<std::runtime_error>(__VA_ARGS__);      \
  } while (0)
#define E4_PRE(cond, ...) E4_VALUE((cond), "precondition: ", __VA_ARGS__)
#define E4_CUDA_CHECK(expr)                                                              \
  do {                                                                                   \
    cudaError_t _e = (expr);                                                             \
    E4_CHECK(_e == cudaSuccess, "CUDA error: ", cudaGetErrorString(_e), " at ", #expr);  \
  } while (0)

static constexpr unsigned FULL = 0xffffffffu;

// Programmatic dependent launch (sm_90; every op's kernel is launched with programmatic stream
// serialization, see launch_ex). Each kernel begins with griddepcontrol.wait, which returns once the
// previous kernel of the stream has completed and its memory is visible, so nothing is read or
// written earlier than with a plain launch; then launch_dependents lets the next kernel of the
// stream be launched now: its launch and block scheduling overlap this kernel instead of following
// its completion. Without a programmatic predecessor the wait returns at once.
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
__device__ __forceinline__ void pdl_begin() {
  pdl_wait();
  pdl_trigger();
}

// The two halves of a cluster barrier (cluster.sync() is arrive + wait). A block that has finished
// reading other blocks' shared memory arrives at once and waits only before it exits (a block's
// shared memory must outlive the cluster's DSMEM reads of it), so the barrier's latency overlaps the
// block's remaining work instead of following it. Every thread of the block executes both, in step.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
// The arrival of an exchange whose DSMEM stores all come from warp 0 (K5's one-round reduction, K6's
// exchanges): release from warp 0 only, relaxed from the warps that stored nothing the barrier must
// publish: each warp's release fence costs time on the launch's critical path.
__device__ __forceinline__ void cluster_arrive_warp0_release() {
  if ((threadIdx.x >> 5) == 0)
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  else
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

// L2 eviction-priority helpers (sm_80+ policies, sm_90 bulk prefetch): an L2 policy of evict_normal for the
// lines an access touches; one 16-byte load under a policy; an asynchronous bulk prefetch of `bytes` (a
// multiple of 16, from a 16-byte aligned address) into L2, the lines marked evict_last.
__device__ __forceinline__ uint64_t l2_policy_evict_normal() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
  return p;
}
// (not volatile: it reads the kernel's read-only input, so the compiler may schedule it as any other load)
__device__ __forceinline__ float4 ld_f4_l2_policy(const float* p, uint64_t policy) {
  float4 v;
  asm("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p), "l"(policy));
  return v;
}
__device__ __forceinline__ void l2_prefetch_evict_last(const float* p, uint32_t bytes) {
  uint64_t last;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(last));
  asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(p), "r"(bytes), "l"(last)
               : "memory");
}

// ------------------------------------------------------------------------------------------
// host-side tensor checks
inline void check_tensor(const at::Tensor& t, const char* name, at::ScalarType st,
                         std::initializer_list<int64_t> shape) {
  E4_VALUE(t.is_cuda(), name, " must be a CUDA tensor");
  E4_VALUE(t.is_contiguous(), name, " must be contiguous");
  E4_VALUE(t.scalar_type() == st, name, " must have dtype ", st, ", got ", t.scalar_type());
  E4_VALUE((int64_t)shape.size() == t.dim(), name, " must have ", shape.size(),
           " dimension(s), got shape ", t.sizes());
  int i = 0;
  for (int64_t s : shape) {
    E4_VALUE(s < 0 || t.size(i) == s, name, " dimension ", i, " must be ", s, ", got shape ",
             t.sizes());
    ++i;
  }
}
inline void check_hidden_dtype(const at::Tensor& t, const char* name) {
  auto st = t.scalar_type();
  E4_VALUE(st == at::kHalf || st == at::kBFloat16 || st == at::kFloat, name,
           " must be float16/bfloat16/float32, got ", st);
}
template <typename T>
static T* ptr(const at::Tensor& t) { return reinterpret_cast<T*>(t.data_ptr()); }
template <typename T>
static T* optptr(const std::optional<at::Tensor>& t) {
  return (t.has_value() && t->defined()) ? reinterpret_cast<T*>(t->data_ptr()) : nullptr;
}
inline bool has(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

// Programmatic dependent launch on unless EAGLE4_CUDA_PDL=0 (read once).
inline bool pdl_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("EAGLE4_CUDA_PDL");
    return !(e && e[0] == '0');
  }();
  return on;
}

// Set by draft_step while it calls K1..K3's ops for their argument checks only: each op returns right
// before its launch (CheckOnly scopes it; an exception clears it too).
// One flag for every source of the extension (an inline variable: one definition across them).
inline thread_local bool check_only = false;
struct CheckOnly {
  CheckOnly() { check_only = true; }
  ~CheckOnly() { check_only = false; }
};

// Every kernel launch of this file: cudaLaunchKernelEx with programmatic stream serialization
// (pdl_begin) and, for cs >= 1, a thread-block cluster of cs blocks along x; coop: a cooperative launch (every
// block of the grid resident at once, or the launch fails), for kernels whose blocks wait on each other.
template <typename KernelT, typename... Args>
static void launch_cfg(KernelT kernel, dim3 grid, dim3 block, size_t smem, int cs, bool coop, cudaStream_t stream,
                       Args... args) {
  if (smem > 48 * 1024)
    E4_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  if (cs > 8) E4_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[3];
  unsigned n = 0;
  if (coop) {
    attr[n].id = cudaLaunchAttributeCooperative;
    attr[n].val.cooperative = 1;
    ++n;
  }
  if (cs >= 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cs;
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  if (pdl_enabled()) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  E4_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}
template <typename KernelT, typename... Args>
static void launch_ex(KernelT kernel, dim3 grid, dim3 block, size_t smem, int cs, cudaStream_t stream,
                      Args... args) {
  launch_cfg(kernel, grid, block, smem, cs, false, stream, args...);
}

// The current device's SM count (read once).
inline int sm_count() {
  static int n = 0;
  if (n == 0) {
    int dev = 0;
    E4_CUDA_CHECK(cudaGetDevice(&dev));
    E4_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  }
  return n;
}

// ------------------------------------------------------------------------------------------
// device helpers

// In-place exclusive scan of data[0..n) in shared memory by the whole block (blockDim % 32 == 0,
// blockDim <= 1024). wbuf: >= 33 elements of shared scratch. Returns the total (all threads).
template <typename T>
__device__ T block_exclusive_scan(T* data, int64_t n, T* wbuf) {
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, wid = tid >> 5, nw = nt >> 5;
  const int64_t c = (n + nt - 1) / nt;
  const int64_t s0 = (int64_t)tid * c;
  const int64_t s1 = s0 + c < n ? s0 + c : n;
  T local = 0;
  for (int64_t i = s0; i < s1; ++i) local += data[i];
  T incl = local;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    T v = __shfl_up_sync(FULL, incl, o);
    if (lane >= o) incl += v;
  }
  if (lane == 31) wbuf[wid] = incl;
  __syncthreads();
  if (wid == 0) {
    T w = lane < nw ? wbuf[lane] : (T)0;
    T wi = w;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      T v = __shfl_up_sync(FULL, wi, o);
      if (lane >= o) wi += v;
    }
    if (lane < nw) wbuf[lane] = wi - w;  // exclusive prefix of warps
    if (lane == nw - 1) wbuf[32] = wi;   // total
  }
  __syncthreads();
  T run = wbuf[wid] + incl - local;
  for (int64_t i = s0; i < s1; ++i) {
    T v = data[i];
    data[i] = run;
    run += v;
  }
  T total = wbuf[32];
  __syncthreads();
  return total;
}

// argmax order of KERNELS.md §5.4 step 1: NaN larger than every number, first NaN wins,
// lowest index on equal maxima. True when (va, ia) comes before (vb, ib).
// I: the index type (K5's partials use 32 bits: the 64-bit compares cost its merges); the second index only
// converts to it (e4_ident), so callers that mix int64_t and long long still resolve
template <typename T> struct e4_ident { using type = T; };
template <typename I>
__device__ __forceinline__ bool amax_better(float va, I ia, float vb, typename e4_ident<I>::type ib) {
  const bool na = isnan(va), nb = isnan(vb);
  if (na || nb) return na && nb ? ia < ib : na;
  return va > vb || (va == vb && ia < ib);
}

// max of x that propagates NaN (KERNELS.md §5.4 step 4: a NaN x gives a NaN row): once a NaN is
// seen it stays; otherwise the larger value or a NaN candidate wins.
__device__ __forceinline__ float nan_max(float m, float x) { return (x > m || (isnan(x) && !isnan(m))) ? x : m; }

// Warp reductions to lane 0 (shuffle-down tree, a fixed association), shared by K5's two kernels
// and K6: (max, argmax value, argmax index), argmax alone, and the f32 sum of one value per lane.
__device__ __forceinline__ void warp_max_argmax(float& m, float& av, long long& ai) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_down_sync(FULL, m, o);
    const float oav = __shfl_down_sync(FULL, av, o);
    const long long oai = __shfl_down_sync(FULL, ai, o);
    m = nan_max(m, om);
    if (amax_better(oav, oai, av, ai)) { av = oav; ai = oai; }
  }
}

__device__ __forceinline__ void warp_argmax(float& av, long long& ai) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float oav = __shfl_down_sync(FULL, av, o);
    const long long oai = __shfl_down_sync(FULL, ai, o);
    if (amax_better(oav, oai, av, ai)) { av = oav; ai = oai; }
  }
}

__device__ __forceinline__ float warp_sum_rn(float s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s = __fadd_rn(s, __shfl_down_sync(FULL, s, o));
  return s;
}

template <typename VT>
__device__ __forceinline__ void copy_row(const VT* __restrict__ src, VT* __restrict__ dst, int64_t n,
                                         int64_t start, int64_t stride) {
  for (int64_t u = start; u < n; u += stride) dst[u] = src[u];
}

template <typename F>
static void dispatch_units(int64_t row_bytes, std::initializer_list<const void*> ptrs, F&& f) {
  auto aligned = [&](int a) {
    if (row_bytes % a) return false;
    for (const void* p : ptrs)
      if (reinterpret_cast<uintptr_t>(p) % a) return false;
    return true;
  };
  if (aligned(16)) f(uint4{}, (int64_t)16);
  else if (aligned(8)) f(uint2{}, (int64_t)8);
  else if (aligned(4)) f(uint32_t{}, (int64_t)4);
  else if (aligned(2)) f(uint16_t{}, (int64_t)2);
  else f(uint8_t{}, (int64_t)1);
}

// What the GPU holds at once of `kernel` with `threads`-thread blocks of `smem` dynamic bytes: cs == 0,
// blocks; cs >= 1, clusters of cs blocks (0 when none fits; cs > 8 needs the non-portable attribute).
// Cached per (kernel, cs, threads, smem): each answer is a driver query.
template <typename KernelT>
static int64_t resident(KernelT kernel, int cs, int threads, size_t smem) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int, int, size_t>, int64_t> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_tuple((const void*)kernel, cs, threads, smem);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  int64_t n = 0;
  cudaFuncAttributes fa;
  (void)cudaFuncGetAttributes(&fa, kernel);  // loads the function's module (lazy loading) before the queries
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)std::max<size_t>(smem, 48 * 1024)) == cudaSuccess) {
    if (cs == 0) {
      int per_sm = 0;
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) == cudaSuccess)
        n = (int64_t)per_sm * sm_count();
    } else if (cs <= 8 || cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) ==
                              cudaSuccess) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(cs, 1, 1);
      cfg.blockDim = dim3(threads);
      cfg.dynamicSmemBytes = smem;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = cs;
      attr[0].val.clusterDim.y = 1;
      attr[0].val.clusterDim.z = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      int c = 0;
      if (cudaOccupancyMaxActiveClusters(&c, kernel, &cfg) == cudaSuccess) n = c;
    }
  }
  (void)cudaGetLastError();
  cache[key] = n;
  return n;
}

// Largest usable cluster size <= want (16 only where the GPU can schedule it, else 8).
template <typename KernelT>
static int usable_cluster(KernelT kernel, int want, dim3 block, size_t smem) {
  return want <= 8 || resident(kernel, want, (int)block.x, smem) > 0 ? want : 8;
}

// Blocks of `threads` threads and `smem` bytes the GPU holds at once (at least 1).
template <typename KernelT>
static int64_t resident_blocks(KernelT kernel, int threads, size_t smem) {
  const int64_t n = resident(kernel, 0, threads, smem);
  return n > 0 ? n : sm_count();  // no answer: one block per SM
}


// The ops, one per source (their ABI: KERNELS.md / src/eagle4/spec.py), and the draft step (draft_step.cu), which
// calls the first three for their argument checks.
void draft_tree_layer_score_index_gen_op(
    at::Tensor topk_probas_sampling, std::optional<at::Tensor> topk_tokens_sampling,
    at::Tensor last_layer_scores, at::Tensor curr_layer_scores, at::Tensor sort_layer_scores,
    at::Tensor sort_layer_indices, at::Tensor cache_topk_indices, at::Tensor parent_indices_in_layer,
    at::Tensor input_hidden_states, at::Tensor output_hidden_states, std::optional<at::Tensor> hot_token_id,
    int64_t batch_size, int64_t node_top_k, int64_t tree_width, int64_t cumu_count, bool use_hot_token_id);
void update_cumu_draft_state(
    at::Tensor topk_probas, at::Tensor topk_tokens, at::Tensor sorted_scores, at::Tensor sorted_indexs,
    at::Tensor parent_indexs, at::Tensor topk_indexs, at::Tensor input_tree_mask, int64_t batch_size,
    int64_t node_top_k, int64_t tree_width, int64_t input_count, int64_t cumu_count, int64_t verify_num,
    int64_t curr_depth, int64_t max_input_size, int64_t max_node_count, int64_t max_verify_num,
    at::Tensor cumu_tokens, at::Tensor cumu_scores, at::Tensor cumu_deltas, at::Tensor prev_indexs,
    at::Tensor next_indexs, at::Tensor side_indexs, at::Tensor output_scores, at::Tensor output_tokens,
    at::Tensor work_scores, at::Tensor sort_scores, at::Tensor output_tree_mask);
void calculate_work_deltas(at::Tensor work_scores, int64_t batch_size, int64_t node_count, int64_t node_top_k,
                           int64_t verify_num, int64_t row_stride, at::Tensor work_deltas,
                           std::optional<at::Tensor> per_req_deltas);
void fused_tree_mask_operator(at::Tensor seq_lens, at::Tensor req_pool_indices, at::Tensor req_to_token,
                              int64_t S_max, at::Tensor tree_cache_locs, at::Tensor tree_parent, int64_t B,
                              int64_t T, int64_t Q, bool write_bool_mask, at::Tensor qo_indptr,
                              at::Tensor kv_indptr, at::Tensor kv_indices, at::Tensor positions,
                              at::Tensor mask_indptr_bits, at::Tensor mask_indptr_bytes, at::Tensor packed_mask,
                              std::optional<at::Tensor> mask_bool);
void convert_logits_to_probas(at::Tensor logits, at::Tensor temperatures, int64_t rows_per_req, bool write_probas,
                              at::Tensor probas, at::Tensor argmax_ids, at::Tensor is_greedy);
void draft_tree_reject_sample(at::Tensor candidates, at::Tensor retrive_index, at::Tensor retrive_next_token,
                              at::Tensor retrive_next_sibling, at::Tensor target_probs, at::Tensor target_predict,
                              at::Tensor is_greedy, at::Tensor coins, at::Tensor final_coins, double threshold_single,
                              double threshold_acc, int64_t B, int64_t Q, int64_t S, int64_t V, at::Tensor predicts,
                              at::Tensor accept_index, at::Tensor accept_length);
void update_verify_result(
    at::Tensor accept_index, at::Tensor accept_length, at::Tensor predicts, at::Tensor finish_pos, at::Tensor seq_lens,
    at::Tensor req_pool_indices, at::Tensor req_to_token, at::Tensor out_cache_loc, at::Tensor hidden_states,
    std::optional<at::Tensor> verify_node_ids, int64_t B, int64_t Q, int64_t S, int64_t H, int64_t S_max,
    at::Tensor accept_index_out, at::Tensor accept_length_out, at::Tensor accept_indptr, at::Tensor accepted_flat,
    at::Tensor verified_id, at::Tensor evict_mask, at::Tensor free_slots, at::Tensor seq_lens_out,
    std::optional<at::Tensor> accepted_node_ids, at::Tensor unfinished_count, at::Tensor unfinished_index,
    at::Tensor next_accept_length, at::Tensor next_indptr, at::Tensor next_verified_id, at::Tensor next_hidden,
    at::Tensor next_positions, at::Tensor next_seq_lens, at::Tensor next_req_pool_indices, at::Tensor next_root_token,
    at::Tensor next_last_flat);
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
    int64_t row_stride3, at::Tensor work_deltas, std::optional<at::Tensor> per_req_deltas);

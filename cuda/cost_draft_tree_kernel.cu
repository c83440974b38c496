// EAGLE4 CostDraftTree P0 kernels K1..K7 (KERNELS.md), CUDA baseline for the H100.
//
// Built as a PyTorch extension by src/eagle4/backends/cuda.py (torch.utils.cpp_extension.load,
// -gencode=arch=compute_90,code=sm_90, -fmad=false, no fast-math). Every op takes the ABI's
// arguments in the order of KERNELS.md / src/eagle4/spec.py and mutates its output tensors in
// place, like the PyTorch reference. Violated preconditions raise ValueError("precondition: ...").
//
// Floating point: every multiply/add/divide the spec separates is written with the _rn intrinsics
// (and the build uses -fmad=false as a second guard), so no FMA contraction can happen.
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

// Every refusal of this file throws a standard exception, which pybind11 turns into a Python exception:
// std::invalid_argument -> ValueError (bad arguments, violated preconditions), std::runtime_error ->
// RuntimeError (limits, CUDA errors). Messages are joined from std::to_string and plain strings, never
// through an iostream: on the H100 machine a number formatted by std::ostream inside this extension (c10::str,
// TORCH_CHECK's message) killed the process with a segmentation fault in std::ostream::_M_insert<long>, while
// literal messages raised (reports/kernel_before_after/refusal_crash/).
static std::string e4_part(const char* s) { return s; }
static std::string e4_part(const std::string& s) { return s; }
static std::string e4_part(at::ScalarType st) { return c10::toString(st); }
static std::string e4_part(at::IntArrayRef a) {
  std::string out = "[";
  for (size_t i = 0; i < a.size(); ++i) out += (i ? ", " : "") + std::to_string(a[i]);
  return out + "]";
}
template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
static std::string e4_part(T v) {
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

// Development probe (E4_TRACE builds only, e.g. a copy of this file with it defined first): thread 0 of
// each block stamps its SM clock at point i of a kernel (the K6 kernels' phases), read by _trace_dump().
#ifdef E4_TRACE
__device__ long long g_e4_trace[4096][8];
#define E4_T(i)                                                                            \
  do {                                                                                     \
    const int e4b_ = (int)(blockIdx.y * gridDim.x + blockIdx.x);                           \
    if (threadIdx.x == 0 && e4b_ < 4096) g_e4_trace[e4b_][i] = clock64();                   \
  } while (0)
#else
#define E4_T(i) \
  do {          \
  } while (0)
#endif

// The two halves of a cluster barrier (cluster.sync() is arrive + wait). A block that has finished
// reading other blocks' shared memory arrives at once and waits only before it exits (a block's
// shared memory must outlive the cluster's DSMEM reads of it), so the barrier's latency overlaps the
// block's remaining work instead of following it. Every thread of the block executes both, in step.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
// The arrival of an exchange whose DSMEM stores all come from warp 0 (K5's one-round reduction, K6's
// exchanges): release from warp 0 only, relaxed from the warps that stored nothing the barrier must
// publish. Each warp's release fence costs: 0.1-0.2 us of a B = 1 launch on the H100 against every warp
// releasing (reports/kernel_before_after/xchg/, variant c2).
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
static void check_tensor(const at::Tensor& t, const char* name, at::ScalarType st,
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
static void check_hidden_dtype(const at::Tensor& t, const char* name) {
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
static bool has(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

// Programmatic dependent launch on unless EAGLE4_CUDA_PDL=0 (read once).
static bool pdl_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("EAGLE4_CUDA_PDL");
    return !(e && e[0] == '0');
  }();
  return on;
}

// Set by draft_step while it calls K1..K3's ops for their argument checks only: each op returns right
// before its launch (CheckOnly scopes it; an exception clears it too).
static thread_local bool g_check_only = false;
struct CheckOnly {
  CheckOnly() { g_check_only = true; }
  ~CheckOnly() { g_check_only = false; }
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
static int sm_count() {
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

// ==========================================================================================
// K1 draft_tree_layer_score_index_gen_op (§1)

// (key desc, index asc): true when (ka, ia) sorts before (kb, ib)
__device__ __forceinline__ bool k1_better(float ka, int ia, float kb, int ib) {
  return ka > kb || (ka == kb && ia < ib);
}

// 64-lane bitonic sort in one warp, two elements per lane (element e = lane + 32*j).
// Every compare-exchange of the full network executes (§12 P1); best element ends at e = 0.
__device__ __forceinline__ void warp_bitonic64(float& k0, int& i0, float& k1, int& i1) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int k = 2; k <= 64; k <<= 1) {
#pragma unroll
    for (int s = k >> 1; s > 0; s >>= 1) {
      if (s == 32) {  // only in the k == 64 merge: ascending (best first), e and e+32 in one lane
        if (k1_better(k1, i1, k0, i0)) {
          float tk = k0; k0 = k1; k1 = tk;
          int ti = i0; i0 = i1; i1 = ti;
        }
      } else {
        const bool lower = (lane & s) == 0;
        {
          float pk = __shfl_xor_sync(FULL, k0, s);
          int pi = __shfl_xor_sync(FULL, i0, s);
          const bool asc = ((lane) & k) == 0;
          const bool pb = k1_better(pk, pi, k0, i0);
          if ((lower == asc) ? pb : !pb) { k0 = pk; i0 = pi; }
        }
        {
          float pk = __shfl_xor_sync(FULL, k1, s);
          int pi = __shfl_xor_sync(FULL, i1, s);
          const bool asc = ((lane + 32) & k) == 0;
          const bool pb = k1_better(pk, pi, k1, i1);
          if ((lower == asc) ? pb : !pb) { k1 = pk; i1 = pi; }
        }
      }
    }
  }
}

// K1's phases, shared by k1_kernel and the draft-step kernel. Plain (not __restrict__) pointers: in
// the draft-step kernel the same block later reads what these write.
// Scores of request b and their (score desc, index asc) order into s_sc / s_perm; every block of the
// request computes them (ends with a block barrier).
__device__ __forceinline__ void k1_sort(int64_t b, const float* probs, const float* last, int K, int W,
                                        float* s_sc, int* s_perm) {
  const int C = W * K;
  const int tid = threadIdx.x;
  if (tid < 32) {
    float key0 = -INFINITY, key1 = -INFINITY;
    int i0 = tid, i1 = tid + 32;
    if (tid < C) {
      float s = __fmul_rn(probs[b * C + tid], last[b * W + tid / K]);
      s_sc[tid] = s;
      key0 = isnan(s) ? -INFINITY : s;
    }
    if (tid + 32 < C) {
      float s = __fmul_rn(probs[b * C + tid + 32], last[b * W + (tid + 32) / K]);
      s_sc[tid + 32] = s;
      key1 = isnan(s) ? -INFINITY : s;
    }
    warp_bitonic64(key0, i0, key1, i1);
    s_perm[tid] = i0;
    s_perm[tid + 32] = i1;
  }
  __syncthreads();
}

// K1's outputs of request b other than the hidden rows (one block per request).
__device__ __forceinline__ void k1_store(int64_t b, int64_t* tokens, float* curr, float* sscores, int64_t* sidx,
                                         int64_t* cache, int64_t* parent, const int64_t* hot, int64_t Vh, int K,
                                         int W, int64_t cc, bool use_hot, const float* s_sc, const int* s_perm) {
  const int C = W * K;
  const int tid = threadIdx.x;
  for (int c = tid; c < C; c += blockDim.x) {
    const int p = s_perm[c];
    curr[b * C + c] = s_sc[c];
    sscores[b * C + c] = s_sc[p];
    sidx[b * C + c] = p;
    if (use_hot) {
      const int64_t t = tokens[b * C + c];
      if (t >= 0 && t < Vh) tokens[b * C + c] = hot[t];
    }
  }
  for (int rr = tid; rr < K; rr += blockDim.x) {
    cache[b * K + rr] = cc + s_perm[rr];
    parent[b * K + rr] = s_perm[rr] / K;
  }
}

// K1's hidden row r of request b: the input row of its parent.
template <typename VT>
__device__ __forceinline__ void k1_copy(int64_t b, int r, const VT* hin, VT* hout, int K, int W, int64_t row_units,
                                        const int* s_perm) {
  const int p = s_perm[r] / K;
  copy_row<VT>(hin + (b * W + p) * row_units, hout + (b * K + r) * row_units, row_units, threadIdx.x, blockDim.x);
}

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
  if (B == 0 || g_check_only) return;
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

// ==========================================================================================
// K2 update_cumu_draft_state (§2)

// K2 for request b (one block per request, blockDim % 32 == 0, >= 64 threads). sm: n0 + C + n1 floats
// of shared memory. Plain pointers (see k1_sort); k2_kernel passes its __restrict__ ones.
__device__ __forceinline__ void k2_phase(
    int64_t b, const float* in_scores, const int64_t* tokens, const float* sorted_scores, const int64_t* sorted_idx,
    const int64_t* parent_idx, const int64_t* topk_idx, const uint8_t* in_mask, int K, int W, int64_t Ic, int64_t cc,
    int64_t d, int64_t I, int64_t N, int64_t M, int64_t n0, int64_t n1, int64_t* cumu_tokens, float* cumu_scores,
    int64_t* cumu_deltas, int64_t* prev, int64_t* next, int64_t* side, float* out_scores, int64_t* out_tokens,
    float* work, float* sort_scores, uint8_t* out_mask, float* k2_sm) {
  const int C = W * K;
  const int tid = threadIdx.x, nt = blockDim.x;
  float* A = k2_sm;             // n0
  float* Bs = A + n0;           // C
  float* Mg = Bs + C;           // n1
  // 1. top-K outputs
  for (int r = tid; r < K; r += nt) {
    out_scores[b * K + r] = sorted_scores[b * C + r];
    int64_t pp = parent_idx[b * K + r];
    if (pp < 0 || pp >= W) pp = 0;
    int64_t oi = sorted_idx[b * C + r];
    if (oi < 0) oi = 0;
    out_tokens[b * K + r] = tokens[b * C + pp * K + (oi % K)];
  }
  // 2. mask prefix copy (columns [0, Ic-1))
  const int64_t mw = Ic - 1;
  for (int64_t e = tid; e < (int64_t)K * mw; e += nt) {
    const int64_t r = e / mw, j = e - r * mw;
    int64_t pp = parent_idx[b * K + r];
    if (pp < 0 || pp >= W) pp = 0;
    out_mask[(b * K + r) * (I + 1) + j] = in_mask[(b * W + pp) * mw + j];
  }
  // 3. append nodes
  for (int i = tid; i < C; i += nt) {
    const int64_t g = cc + i;
    if (g < N) {
      const int64_t o = b * N + g;
      cumu_tokens[o] = tokens[b * C + i];
      cumu_scores[o] = __fmul_rn(in_scores[b * C + i], 0.9999f);
      cumu_deltas[o] = d;
      prev[o] = topk_idx[b * W + i / K];
      next[o] = -1;
      side[o] = (i % K == K - 1) ? (int64_t)-1 : g + 1;
    }
  }
  // 5.1 snapshot A before any write to sort_scores; new sorted scores
  for (int64_t t = tid; t < n0; t += nt) A[t] = sort_scores[b * M + t];
  for (int t = tid; t < C; t += nt) Bs[t] = sorted_scores[b * C + t];
  __syncthreads();  // orders step 3's global writes before step 4 (same block)
  // 4. parent -> first child, ascending w (later write wins)
  if (tid == 0) {
    for (int w = 0; w < W; ++w) {
      const int64_t P = topk_idx[b * W + w];
      if (P >= 0 && P < N) next[b * N + P] = cc + (int64_t)w * K;
    }
  }
  // 5.1 work buffer
  for (int64_t t = tid; t < n0; t += nt) work[b * (M + K) + t] = A[t];
  for (int t = tid; t < K; t += nt) work[b * (M + K) + n0 + t] = Bs[t];
  // 5.2 merge. Two sorted (descending), NaN-free lists merge by rank: A[i] lands at i + #{Bs > A[i]},
  // Bs[j] at j + #{A >= Bs[j]} -- exactly the pinned two-cursor merge, all outputs in parallel.
  // Anything else (unsorted or NaN) runs the pinned merge itself in one thread.
  __shared__ int s_sorted;
  const int lane = tid & 31, wid = tid >> 5;
  if (wid == 1) {  // thread 0 runs step 4 meanwhile
    bool ok = true;
    for (int64_t i = lane; i < n0; i += 32) ok = ok && !isnan(A[i]) && (i + 1 >= n0 || A[i] >= A[i + 1]);
    for (int j = lane; j < C; j += 32) ok = ok && !isnan(Bs[j]) && (j + 1 >= C || Bs[j] >= Bs[j + 1]);
    ok = __all_sync(FULL, ok);
    if (lane == 0) s_sorted = ok ? 1 : 0;
  }
  __syncthreads();
  if (s_sorted) {
    for (int64_t i = tid; i < n0; i += nt) {
      int64_t pos = i;
      for (int j = 0; j < C; ++j) pos += Bs[j] > A[i];
      if (pos < n1) Mg[pos] = A[i];
    }
    for (int j = tid; j < C; j += nt) {
      int64_t pos = j;
      for (int64_t i = 0; i < n0; ++i) pos += A[i] >= Bs[j];
      if (pos < n1) Mg[pos] = Bs[j];
    }
  } else if (tid == 32) {
    int64_t ia = 0, ib = 0;
    for (int64_t t = 0; t < n1; ++t) {
      if (ia < n0 && (ib >= C || A[ia] >= Bs[ib])) Mg[t] = A[ia++];
      else Mg[t] = Bs[ib++];
    }
  }
  __syncthreads();
  for (int64_t t = tid; t < n1; t += nt) sort_scores[b * M + t] = Mg[t];
}

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
  if (g_check_only) return;
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

// ==========================================================================================
// K3 calculate_work_deltas (§3): pinned sequential f32 order

// K3's deltas of one request (one thread, the pinned sequential order): row = work + b * stride,
// out[0..K] = (base, delta of w = 1..K). Plain pointers (see k1_sort).
__device__ __forceinline__ void k3_request(const float* row, int64_t n0, int K, int64_t Vb, float* out) {
  const int64_t Vbp = Vb > 1 ? Vb : 1;
  const float* A = row;
  const float* Bn = A + n0;
  int64_t kA = n0 < Vbp ? n0 : Vbp, kB = 0;
  float base = 0.0f;
  for (int64_t i = 0; i < kA; ++i) base = __fadd_rn(base, A[i]);
  out[0] = base;
  for (int w = 1; w <= K; ++w) {
    const float x = Bn[w - 1];
    float dl;
    if (kA + kB < Vbp) {
      dl = x;
      kB += 1;
    } else if (kA > 0 && x > A[kA - 1]) {
      dl = __fsub_rn(x, A[kA - 1]);
      kA -= 1;
      kB += 1;
    } else {
      dl = 0.0f;
    }
    out[w] = dl;
  }
}

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
  if (g_check_only) return;
  const c10::cuda::CUDAGuard guard(work_scores.device());
  auto stream = c10::cuda::getCurrentCUDAStream();
  launch_ex(k3_kernel, dim3(1), dim3(128), smem, 0, stream, ptr<float>(work_scores), B, n0, (int)K, verify_num,
            row_stride, ptr<float>(work_deltas), optptr<float>(per_req_deltas));
  E4_CUDA_CHECK(cudaGetLastError());
}

// ==========================================================================================
// The draft step: K1 -> K2 -> K3 of one draft layer in one launch (issue 14)
//
// Grid (B, K + 1): every block sorts request b's scores; block (b, 0) stores K1's outputs of request
// b other than the hidden rows, then runs K2 for request b (it reads only request b's K1 outputs,
// written by this block before a block barrier), then K3's per-request deltas of b; block (b, r + 1)
// copies hidden row r (K1 has block (b, r) do both, so there the bookkeeping block's row copy would
// follow its K2 and K3 phases: at H = 4096 bf16 that tail measured about 0.5-1 us). K3's
// only cross-request step, deltas[w] = sum over b in ascending order, is done by the last block
// (b, 0) to finish (threadfence + arrival counter, the counter reset by that block), in K3's order:
// results are bit-identical to the three kernels. No block waits for another, so any grid size runs.
// The arrival counter is one per device: two draft steps must not run concurrently on two streams.

__device__ unsigned int g_step_arrivals = 0;
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
        // shared memory instead of L2 (measured: B = 128 faster; at B = 1, above, the global row was
        // 1.5% faster, so that path keeps it)
        if (a.n0_3 + a.K3 <= a.n0 + a.K) k3_request(step_sm, a.n0_3, a.K3, a.Vb, a.per_req + b * KW);
        else k3_request(a.work + b * a.stride3, a.n0_3, a.K3, a.Vb, a.per_req + b * KW);
        __threadfence();  // the row is visible device-wide before this block counts as arrived
        s_last = atomicAdd(&g_step_arrivals, 1u) == gridDim.x - 1;
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
        if (threadIdx.x == 0) atomicExch(&g_step_arrivals, 0u);
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

// ==========================================================================================
// K4 fused_tree_mask_operator (§4)

__global__ void __launch_bounds__(256) k4_kernel(
    const int64_t* __restrict__ seq_lens, const int64_t* __restrict__ pool, const int32_t* __restrict__ r2t,
    int64_t P, int64_t Smax, const int64_t* __restrict__ locs, const int64_t* __restrict__ parent, int B,
    int64_t T, int64_t Q, bool wb, int32_t* __restrict__ qo, int32_t* __restrict__ kvp,
    int32_t* __restrict__ kvi, int64_t* __restrict__ pos, int32_t* __restrict__ mbits,
    int32_t* __restrict__ mbytes, uint8_t* __restrict__ packed, uint8_t* __restrict__ mbool) {
  pdl_begin();
  extern __shared__ int64_t k4_sm[];
  int64_t* pre_kv = k4_sm;               // B+1
  int64_t* pre_bits = pre_kv + (B + 1);  // B+1
  int64_t* pre_bytes = pre_bits + (B + 1);
  int64_t* s_par = pre_bytes + (B + 1);  // T
  int64_t* wbuf = s_par + T;             // 33
  uint32_t* anc = reinterpret_cast<uint32_t*>(wbuf + 33);  // Q * words
  const int64_t words = (T + 31) >> 5;
  const int b = blockIdx.x, y = blockIdx.y, Y = gridDim.y;
  const int tid = threadIdx.x, nt = blockDim.x;
  // this request's scalars, and this thread's first KV index, loaded up front: their latency
  // overlaps the indptr scans and the ancestor walk (the store waits for the request's offset)
  const int64_t L = seq_lens[b];
  const int64_t pb = pool[b];
  const bool pool_ok = pb >= 0 && pb < P;
  const int64_t rowlen = L + T;
  const int64_t j_first = (int64_t)y * nt + tid;
  int32_t kv_first = 0;
  if (j_first < rowlen)
    kv_first = j_first < L ? ((pool_ok && j_first < Smax) ? r2t[pb * Smax + j_first] : (int32_t)-1)
                           : (int32_t)locs[(int64_t)b * T + (j_first - L)];
  // the bit indptr needs no scan: every request has Q rows, so sum_{i<b} Q (L_i + T) = Q * kv_indptr[b]
  if (B <= 32) {
    // one warp: both indptr scans by shuffles and one block barrier (the block scans take six)
    for (int64_t t = tid; t < T; t += nt) s_par[t] = parent[(int64_t)b * T + t];
    if (tid < 32) {
      long long kv = 0, by = 0;
      if (tid < B) {
        const int64_t Li = tid == b ? L : seq_lens[tid];
        kv = Li + T;
        by = (Q * (Li + T) + 7) >> 3;
      }
      long long ikv = kv, iby = by;
      for (int o = 1; o < B; o <<= 1) {  // lanes >= B add nothing: ceil(log2 B) levels suffice for lanes < B
        const long long u = __shfl_up_sync(FULL, ikv, o), w = __shfl_up_sync(FULL, iby, o);
        if (tid >= o) { ikv += u; iby += w; }
      }
      if (tid < B) { pre_kv[tid] = ikv - kv; pre_bytes[tid] = iby - by; pre_bits[tid] = Q * (ikv - kv); }
      if (tid == B - 1) { pre_kv[B] = ikv; pre_bytes[B] = iby; pre_bits[B] = Q * ikv; }
    }
    __syncthreads();
  } else {
    for (int i = tid; i < B; i += nt) {
      const int64_t Li = seq_lens[i];
      pre_kv[i] = Li + T;
      pre_bytes[i] = (Q * (Li + T) + 7) >> 3;
    }
    for (int64_t t = tid; t < T; t += nt) s_par[t] = parent[(int64_t)b * T + t];
    __syncthreads();
    int64_t tot = block_exclusive_scan<int64_t>(pre_kv, B, wbuf);
    if (tid == 0) pre_kv[B] = tot;
    tot = block_exclusive_scan<int64_t>(pre_bytes, B, wbuf);
    if (tid == 0) pre_bytes[B] = tot;
    __syncthreads();
    for (int i = tid; i <= B; i += nt) pre_bits[i] = Q * pre_kv[i];
    __syncthreads();
  }
  if (b == 0 && y == 0) {
    for (int i = tid; i <= B; i += nt) {
      qo[i] = (int32_t)((int64_t)i * Q);
      kvp[i] = (int32_t)pre_kv[i];
      mbits[i] = (int32_t)pre_bits[i];
      mbytes[i] = (int32_t)pre_bytes[i];
    }
  }
  // ancestor-or-self bit rows of the Q queries
  for (int64_t q = tid; q < Q; q += nt) {
    uint32_t* row = anc + q * words;
    for (int64_t w = 0; w < words; ++w) row[w] = 0u;
    const int64_t tq = T - Q + q;
    row[tq >> 5] |= 1u << (tq & 31);
    int64_t cur = tq, depth = 0;
    for (int64_t step = 0; step < T; ++step) {
      const int64_t p = s_par[cur];
      if (p == -1 || p >= cur || p < -1) break;
      row[p >> 5] |= 1u << (p & 31);
      ++depth;
      cur = p;
    }
    if (y == 0) pos[(int64_t)b * Q + q] = L + depth;
  }
  __syncthreads();
  // KV indices
  int32_t* kv = kvi + pre_kv[b];
  if (j_first < rowlen) kv[j_first] = kv_first;
  for (int64_t j = j_first + (int64_t)Y * nt; j < rowlen; j += (int64_t)Y * nt) {
    int32_t v;
    if (j < L) v = (pool_ok && j < Smax) ? r2t[pb * Smax + j] : (int32_t)-1;
    else v = (int32_t)locs[(int64_t)b * T + (j - L)];
    kv[j] = v;
  }
  // packed mask (little bit order, per-request byte-aligned segments)
  const int64_t nbits = Q * rowlen, nbytes = (nbits + 7) >> 3;
  const bool small = nbits < 0x7fffffffll;  // the precondition's case: 32-bit division (exact) suffices
  uint8_t* pk = packed + pre_bytes[b];
  for (int64_t k = (int64_t)y * nt + tid; k < nbytes; k += (int64_t)Y * nt) {
    const int64_t f = k << 3;
    int64_t q = small ? (int64_t)((uint32_t)f / (uint32_t)rowlen) : f / rowlen, c = f - q * rowlen;
    if (c + 8 <= L) {  // all 8 bits in row q's committed prefix (c < L: ones), so inside row q and nbits
      pk[k] = 0xFFu;
      continue;
    }
    uint32_t byte = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (f + i < nbits) {
        uint32_t bit;
        if (c < L) bit = 1u;
        else {
          const int64_t t = c - L;
          bit = (anc[q * words + (t >> 5)] >> (t & 31)) & 1u;
        }
        byte |= bit << i;
      }
      if (++c == rowlen) { c = 0; ++q; }
    }
    pk[k] = (uint8_t)byte;
  }
  if (wb) {
    uint8_t* mb = mbool + pre_bits[b];
    for (int64_t f = (int64_t)y * nt + tid; f < nbits; f += (int64_t)Y * nt) {
      const int64_t q = f / rowlen, c = f - q * rowlen;
      uint8_t bit;
      if (c < L) bit = 1;
      else {
        const int64_t t = c - L;
        bit = (uint8_t)((anc[q * words + (t >> 5)] >> (t & 31)) & 1u);
      }
      mb[f] = bit;
    }
  }
}

// Tuning hook (the bench's sweep only): blocks per request (0: automatic).
static int64_t g_k4_blocks = 0;
void k4_blocks(int64_t y) { g_k4_blocks = y; }

void fused_tree_mask_operator(at::Tensor seq_lens, at::Tensor req_pool_indices, at::Tensor req_to_token,
                              int64_t S_max, at::Tensor tree_cache_locs, at::Tensor tree_parent, int64_t B,
                              int64_t T, int64_t Q, bool write_bool_mask, at::Tensor qo_indptr,
                              at::Tensor kv_indptr, at::Tensor kv_indices, at::Tensor positions,
                              at::Tensor mask_indptr_bits, at::Tensor mask_indptr_bytes, at::Tensor packed_mask,
                              std::optional<at::Tensor> mask_bool) {
  E4_PRE(B >= 0, "B must be >= 0");
  E4_PRE(Q >= 1 && Q <= T, "1 <= Q <= T required, got Q=", Q, " T=", T);
  E4_PRE(S_max >= 0, "S_max must be >= 0");
  check_tensor(seq_lens, "seq_lens", at::kLong, {B});
  check_tensor(req_pool_indices, "req_pool_indices", at::kLong, {B});
  E4_VALUE(req_to_token.dim() == 2, "req_to_token must be [P, S_max]");
  check_tensor(req_to_token, "req_to_token", at::kInt, {-1, S_max});
  check_tensor(tree_cache_locs, "tree_cache_locs", at::kLong, {B, T});
  check_tensor(tree_parent, "tree_parent", at::kLong, {B, T});
  check_tensor(qo_indptr, "qo_indptr", at::kInt, {B + 1});
  check_tensor(kv_indptr, "kv_indptr", at::kInt, {B + 1});
  check_tensor(kv_indices, "kv_indices", at::kInt, {-1});
  check_tensor(positions, "positions", at::kLong, {B, Q});
  check_tensor(mask_indptr_bits, "mask_indptr_bits", at::kInt, {B + 1});
  check_tensor(mask_indptr_bytes, "mask_indptr_bytes", at::kInt, {B + 1});
  check_tensor(packed_mask, "packed_mask", at::kByte, {-1});
  if (write_bool_mask) {
    E4_PRE(has(mask_bool), "mask_bool is required when write_bool_mask");
    check_tensor(*mask_bool, "mask_bool", at::kBool, {-1});
  }
  const int64_t words = (T + 31) / 32;
  const size_t smem = (size_t)(3 * (B + 1) + T + 33) * 8 + (size_t)Q * words * 4;
  E4_CHECK(smem <= 200 * 1024, "fused_tree_mask_operator: B/T/Q too large for shared memory");
  const c10::cuda::CUDAGuard guard(seq_lens.device());
  auto stream = c10::cuda::getCurrentCUDAStream();
  if (B == 0) {  // only the indptrs' single entry
    qo_indptr.zero_(); kv_indptr.zero_(); mask_indptr_bits.zero_(); mask_indptr_bytes.zero_();
    return;
  }
  if (smem > 48 * 1024)
    E4_CUDA_CHECK(cudaFuncSetAttribute(k4_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  // blocks per request: about 128 packed-mask bytes a block (the bound Q * (S_max + T) / 8 of a request's
  // bytes: seq_lens stay on the device), at most ~2 blocks per SM in all. Measured on the H100 (kernel_bench
  // sweep --kernel tree_mask): at B = 1, Q = 64, L = 1152 64 blocks took 3.4 us against 5.3 for 16; from
  // B = 32 on the grid cap decides (8 at B = 32, 2 at B = 128 were the fastest measured)
  const int64_t y_cap = std::max<int64_t>(1, 2 * (int64_t)sm_count() / B);
  const int64_t y_work = std::max<int64_t>(1, (Q * (S_max + T) / 8 + 127) / 128);
  const int Y = (int)std::min<int64_t>(65535, g_k4_blocks > 0 ? g_k4_blocks : std::min(y_cap, y_work));
  launch_ex(k4_kernel, dim3((unsigned)B, (unsigned)Y), dim3(256), smem, 0, stream,
      ptr<int64_t>(seq_lens), ptr<int64_t>(req_pool_indices), ptr<int32_t>(req_to_token), req_to_token.size(0),
      S_max, ptr<int64_t>(tree_cache_locs), ptr<int64_t>(tree_parent), (int)B, T, Q, write_bool_mask,
      ptr<int32_t>(qo_indptr), ptr<int32_t>(kv_indptr), ptr<int32_t>(kv_indices), ptr<int64_t>(positions),
      ptr<int32_t>(mask_indptr_bits), ptr<int32_t>(mask_indptr_bytes), ptr<uint8_t>(packed_mask),
      write_bool_mask ? ptr<uint8_t>(*mask_bool) : nullptr);
  E4_CUDA_CHECK(cudaGetLastError());
}

// ==========================================================================================
// K5 convert_logits_to_probas (§5): one cluster of CS blocks per row; the row chunk of each block
// stays in shared memory, so the logits are read from HBM once and the probas written once.

template <typename T> __device__ __forceinline__ float to_f(T v);
template <> __device__ __forceinline__ float to_f<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

// VEC elements of T per 16-byte load (4 for f32, 8 for 16-bit)
template <typename T, int VEC>
__device__ __forceinline__ void load_vec(const T* p, float* out) {
  if constexpr (VEC == 1) {
    out[0] = to_f<T>(p[0]);
  } else {
    uint4 raw = *reinterpret_cast<const uint4*>(p);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = to_f<T>(e[i]);
  }
}

// exp(d) for d = x - m <= 0 (or NaN) of K5's sampling rows: the SFU's exp2 of d * log2(e) (__expf).
// Its error is at most 2 + 1.16|d| ulp, i.e. below 6.2e-6 relative down to d = -87.3, where exp(d)
// reaches the smallest normal; below that it flushes to 0 (true value < 1.2e-38). Probas are TOL
// (§5.5: rtol 5e-5, atol 1e-10), and the full-precision expf made K5 issue-bound at large V (Nsight
// Compute: 78 instructions per logit, issue slots 63% busy beside 62% of DRAM bandwidth). NaN and
// -inf map as expf maps them (NaN, 0), so §5.4 step 4's NaN rows are kept.
__device__ __forceinline__ float k5_exp(float d) { return __expf(d); }
// k5_exp without __expf's rescaling of outputs below 2^-126 (ex2.approx.ftz): the same value wherever exp(d) >= 2^-126,
// 0 instead of a subnormal elsewhere. A thread's sum does not see the difference (it is >= 1: its max gives exp(0)),
// and an output below 2^-126 is far inside the probas' atol (1e-10).
__device__ __forceinline__ float k5_exp_ftz(float d) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(__fmul_rn(d, 1.4426950408889634f)));
  return r;
}

struct K5Stats {
  float m;        // block max of x (NaN-propagating)
  float s;        // block sum of exp
  float av;       // argmax value (raw logit)
  long long ai;   // argmax index
};

// Block (then, CS > 1, cluster) reduction of K5's per-thread (NaN-propagating max m, argmax of the logits): each
// warp, then warp 0 over the warps, then warp 0 over the cluster's blocks (lane k reads block k's
// stats through DSMEM, in parallel). rf/rv/ri: 32-entry shared scratch. On return (after a block
// barrier) s_m and s_ai hold the row's values in every block.
__device__ __forceinline__ void k5_reduce_stats(cg::cluster_group& cluster, int CS, float m, float av, long long ai,
                                                float* rf, float* rv, long long* ri, K5Stats& st, float& s_m,
                                                long long& s_ai) {
  const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5, nw = (int)(blockDim.x >> 5);
  warp_max_argmax(m, av, ai);
  if (lane == 0) { rf[wid] = m; rv[wid] = av; ri[wid] = ai; }
  __syncthreads();
  if (wid == 0) {
    float bm = lane < nw ? rf[lane] : -INFINITY, bav = lane < nw ? rv[lane] : -INFINITY;
    long long bai = lane < nw ? ri[lane] : LLONG_MAX;
    warp_max_argmax(bm, bav, bai);
    if (lane == 0) { st.m = bm; st.av = bav; st.ai = bai; st.s = 0.0f; s_m = bm; s_ai = bai; }
  }
  if (CS > 1) {
    cluster.sync();
    if (wid == 0) {
      float gm = -INFINITY, gav = -INFINITY;
      long long gai = LLONG_MAX;
      if (lane < CS) {
        const K5Stats* o = cluster.map_shared_rank(&st, lane);
        gm = o->m; gav = o->av; gai = o->ai;
      }
      warp_max_argmax(gm, gav, gai);
      if (lane == 0) { s_m = gm; s_ai = gai; }
    }
  }
  __syncthreads();
}

// The row's exp-sum from one partial sum per thread (>= 32 partial sums per row, §5.4: any fixed
// association): warp trees, a tree over the warps, then over the cluster's blocks. Returns it in
// every thread.
__device__ __forceinline__ float k5_reduce_sum(cg::cluster_group& cluster, int CS, float part, float* rf,
                                               K5Stats& st, float& s_s) {
  const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5, nw = (int)(blockDim.x >> 5);
  part = warp_sum_rn(part);
  if (lane == 0) rf[wid] = part;
  __syncthreads();
  if (wid == 0) {
    const float bs = warp_sum_rn(lane < nw ? rf[lane] : 0.0f);
    if (lane == 0) { st.s = bs; s_s = bs; }
  }
  if (CS > 1) {
    cluster.sync();
    if (wid == 0) {
      const float gs = warp_sum_rn(lane < CS ? cluster.map_shared_rank(&st, lane)->s : 0.0f);
      if (lane == 0) s_s = gs;
    }
  }
  __syncthreads();
  return s_s;
}

// K5's one-round form: each thread's (max of x, exp-sum against that max, argmax) merged in one reduction
// instead of a max reduction followed by a sum reduction. Merge of two partials: the larger max, each sum
// rescaled to it by exp(m - M) (a partial of sum 0, e.g. a thread whose entries are all -inf, adds 0; NaN
// and +inf give a NaN sum as in the two-round form). The merge is commutative, so an xor butterfly leaves
// the same value in every lane. The sum is §5.4's row sum in another association with each term's exp
// split in two factors: its error bound is the comment's above k5_exp with two more ulp per merge level
// (at most 16: a thread's batches, its warp, its block's warps, the cluster's blocks), far inside the
// probas' TOL; the argmax is exact (same order, same result).
struct K5Part {
  float m;   // max of x (NaN-propagating via s)
  float s;   // sum of exp(x - m)
  float av;  // argmax value (raw logit)
  int ai;    // argmax index (V < 2^31; INT_MAX: none)
};

__device__ __forceinline__ void k5_merge_ms(float& m, float& s, float om, float os) {
  // one exp a merge: the partial with the larger max keeps its sum as it is (its factor exp(0) is 1), the other's is
  // scaled by exp(its max - that max). A NaN max (a NaN row) compares false and its sum, NaN, is scaled: NaN either
  // way; an empty partial (sum 0, max -inf) adds 0.
  const bool keep = m >= om;
  const float big = keep ? s : os, small = keep ? os : s;
  const float t = small == 0.0f ? 0.0f : __fmul_rn(small, k5_exp_ftz(keep ? __fsub_rn(om, m) : __fsub_rn(m, om)));
  m = fmaxf(m, om);
  s = __fadd_rn(big, t);
}

__device__ __forceinline__ void k5_merge(K5Part& a, float om, float os, float oav, int oai) {
  k5_merge_ms(a.m, a.s, om, os);
  if (amax_better(oav, oai, a.av, a.ai)) { a.av = oav; a.ai = oai; }
}

// xor butterfly over groups of `width` lanes (a power of two <= 32): every lane ends with its group's merge
__device__ __forceinline__ void k5_warp_merge(K5Part& a, int width = 32) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    if (o < width)
      k5_merge(a, __shfl_xor_sync(FULL, a.m, o), __shfl_xor_sync(FULL, a.s, o), __shfl_xor_sync(FULL, a.av, o),
               __shfl_xor_sync(FULL, a.ai, o));
}

// n partials p[0..n) (n <= 32) merged in every lane: lane l takes p[l mod P] (P: the power of two >= n;
// entries past n are empty), so each group of P lanes holds all of them and log2(P) butterfly levels suffice.
__device__ __forceinline__ K5Part k5_merge_n(const K5Part* p, int n) {
  const int P = n <= 1 ? 1 : 1 << (32 - __clz(n - 1));
  const int j = (threadIdx.x & 31) & (P - 1);
  K5Part a = j < n ? p[j] : K5Part{-INFINITY, 0.0f, -INFINITY, INT_MAX};
  k5_warp_merge(a, P);
  return a;
}

// The row's merged partials in every thread: warps, the block's warps (one block barrier), then (CS > 1) the
// cluster's blocks: warp 0 pushes the block's partial into every block's xs[rank] (DSMEM stores), one cluster
// barrier, and xs[0..CS) is merged from the block's own shared memory, so no block reads another's after the
// barrier. The caller has arrived (relaxed) at a cluster barrier at its start; the wait here makes sure every
// block of the cluster runs before the stores. W0: only warp 0 merges the warps' and the blocks' partials and
// hands the result to the others through shared memory (one block barrier more on the path, the other warps'
// merges off the SM's issue slots; k5r_launch says where); else every warp merges them itself. Both give every
// thread the same bits (the same merges in the same order).
template <bool W0 = false>
__device__ __forceinline__ K5Part k5_reduce_one(int CS, int rank, K5Part a, K5Part* ws, K5Part* xs) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = (int)(blockDim.x >> 5);
  k5_warp_merge(a);
  if (lane == 0) ws[wid] = a;
  __syncthreads();
  if (!W0 || wid == 0) a = k5_merge_n(ws, nw);
  if (CS > 1) {
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    if (wid == 0 && lane < CS) *cg::this_cluster().map_shared_rank(&xs[rank], lane) = a;
    cluster_arrive_warp0_release();
    cluster_wait();
    if (!W0 || wid == 0) a = k5_merge_n(xs, CS);
  }
  if constexpr (W0) {
    __shared__ K5Part res;
    if (threadIdx.x == 0) res = a;
    __syncthreads();
    a = res;
  }
  return a;
}

// The one-round forms keep each entry as e = exp(x - mp), mp the max of x over a part of the row's entries
// that one thread holds (its partial's m; x = logit / temp, IEEE): mp = -inf (no entry above -inf) is taken
// as 0 there, so its e are exp(-inf) = 0 and its sum 0; NaN and +inf entries make the sum NaN. The output
// is e * k5_scale(mp, row): exp(mp - the row's max) / the row's sum, one factor a part, so an entry is
// exponentiated once. Against exp(x - m) / s its error is the factor's: two ulp and the exp's bound for
// d = mp - m (k5_exp) more, inside the probas' TOL. A row of -inf only gives exp(-inf + inf) = NaN, so a
// NaN row (§5.4 step 4), as does a row whose sum is NaN.
__device__ __forceinline__ float k5_rel_base(float mp) { return mp == -INFINITY ? 0.0f : mp; }
__device__ __forceinline__ float k5_scale(float mp, const K5Part& row) {
  return __fmul_rn(k5_exp_ftz(__fsub_rn(mp, row.m)), __frcp_rn(row.s));
}
// the register kernel's part: a thread's NV vectors, each visited through `each` (k5_each) (a.m: their max of
// x), e written over them, summed into a.s
template <int NV, typename Each>
__device__ __forceinline__ void k5_exp_rel(float4 (&x)[NV], float temp, K5Part& a, Each each) {
  const float mc = k5_rel_base(a.m);
  each([&](int u, int) {
    float* e = reinterpret_cast<float*>(&x[u]);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      e[k] = k5_exp(__fsub_rn(__fdiv_rn(e[k], temp), mc));
      a.s = __fadd_rn(a.s, e[k]);
    }
  });
}

// x / t with y = RN(1 / t): Markstein's correction RN(q + (x - q t) y) of q = RN(x y), the remainder exact by FMA. It
// is the IEEE quotient while nothing under- or overflows (Markstein's theorem), which holds for t in [2^-32, 2^32]
// and |x| in [2^-64, 2^64], and NaN for a NaN x (k5_div_rcp_ok says where a thread may take it).
__device__ __forceinline__ float k5_div_rcp(float x, float t, float y) {
  const float q = __fmul_rn(x, y);
  return __fmaf_rn(__fmaf_rn(-q, t, x), y, q);
}
__device__ __forceinline__ bool k5_div_rcp_ok(float t, float lo, float hi) {
  return t >= 0x1p-32f && t <= 0x1p32f && lo >= 0x1p-64f && hi <= 0x1p64f;
}
// k5_exp_rel for a thread whose entries' |x| lie in [lo, hi] (NaN aside): where k5_div_rcp_ok, the division as
// k5_div_rcp (one reciprocal a thread instead of one IEEE division an entry) and the exp as k5_exp_ftz; elsewhere
// (a zero, an infinity, an entry out of range) k5_exp_rel itself. Each vector through `each` (k5_each).
template <int NV, typename Each>
__device__ __forceinline__ void k5_exp_rel_rcp(float4 (&x)[NV], float temp, float lo, float hi, K5Part& a,
                                               Each each) {
  if (!k5_div_rcp_ok(temp, lo, hi)) {
    k5_exp_rel<NV>(x, temp, a, each);
    return;
  }
  const float y = __frcp_rn(temp), mc = k5_rel_base(a.m);
  each([&](int u, int) {
    float* e = reinterpret_cast<float*>(&x[u]);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      e[k] = k5_exp_ftz(__fsub_rn(k5_div_rcp(e[k], temp, y), mc));
      a.s = __fadd_rn(a.s, e[k]);
    }
  });
}

// A thread's argmax step over its entries in ascending index order (§5.4 step 1): a strict > keeps the lowest
// index on ties, and the first NaN wins; `none` marks "no entry yet".
template <typename I>
__device__ __forceinline__ void k5_amax_step(float v, I idx, float& av, I& ai, I none) {
  if (v > av || ai == none || (isnan(v) && !isnan(av))) { av = v; ai = idx; }
}

// The slice of a row that block `rank` of K5's shared-memory kernels holds: entries [v0, v0 + n) of row r,
// whose request's temperature is temp; rank 0 of a request's first row writes its is_greedy.
struct K5Slice {
  int64_t r, v0, n;
  float temp;
  bool need_exp;  // a sampling row whose probas are written
};
__device__ __forceinline__ K5Slice k5_slice(int rank, const float* __restrict__ temps, int64_t V, int G, bool wp,
                                            uint8_t* __restrict__ greedy, int64_t chunk) {
  K5Slice sl;
  sl.r = blockIdx.y;
  const int64_t b = sl.r / G;
  sl.temp = temps[b];
  const bool gr = sl.temp < 1e-6f;
  if (rank == 0 && threadIdx.x == 0 && (sl.r % G) == 0) greedy[b] = gr ? 1 : 0;
  sl.v0 = (int64_t)rank * chunk;
  const int64_t v1 = sl.v0 + chunk < V ? sl.v0 + chunk : V;
  sl.n = v1 > sl.v0 ? v1 - sl.v0 : 0;
  sl.need_exp = wp && !gr;
  return sl;
}

// U vectors of VEC entries at row + base + u * step, every load issued before any is used (memory-level
// parallelism); entries at or past n read as NaN (the callers skip them)
template <typename T, int VEC, int U, typename I>
__device__ __forceinline__ void k5_load(const T* __restrict__ row, I base, I step, I n, float (&v)[U][VEC]) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const I i = base + u * step;
    if (VEC > 1 && i + VEC <= n) {
      load_vec<T, VEC>(row + i, v[u]);
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) v[u][k] = (i + k < n) ? to_f<T>(row[i + k]) : NAN;
    }
  }
}

// VEC values to shared memory at xs + i (16-byte stores where the vector is whole), those at or past n skipped
template <int VEC, typename I>
__device__ __forceinline__ void k5_stage(float* xs, I i, I n, const float (&v)[VEC]) {
  if (VEC > 1 && i + VEC <= n) {
#pragma unroll
    for (int k = 0; k < VEC; k += 4)
      *reinterpret_cast<float4*>(xs + i + k) = make_float4(v[k], v[k + 1], v[k + 2], v[k + 3]);
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if (i + k < n) xs[i + k] = v[k];
  }
}

template <typename T, int VEC>
__global__ void __launch_bounds__(512, 3) k5_kernel(const T* __restrict__ logits, const float* __restrict__ temps,
                                                 int64_t V, int G, bool wp, float* __restrict__ probas,
                                                 int64_t* __restrict__ argmax, uint8_t* __restrict__ greedy,
                                                 int64_t chunk) {
  pdl_begin();
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int CS = (int)cluster.num_blocks();
  const int tid = threadIdx.x, nt = blockDim.x;
  extern __shared__ float xs[];
  __shared__ K5Stats st;  // this block's stats, read by the cluster through DSMEM
  __shared__ float rf[32];
  __shared__ float rv[32];
  __shared__ long long ri[32];
  __shared__ float s_m, s_s;
  __shared__ long long s_ai;

  const K5Slice sl = k5_slice(rank, temps, V, G, wp, greedy, chunk);
  const int64_t r = sl.r, v0 = sl.v0, n = sl.n;
  const float temp = sl.temp;
  const bool need_exp = sl.need_exp;
  const T* row = logits + r * V + v0;

  // pass 1 (HBM): the raw logits into shared (sampling rows); argmax of the raw logits, whose value is
  // also the max of x = logit / temp: division by a positive temp, rounded to nearest, is monotone, so
  // max_v x_v = RN(max_v logit_v / temp) and the row's m costs one division (NaN rows: NaN either way).
  // U vector loads are issued before any is used (memory-level parallelism).
  float av = -INFINITY;
  long long ai = LLONG_MAX;
  const int64_t step = (int64_t)nt * VEC;
  constexpr int U = VEC == 8 ? 2 : 4;  // vectors in flight per thread
#pragma unroll 1
  for (int64_t base = (int64_t)tid * VEC; base < n; base += U * step) {
    float v[U][VEC];
    k5_load<T, VEC, U>(row, base, step, n, v);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + u * step;
      const bool whole = VEC > 1 && i + VEC <= n;
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        if (whole || i + k < n) k5_amax_step<long long>(v[u][k], v0 + i + k, av, ai, LLONG_MAX);
      if (need_exp) k5_stage<VEC>(xs, i, n, v[u]);
    }
  }
  k5_reduce_stats(cluster, CS, av, av, ai, rf, rv, ri, st, s_m, s_ai);
  if (rank == 0 && tid == 0) argmax[r] = (int64_t)s_ai;
  float* out = probas + r * V + v0;
  if (need_exp) {
    const float gm = __fdiv_rn(s_m, temp);  // m = max of x (above)
    float part = 0.0f;  // one partial sum per thread: 512*CS >= 16 partial sums
    const bool vec4 = VEC > 1 && (n & 3) == 0;
    if (vec4) {
      for (int64_t i = (int64_t)tid * 4; i < n; i += (int64_t)nt * 4) {
        float4 e4 = *reinterpret_cast<const float4*>(xs + i);
        e4.x = k5_exp(__fsub_rn(__fdiv_rn(e4.x, temp), gm));
        e4.y = k5_exp(__fsub_rn(__fdiv_rn(e4.y, temp), gm));
        e4.z = k5_exp(__fsub_rn(__fdiv_rn(e4.z, temp), gm));
        e4.w = k5_exp(__fsub_rn(__fdiv_rn(e4.w, temp), gm));
        part = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(part, e4.x), e4.y), e4.z), e4.w);
        *reinterpret_cast<float4*>(xs + i) = e4;
      }
    } else {
      for (int64_t i = tid; i < n; i += nt) {
        const float e = k5_exp(__fsub_rn(__fdiv_rn(xs[i], temp), gm));
        xs[i] = e;
        part = __fadd_rn(part, e);
      }
    }
    // e_v / s as e_v * (1 / s): probas are TOL (§5.5, rtol 5e-5); this is within 2 ulp of the
    // quotient and saves an IEEE division per element (s is in [1, V] or NaN)
    const float inv = __frcp_rn(k5_reduce_sum(cluster, CS, part, rf, st, s_s));
    if (CS > 1) cluster_arrive();  // this block's DSMEM reads are over (k5_reduce_sum ends with a block barrier)
    if (vec4) {
      for (int64_t i = (int64_t)tid * 4; i < n; i += (int64_t)nt * 4) {
        float4 o4 = *reinterpret_cast<const float4*>(xs + i);
        o4.x = __fmul_rn(o4.x, inv);
        o4.y = __fmul_rn(o4.y, inv);
        o4.z = __fmul_rn(o4.z, inv);
        o4.w = __fmul_rn(o4.w, inv);
        __stcs(reinterpret_cast<float4*>(out + i), o4);
      }
    } else {
      for (int64_t i = tid; i < n; i += nt) out[i] = __fmul_rn(xs[i], inv);
    }
  } else {
    if (CS > 1) cluster_arrive();  // DSMEM reads over (k5_reduce_stats ends with a block barrier)
  }
  if (!need_exp && wp) {  // greedy row: one-hot at the argmax
    const long long am = s_ai;
    if ((V & 3) == 0) {
      for (int64_t i = (int64_t)tid * 4; i < n; i += (int64_t)nt * 4) {
        const long long g = v0 + i;
        float4 o4 = make_float4(g == am ? 1.f : 0.f, g + 1 == am ? 1.f : 0.f, g + 2 == am ? 1.f : 0.f,
                                g + 3 == am ? 1.f : 0.f);
        *reinterpret_cast<float4*>(out + i) = o4;
      }
    } else {
      for (int64_t i = tid; i < n; i += nt) out[i] = (v0 + i == am) ? 1.f : 0.f;
    }
  }
  if (CS > 1) cluster_wait();  // no block leaves while another may still read its shared memory
}

// The shared-memory kernel in one reduction round (k5_reduce_one) for slices of <= K5S_NB batches a thread:
// each thread takes its entries of the block's slice in batches of 16 (a batch: 16 * blockDim entries), and
// as it loads a batch it turns it into e = exp(x - the batch's max of x) (k5_rel_base), written to shared
// memory; its partial is its batches' (max, exp-sum) merged. After the row's merge the output pass writes
// e * k5_scale(the batch's max, row), one factor a batch. So an entry is divided and exponentiated once,
// shared memory is written once and read once, and the cluster is crossed once (the two-round kernel:
// two exchanges and a second pass over shared memory between them).
constexpr int K5S_NB = 4;
template <typename T, int VEC>
__global__ void __launch_bounds__(512, 3) k5s1_kernel(const T* __restrict__ logits, const float* __restrict__ temps,
                                                   int64_t V, int G, bool wp, float* __restrict__ probas,
                                                   int64_t* __restrict__ argmax, uint8_t* __restrict__ greedy,
                                                   int64_t chunk) {
  pdl_begin();
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int CS = (int)cluster.num_blocks();
  if (CS > 1) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");  // see k5_reduce_one
  const int tid = threadIdx.x, nt = blockDim.x;
  extern __shared__ float xs[];
  __shared__ K5Part ws1[16], xs1[16];  // the warps' and the cluster's partials

  const K5Slice sl = k5_slice(rank, temps, V, G, wp, greedy, chunk);
  const int64_t r = sl.r, v0 = sl.v0;
  const int n = (int)sl.n;    // a slice fits in shared memory: 32-bit offsets
  const int iv0 = (int)v0;    // V < 2^31 (K5Part's index)
  const float temp = sl.temp;
  const bool need_exp = sl.need_exp;
  const T* row = logits + r * V + v0;
  constexpr int U = 16 / VEC;  // vectors a batch, all in flight before any is used
  const int step = nt * VEC, span = U * step;

  K5Part a{-INFINITY, 0.0f, -INFINITY, INT_MAX};  // argmax of the raw logits: per-thread indices ascend
  float* mb = xs + chunk;  // each batch's max of x, mb[j * nt + tid] (dynamic shared memory past the slice:
                           // in registers it spilled)
#pragma unroll 1
  for (int j = 0; j < K5S_NB; ++j) {
    const int base = tid * VEC + j * span;
    if (base >= n) break;
    float v[U][VEC];
    k5_load<T, VEC, U>(row, base, step, n, v);
    float bm = -INFINITY;  // the batch's max of the raw logits (a NaN makes the sum NaN below)
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int i = base + u * step;
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        if (i + k < n) {
          k5_amax_step<int>(v[u][k], iv0 + i + k, a.av, a.ai, INT_MAX);
          bm = fmaxf(bm, v[u][k]);
        }
      }
    }
    if (need_exp) {
      // the batch's max of x is RN(bm / temp): division by a positive temp, rounded to nearest, is monotone
      const float mj = __fdiv_rn(bm, temp), mc = k5_rel_base(mj);
      float sj = 0.0f;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = base + u * step;
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          if (i + k < n) {
            v[u][k] = k5_exp(__fsub_rn(__fdiv_rn(v[u][k], temp), mc));
            sj = __fadd_rn(sj, v[u][k]);
          }
        }
        k5_stage<VEC>(xs, i, n, v[u]);
      }
      mb[j * nt + tid] = mj;
      k5_merge_ms(a.m, a.s, mj, sj);
    }
  }
  const K5Part one = k5_reduce_one(CS, rank, a, ws1, xs1);
  if (rank == 0 && tid == 0) argmax[r] = (int64_t)one.ai;
  float* out = probas + r * V + v0;
  if (need_exp) {
#pragma unroll 1
    for (int j = 0; j < K5S_NB; ++j) {
      const int base = tid * VEC + j * span;
      if (base >= n) break;
      const float f = k5_scale(mb[j * nt + tid], one);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = base + u * step;
        if (VEC > 1 && i + VEC <= n) {
#pragma unroll
          for (int k = 0; k < VEC; k += 4) {
            float4 o4 = *reinterpret_cast<const float4*>(xs + i + k);
            o4.x = __fmul_rn(o4.x, f);
            o4.y = __fmul_rn(o4.y, f);
            o4.z = __fmul_rn(o4.z, f);
            o4.w = __fmul_rn(o4.w, f);
            __stcs(reinterpret_cast<float4*>(out + i + k), o4);
          }
        } else {
#pragma unroll
          for (int k = 0; k < VEC; ++k)
            if (i + k < n) out[i + k] = __fmul_rn(xs[i + k], f);
        }
      }
    }
  } else if (wp) {  // greedy row: one-hot at the argmax
    const long long am = one.ai;
    for (int i = tid; i < n; i += nt) out[i] = (iv0 + i == am) ? 1.f : 0.f;
  }
  // after the exchange no block touches another's shared memory (k5_reduce_one)
}

// f(u, i) for each of the register kernel's NV vectors of a thread that lie in its block's slice (entry i = (u nt +
// tid) 4 < n), in ascending u (REV: descending). Where every thread's vectors but the last lie in it (block-uniform),
// only the last is tested: the bounds cost a compare and a branch a vector otherwise.
template <int NV, bool REV = false, typename F>
__device__ __forceinline__ void k5_each(int n, int tid, int nt, F f) {
  if ((NV - 1) * nt * 4 <= n) {
    const int il = ((NV - 1) * nt + tid) * 4;
    if (REV && il < n) f(NV - 1, il);
#pragma unroll
    for (int k = 0; k < NV - 1; ++k) {
      const int u = REV ? NV - 2 - k : k;
      f(u, (u * nt + tid) * 4);
    }
    if (!REV && il < n) f(NV - 1, il);
  } else {
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int u = REV ? NV - 1 - k : k;
      const int i = (u * nt + tid) * 4;
      if (i < n) f(u, i);
    }
  }
}

// K5 register-resident variant (f32 logits, 16-byte aligned rows, V % 4 == 0): every thread keeps
// NV float4 vectors of its block's slice in registers, so the row is read from HBM once, reduced
// (max/argmax, then the exp-sum) and written once, with no shared-memory staging of the row.
// One block (CS == 1) or one thread-block cluster of CS blocks (DSMEM exchange) per row; the host
// picks CS and the block size so that small-V many-row launches keep whole rows per block and
// large-V few-row launches spread a row over up to 16 SMs. ONE: the one-round reduction (k5_reduce_one)
// instead of the max reduction and the sum reduction, the registers holding e = exp(x - the thread's max)
// (k5_exp_rel_rcp) in between; two rounds: only through the sweep's hook (k5r_launch).
// PF: before it reduces, the block asks L2 for the same slice of the row pf rows on (one bulk prefetch, marked
// evict_last so that the rows' other traffic does not evict it before its block loads it), and loads its own
// slice marked evict_normal: that load takes the mark off again (k5_l2_prefetch/: evict_last lines the loads
// left marked stayed in L2 through later kernels). Rows before pf_from do not prefetch: the GPU's first wave
// holds rows 0 .. pf_from + pf - 1 at once, and a prefetch landing after its row's own load would leave the
// mark on; from there on the row pf rows on starts only after pf more rows have ended.
template <int NV, bool ONE, bool PF = false, bool W0 = false>
__device__ __forceinline__ void k5r_body(const float* __restrict__ logits, const float* __restrict__ temps, int64_t V,
                                         int G, bool wp, float* __restrict__ probas, int64_t* __restrict__ argmax,
                                         uint8_t* __restrict__ greedy, int64_t chunk, int64_t pf = 0,
                                         int64_t pf_from = 0) {
  pdl_begin();
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int CS = (int)cluster.num_blocks();
  const int64_t r = blockIdx.y;
  const int64_t b = r / G;
  const int tid = threadIdx.x, nt = blockDim.x;
  __shared__ K5Stats st;
  __shared__ float rf[32];
  __shared__ float rv[32];
  __shared__ long long ri[32];
  __shared__ float s_m, s_s;
  __shared__ long long s_ai;
  if (ONE && CS > 1) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");  // see k5_reduce_one

  const float temp = temps[b];
  const bool gr = temp < 1e-6f;
  if (rank == 0 && tid == 0 && (r % G) == 0) greedy[b] = gr ? 1 : 0;
  const int64_t v0 = (int64_t)rank * chunk;
  const int64_t v1 = v0 + chunk < V ? v0 + chunk : V;
  const int64_t n = v1 > v0 ? v1 - v0 : 0;  // a multiple of 4 (V and chunk are)
  const float* row = logits + r * V + v0;
  const bool need_exp = wp && !gr;

  // The loads (and below, the greedy one-hot and the two-round exp) keep their per-vector bounds tests: through
  // k5_each, as the other passes go, the one-round kernels measured up to 1.11x slower at 64 rows of 32768
  // (reports/kernel_before_after/k5_nits/)
  float4 x[NV];
  if constexpr (PF) {
    const uint64_t normal = l2_policy_evict_normal();
#pragma unroll
    for (int u = 0; u < NV; ++u) {
      const int64_t i = ((int64_t)u * nt + tid) * 4;
      x[u] = i < n ? ld_f4_l2_policy(row + i, normal) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    if (tid == 0 && n > 0 && r >= pf_from && r + pf < (int64_t)gridDim.y)
      l2_prefetch_evict_last(row + pf * V, (uint32_t)(n * 4));
  } else {
#pragma unroll
    for (int u = 0; u < NV; ++u) {
      const int64_t i = ((int64_t)u * nt + tid) * 4;
      x[u] = i < n ? __ldcs(reinterpret_cast<const float4*>(row + i)) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
  // The thread's argmax of the raw logits (its value divided by temp is its max of x, see k5_kernel), two passes
  // over its registers with no branch an entry: its max with NaN propagating (max.NaN), then, from the last entry
  // to the first, the first equal to that max, or, when the max is NaN, the first NaN (a NaN max means the thread
  // holds one, so `v == mx || v != v` picks exactly those); ties go to the lowest index (§5.4 step 1). The first
  // pass also takes the least and largest |logit| (NaN ignored) for k5_exp_rel_rcp. av: the max itself (equal to
  // the entry under ==, NaN when it is NaN: all a merge compares).
  float mx = -INFINITY, lo = INFINITY, hi = 0.0f;
  const int ni = (int)n;  // n <= chunk <= 8192 * 16
  auto each = [&](auto f) { k5_each<NV>(ni, tid, nt, f); };
  each([&](int u, int) {
    const float* e = reinterpret_cast<const float*>(&x[u]);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      asm("max.NaN.f32 %0, %0, %1;" : "+f"(mx) : "f"(e[k]));
      lo = fminf(lo, fabsf(e[k]));
      hi = fmaxf(hi, fabsf(e[k]));
    }
  });
  int li = INT_MAX;
  k5_each<NV, true>(ni, tid, nt, [&](int u, int i) {
    const float* e = reinterpret_cast<const float*>(&x[u]);
#pragma unroll
    for (int k = 3; k >= 0; --k)
      if (e[k] == mx || e[k] != e[k]) li = i + k;
  });
  const float av = mx;
  const long long ai = li == INT_MAX ? LLONG_MAX : v0 + li;
  K5Part one;  // ONE: the row's merged partials (the two-round form reads s_m, s_s, s_ai where it uses them)
  float tm = 0.0f;  // ONE: this thread's max of x, against which its registers hold e
  if constexpr (ONE) {
    // this thread's max of x (its argmax value / temp, as for the row) and its exp-sum against it; the
    // registers keep e = exp(x - that max) from here (sampling rows), so the output pass only rescales
    K5Part a{need_exp ? __fdiv_rn(av, temp) : -INFINITY, 0.0f, av, ai == LLONG_MAX ? INT_MAX : (int)ai};
    if (need_exp) k5_exp_rel_rcp<NV>(x, temp, lo, hi, a, each);
    tm = a.m;
    __shared__ K5Part ws1[8], xs1[16];  // the warps' and the cluster's partials
    one = k5_reduce_one<W0>(CS, rank, a, ws1, xs1);
  } else {
    k5_reduce_stats(cluster, CS, av, av, ai, rf, rv, ri, st, s_m, s_ai);
  }
  if (rank == 0 && tid == 0) argmax[r] = (int64_t)(ONE ? one.ai : s_ai);
  float* out = probas + r * V + v0;
  if (need_exp) {
    float part = 0.0f;  // the two-round form: one partial sum per thread, >= 32 partial sums per row
    if constexpr (!ONE) {
      const float gm = __fdiv_rn(s_m, temp);
#pragma unroll
      for (int u = 0; u < NV; ++u) {
        const int64_t i = ((int64_t)u * nt + tid) * 4;
        if (i < n) {
          float* e = reinterpret_cast<float*>(&x[u]);
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            e[k] = k5_exp(__fsub_rn(__fdiv_rn(e[k], temp), gm));
            part = __fadd_rn(part, e[k]);
          }
        }
      }
    }
    // e_v * (1 / s): see k5_kernel (TOL, within 2 ulp of e_v / s); the one-round form's e are relative to
    // the thread's max, so its factor also carries exp(that max - the row's) (k5_scale)
    const float f = ONE ? k5_scale(tm, one) : __frcp_rn(k5_reduce_sum(cluster, CS, part, rf, st, s_s));
    if (!ONE && CS > 1) cluster_arrive();  // this block's DSMEM reads are over (k5_reduce_sum ends with a block barrier)
    each([&](int u, int i) {
      float4 o4;
      o4.x = __fmul_rn(x[u].x, f);
      o4.y = __fmul_rn(x[u].y, f);
      o4.z = __fmul_rn(x[u].z, f);
      o4.w = __fmul_rn(x[u].w, f);
      __stcs(reinterpret_cast<float4*>(out + i), o4);
    });
  } else {
    if (!ONE && CS > 1) cluster_arrive();  // DSMEM reads over (k5_reduce_stats ends with a block barrier)
  }
  if (!need_exp && wp) {  // greedy row: one-hot at the argmax
    const long long am = ONE ? one.ai : s_ai;
#pragma unroll
    for (int u = 0; u < NV; ++u) {
      const int64_t i = ((int64_t)u * nt + tid) * 4;
      if (i < n) {
        const long long g = v0 + i;
        __stcs(reinterpret_cast<float4*>(out + i),
               make_float4(g == am ? 1.f : 0.f, g + 1 == am ? 1.f : 0.f, g + 2 == am ? 1.f : 0.f,
                           g + 3 == am ? 1.f : 0.f));
      }
    }
  }
  if (!ONE && CS > 1) cluster_wait();  // no block leaves while another may still read its shared memory
}

#define E4_K5R_ARGS                                                                                            \
  const float *__restrict__ logits, const float *__restrict__ temps, int64_t V, int G, bool wp,               \
      float *__restrict__ probas, int64_t *__restrict__ argmax, uint8_t *__restrict__ greedy, int64_t chunk,  \
      int64_t pf, int64_t pf_from
template <int NV>
__global__ void __launch_bounds__(256) k5r_kernel(E4_K5R_ARGS) {
  k5r_body<NV, false>(logits, temps, V, G, wp, probas, argmax, greedy, chunk);
}
// The one-round form (k5_reduce_one; W0: its merges by warp 0 only) of the same kernel.
template <int NV, bool W0 = false>
__global__ void __launch_bounds__(256) k5r1_kernel(E4_K5R_ARGS) {
  k5r_body<NV, true, false, W0>(logits, temps, V, G, wp, probas, argmax, greedy, chunk);
}
// The same kernel held to 64 registers a thread, so that 4 blocks of 256 threads share an SM instead of
// 3 (NV = 8 takes 74-80 registers unbounded): with many rows the fourth block's loads overlap the others'
// reductions and stores (kernel_bench sweep on the H100: -11% at 1024 rows of V = 32768 for the two-round
// form, -9% for the one-round form; worse at 64-128 rows), in both forms (k5r_launch says where).
template <int NV>
__global__ void __launch_bounds__(256, 4) k5r4_kernel(E4_K5R_ARGS) {
  k5r_body<NV, false>(logits, temps, V, G, wp, probas, argmax, greedy, chunk);
}
template <int NV, bool PF = false, bool W0 = false>
__global__ void __launch_bounds__(256, 4) k5r14_kernel(E4_K5R_ARGS) {
  k5r_body<NV, true, PF, W0>(logits, temps, V, G, wp, probas, argmax, greedy, chunk, pf, pf_from);
}
// The one-round form in narrow blocks: 64 threads of 32 vectors (128 registers of the row) a thread, 6 blocks an SM
// (168 registers a thread). The registers a thread needs beside its entries are paid for a quarter as many threads,
// so an SM holds 6 slices of 8192 entries instead of 4: 42 clusters of 16 blocks at once on the H100 instead of 28
// (k5r_launch says where it is taken).
template <int NV, bool PF = false, bool W0 = false>
__global__ void __launch_bounds__(64, 6) k5rn_kernel(E4_K5R_ARGS) {
  k5r_body<NV, true, PF, W0>(logits, temps, V, G, wp, probas, argmax, greedy, chunk, pf, pf_from);
}
#undef E4_K5R_ARGS

// Tuning hook (the bench's sweep only): 0 = automatic, 1 = always the shared-memory kernel, 2 = the
// register kernel wherever it applies; blocks = the grid size the register kernel aims at (0: 2 per SM).
static int g_k5_mode = 0;
static int64_t g_k5_blocks = 0;
static int64_t g_k5_max_cs = 0;  // the register kernel's largest cluster (0: 16)
void k5_tuning(int64_t mode, int64_t blocks) { g_k5_mode = (int)mode; g_k5_blocks = blocks; }
void k5_max_cluster(int64_t cs) { g_k5_max_cs = cs; }
// the register kernel's smallest cluster (0: automatic) and its build (0: automatic, 1: unbounded, 4: k5r4_kernel)
static int64_t g_k5_min_cs = 0, g_k5_minb = 0;
void k5_reg(int64_t min_cs, int64_t minb) { g_k5_min_cs = min_cs; g_k5_minb = minb; }
// the register kernel's reduction: 0 automatic, 1 two rounds (max, then sum), 2 one round (k5r1_kernel)
static int g_k5_one = 0;
void k5_one(int64_t mode) { g_k5_one = (int)mode; }
// the register kernel's L2 prefetch (k5r_body's PF): 0 automatic, < 0 never, > 0 wherever the prefetching build
// applies, this percentage of the rows the GPU holds at once ahead
static int64_t g_k5_pf = 0;
void k5_prefetch(int64_t pct) { g_k5_pf = pct; }
// the narrow register build (k5rn_kernel): 0 automatic, < 0 never, > 0 wherever it applies
static int g_k5_narrow = 0;
void k5_narrow(int64_t mode) { g_k5_narrow = (int)mode; }
// clusters of cs blocks the GPU holds at once, of the narrow build (narrow != 0) or of k5r14_kernel<8>
int64_t k5_held(int64_t narrow, int64_t cs);

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

// The register-resident K5 where it applies (f32, 16-byte aligned rows, V % 4 == 0, V <= 16 * 8192);
// false: the caller uses the shared-memory kernel.
static bool k5r_launch(const at::Tensor& logits, const at::Tensor& temperatures, int64_t G, bool write_probas,
                       at::Tensor& probas, at::Tensor& argmax_ids, at::Tensor& is_greedy, int64_t R, int64_t V,
                       cudaStream_t stream) {
  constexpr int64_t kMaxNT = 256, kMaxPerBlock = kMaxNT * 8 * 4;
  if (g_k5_mode == 1) return false;
  // Measured on the H100 (kernel_bench sweep --kernel logits_to_probas, both contracts, one process,
  // reports/kernel_before_after/k5_keep_e/): since its one-round form keeps e (k5_exp_rel: one exp an entry,
  // as in the two-round form), the register kernel is the fastest K5 at every point of both contracts, at
  // V = 128256 too in clusters of 16 blocks (0.92-0.96x the shared-memory kernel's best form from 64 to
  // 8192 rows). Automatic mode takes it wherever a cluster of <= 16 blocks holds the row.
  if (V % 4 || reinterpret_cast<uintptr_t>(logits.data_ptr()) % 16 ||
      reinterpret_cast<uintptr_t>(probas.data_ptr()) % 16)
    return false;
  // The one-round form takes 0.68-0.95x the two-round form's time at every point of both contracts (before
  // it kept e it exponentiated every entry twice and lost from 64 rows on). Its clusters (the same sweeps):
  // the grid target (2 blocks an SM) up to 32 rows, capped at 8 blocks from 8 rows on where 8 hold the row;
  // at 33-64 rows slices of 4096 entries (4 vectors a thread: 0.81x the grid target's 5 blocks at 64 rows
  // of 16384, 0.96x at 64 rows of 32768); the grid target from 65 rows on. The two-round form's rules stay
  // for the sweep's hook (g_k5_one == 1).
  const bool one = g_k5_one != 1;
  const bool mid = R > 32 && R <= 64;
  const int64_t target = g_k5_blocks > 0 ? g_k5_blocks : 2 * (int64_t)sm_count();
  const int64_t want =
      one && mid && g_k5_blocks == 0 ? std::min<int64_t>(8, (V + 4095) / 4096) : (target + R - 1) / R;
  const int64_t min_cs = g_k5_min_cs > 0 ? g_k5_min_cs : (!one && mid) ? 8 : 0;
  const int64_t max_cs = g_k5_max_cs > 0 ? g_k5_max_cs : (one && R >= 8 && V <= 8 * kMaxPerBlock) ? 8 : 16;
  int64_t cs = std::max<int64_t>(want, (V + kMaxPerBlock - 1) / kMaxPerBlock);
  cs = std::max<int64_t>(cs, min_cs);
  cs = std::min<int64_t>(std::max<int64_t>(cs, 1), std::min<int64_t>(max_cs, (V + 3) / 4));
  auto chunk_of = [&](int64_t c) { return ((V + c - 1) / c + 3) / 4 * 4; };
  int64_t chunk = chunk_of(cs);
  if (chunk > kMaxPerBlock) return false;
  const int64_t vecs = chunk / 4;
  const int nv = vecs <= kMaxNT ? 1 : vecs <= 2 * kMaxNT ? 2 : vecs <= 4 * kMaxNT ? 4 : 8;
  int nt = (int)std::min<int64_t>(kMaxNT, std::max<int64_t>(32, ((vecs + nv - 1) / nv + 31) / 32 * 32));
  // pfkern: the same kernel's prefetching build (k5r_body's PF), taken where the launch has more rows than the
  // GPU holds at once, pf = 25% of those rows ahead. Measured on the H100 (kernel_bench sweep --copy-after,
  // reports/kernel_before_after/k5_l2_prefetch/): 0.91 / 0.91 / 0.92x at deployment-8b's verify B = 128 / 32 / 8
  // (8192 / 2048 / 512 rows of 128256), 0.94x at its draft B = 128 (1024 rows of 32768), 0.97 / 0.96x at its
  // verify B = 1 and draft B = 32 (64 rows of 128256, 256 of 32768: two waves); 50% ahead within 1% of 25% at
  // the many-wave points and 0.5-1% slower at the two-wave ones, 100% slower everywhere
  // kw / pfkw: the same builds with K5's one-round merges by warp 0 only (k5_reduce_one's W0), taken where the
  // launch has more blocks than the GPU has SMs: blocks share SMs and so their issue slots there, and with fewer
  // blocks only W0's block barrier would show. Measured on the H100 with W0 at every point (kernel_bench
  // compare-src, one process, reports/kernel_before_after/k5_warp0/): 0.89 / 0.91x at the draft points of B = 8
  // (256 / 512 blocks), 0.95x at the default verify B = 8 (384), 0.98x at its verify B = 4 (256), within 0.6% at
  // deployment-8b's verify B = 1 and points of B >= 32 (1024 blocks and more); 0.99x at 128 blocks (the default verify
  // B = 1, draft B = 4) and 1.016-1.017x at 64 (the draft points of B = 1)
  auto go = [&](auto kern, decltype(kern) kw = nullptr, decltype(kern) pfkern = nullptr, decltype(kern) pfkw = nullptr) {
    int c = (int)cs;
    if (c > 8) {
      c = usable_cluster(kern, c, dim3(nt), 0);
      if (c < cs) {  // 16-block clusters not schedulable here: 8 blocks, if a block still holds its slice
        if (chunk_of(c) > (int64_t)nt * nv * 4) return false;
        chunk = chunk_of(c);
      }
    }
    c = (int)((V + chunk - 1) / chunk);
    int64_t pf = 0, pf_from = 0;
    if (pfkern && g_k5_pf >= 0) {
      const int64_t held = resident(pfkern, c, nt, 0);  // rows (clusters) the GPU holds at once
      if (held > 0 && (g_k5_pf > 0 || R > held)) {
        pf = std::max<int64_t>(1, std::min<int64_t>(held, held * (g_k5_pf > 0 ? g_k5_pf : 25) / 100));
        pf_from = held - pf;
        kern = pfkern;
        kw = pfkw;
      }
    }
    if (kw && (int64_t)c * R > sm_count()) kern = kw;
    launch_ex(kern, dim3((unsigned)c, (unsigned)R), dim3(nt), 0, c, stream, (const float*)ptr<float>(logits),
                   (const float*)ptr<float>(temperatures), V, (int)G, write_probas, ptr<float>(probas),
                   ptr<int64_t>(argmax_ids), ptr<uint8_t>(is_greedy), chunk, pf, pf_from);
    return true;
  };
  // the build held to 4 blocks an SM (64 registers): the two-round form's where a thread holds 8 vectors and
  // there are >= 256 rows or V > 65536; the one-round form's there (0.91x at 256 and 1024 rows of 32768) and
  // for <= 32 rows (0.98-1.00x, the same sweeps; 1.12x at 64 and 128 rows with 8 vectors a thread)
  // the narrow build (k5rn_kernel) where a block holds 8 vectors a thread of a slice of <= 8192 entries and, in
  // automatic mode, V > 65536 (16-block clusters) with >= 512 rows. Measured on the H100 (one build, one process,
  // alternating rounds, reports/kernel_before_after/k5_narrow/): 0.979 / 0.972 / 0.967x at deployment-8b's verify
  // B = 8 / 32 / 128 (512 / 2048 / 8192 rows of 128256; at 8192 rows as fast as one copy of the bytes), but 1.11x at
  // its verify B = 1 (64 rows: 42 + 22 rows instead of 28 + 28 + 8, each wave's blocks longer), 1.13 / 1.04x at its
  // draft B = 32 / 128 (256 / 1024 rows of 32768), 2.0x at the default verify B = 8 (128 rows of 16384); 65-511 rows
  // at such V not measured
  if (one && nv == 8 && chunk <= 64 * 32 * 4 &&
      (g_k5_narrow > 0 || (g_k5_narrow == 0 && V > 8 * kMaxPerBlock && R >= 512))) {
    nt = 64;
    return go(k5rn_kernel<32>, k5rn_kernel<32, false, true>, k5rn_kernel<32, true>, k5rn_kernel<32, true, true>);
  }
  const bool many = R >= 256 || V > 8 * kMaxPerBlock;
  const bool bounded = g_k5_minb == 4 || (g_k5_minb == 0 && (one ? R <= 32 || many : nv == 8 && many));
  if (one && bounded) {
    switch (nv) {
      case 1: return go(k5r14_kernel<1>, k5r14_kernel<1, false, true>);
      case 2: return go(k5r14_kernel<2>, k5r14_kernel<2, false, true>);
      case 4: return go(k5r14_kernel<4>, k5r14_kernel<4, false, true>);
      default: return go(k5r14_kernel<8>, k5r14_kernel<8, false, true>, k5r14_kernel<8, true>,
                         k5r14_kernel<8, true, true>);
    }
  }
  if (one) {
    switch (nv) {
      case 1: return go(k5r1_kernel<1>, k5r1_kernel<1, true>);
      case 2: return go(k5r1_kernel<2>, k5r1_kernel<2, true>);
      case 4: return go(k5r1_kernel<4>, k5r1_kernel<4, true>);
      default: return go(k5r1_kernel<8>, k5r1_kernel<8, true>);
    }
  }
  // the two-round form (the sweep's hook only) has no W0 build
  if (bounded) {
    switch (nv) {
      case 1: return go(k5r4_kernel<1>);
      case 2: return go(k5r4_kernel<2>);
      case 4: return go(k5r4_kernel<4>);
      default: return go(k5r4_kernel<8>);
    }
  }
  switch (nv) {
    case 1: return go(k5r_kernel<1>);
    case 2: return go(k5r_kernel<2>);
    case 4: return go(k5r_kernel<4>);
    default: return go(k5r_kernel<8>);
  }
}

int64_t k5_held(int64_t narrow, int64_t cs) {
  return narrow ? resident(k5rn_kernel<32, true>, (int)cs, 64, 0) : resident(k5r14_kernel<8, true>, (int)cs, 256, 0);
}

void convert_logits_to_probas(at::Tensor logits, at::Tensor temperatures, int64_t rows_per_req, bool write_probas,
                              at::Tensor probas, at::Tensor argmax_ids, at::Tensor is_greedy) {
  const int64_t G = rows_per_req;
  E4_PRE(G >= 1, "rows_per_req must be >= 1, got ", G);
  E4_VALUE(logits.dim() == 2, "logits must be [R, V]");
  const auto lt = logits.scalar_type();
  E4_VALUE(lt == at::kFloat || lt == at::kHalf || lt == at::kBFloat16,
           "logits must be float32/float16/bfloat16");
  const int64_t R = logits.size(0), V = logits.size(1);
  check_tensor(logits, "logits", lt, {R, V});
  const int64_t B = temperatures.dim() == 1 ? temperatures.size(0) : -1;
  check_tensor(temperatures, "temperatures", at::kFloat, {B});
  E4_PRE(R == B * G, "logits rows must equal len(temperatures)*rows_per_req, got ", R, " vs ", B, "*", G);
  check_tensor(probas, "probas", at::kFloat, {R, V});
  check_tensor(argmax_ids, "argmax_ids", at::kLong, {R});
  check_tensor(is_greedy, "is_greedy", at::kByte, {B});
  E4_PRE(V >= 1, "V must be >= 1");
  if (R == 0) return;
  E4_CHECK(R <= 65535, "convert_logits_to_probas: more than 65535 rows per launch is not supported");
  const c10::cuda::CUDAGuard guard(logits.device());
  auto stream = c10::cuda::getCurrentCUDAStream();
  if (lt == at::kFloat && k5r_launch(logits, temperatures, G, write_probas, probas, argmax_ids, is_greedy, R, V,
                                      stream))
    return;
  const dim3 block(512);
  const int want = R <= 8 ? 16 : 8;  // very few rows: more blocks per row to fill the GPU
  const bool aligned = reinterpret_cast<uintptr_t>(logits.data_ptr()) % 16 == 0;
  auto go = [&](auto kern2, auto kern1, const auto* lp) {
    int cs = (int)std::min<int64_t>(want, std::max<int64_t>(1, (V + 4095) / 4096));
    auto chunk_of = [&](int c) { int64_t ch = (V + c - 1) / c; return (ch + 7) / 8 * 8; };
    // the one-round kernel (k5s1_kernel) up to 512 rows where a thread's part of the slice is <= K5S_NB
    // batches of 16 entries (V <= 262144 at 8 blocks a row); its shared memory also holds each batch's max,
    // a float a thread. Measured with the kernel forced at V = 128256 (sweeps, k5_keep_e/): 0.86x the
    // two-round kernel at 64 rows, 0.99x at 512, 1.03-1.04x at 2048 and 8192 (why was not analysed). The
    // sweep's hook picks either form (g_k5_one: 1 two rounds, 2 one round).
    auto batches_of = [&](int c) { return (chunk_of(c) + 16 * block.x - 1) / (16 * block.x); };
    auto smem_of = [&](int c, bool one) {
      return (size_t)(chunk_of(c) + (one ? batches_of(c) * block.x : 0)) * sizeof(float);
    };
    const bool one = (g_k5_one == 2 || (g_k5_one == 0 && R <= 512)) && batches_of(std::min(cs, 8)) <= K5S_NB;
    if (cs > 8)
      cs = one ? usable_cluster(kern1, cs, block, smem_of(cs, true))
               : usable_cluster(kern2, cs, block, smem_of(cs, false));
    const bool use1 = one && batches_of(cs) <= K5S_NB;
    const int64_t chunk = chunk_of(cs);
    const size_t smem = smem_of(cs, use1);
    cs = (int)((V + chunk - 1) / chunk);
    E4_CHECK(smem <= 227 * 1024, "convert_logits_to_probas: V too large");
    auto launch = [&](auto kern) {
      launch_ex(kern, dim3((unsigned)cs, (unsigned)R), block, smem, cs, stream, lp,
                (const float*)ptr<float>(temperatures), V, (int)G, write_probas, ptr<float>(probas),
                ptr<int64_t>(argmax_ids), ptr<uint8_t>(is_greedy), chunk);
    };
    if (use1) launch(kern1); else launch(kern2);
  };
  if (lt == at::kFloat) {
    const float* lp = ptr<float>(logits);
    if (aligned && V % 4 == 0) go(k5_kernel<float, 4>, k5s1_kernel<float, 4>, lp);
    else go(k5_kernel<float, 1>, k5s1_kernel<float, 1>, lp);
  } else if (lt == at::kHalf) {
    const __half* lp = ptr<__half>(logits);
    if (aligned && V % 8 == 0) go(k5_kernel<__half, 8>, k5s1_kernel<__half, 8>, lp);
    else go(k5_kernel<__half, 1>, k5s1_kernel<__half, 1>, lp);
  } else {
    const __nv_bfloat16* lp = ptr<__nv_bfloat16>(logits);
    if (aligned && V % 8 == 0) go(k5_kernel<__nv_bfloat16, 8>, k5s1_kernel<__nv_bfloat16, 8>, lp);
    else go(k5_kernel<__nv_bfloat16, 1>, k5s1_kernel<__nv_bfloat16, 1>, lp);
  }
}

// ==========================================================================================
// K6 draft_tree_reject_sample (§6): one cluster of CS blocks per request. Every block replays the
// (cheap, deterministic) tree walk from shared-memory copies of the tree; the final row's integer
// inverse CDF is split over the cluster: u64 tile sums (128 entries a tile), a block scan, and an
// exchange of block totals through distributed shared memory.

static constexpr int K6_TILE = 128;
#ifndef E4_K6R_MIN_NV
#define E4_K6R_MIN_NV 1  // the register form's least float4 loads per thread (a compile-time knob for before/after variants)
#endif

__device__ __forceinline__ unsigned long long k6_q(float t) {
  // r_v = t if t > 0 (NaN -> 0); q = floor(r * 2^32), exact (power-of-two scale, truncation)
  return t > 0.0f ? __float2ull_rz(__fmul_rn(t, 4294967296.0f)) : 0ull;
}

template <bool VEC4>
__device__ __forceinline__ void k6_load4(const float* rowp, int64_t v, int64_t v1, float* o) {
  if (VEC4 && v + 4 <= v1) {
    float4 f = *reinterpret_cast<const float4*>(rowp + v);
    o[0] = f.x; o[1] = f.y; o[2] = f.z; o[3] = f.w;
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) o[k] = (v + k < v1) ? rowp[v + k] : 0.0f;
  }
}

// §6.6 step 3: u = floor(c * R_q / 2^24) with c = min(floor(coin * 2^24), 2^24 - 1), without 128-bit products
__device__ __forceinline__ unsigned long long k6_target(float fc, unsigned long long Rq) {
  long long c = (long long)floorf(__fmul_rn(fc, 16777216.0f));
  if (c > 16777215ll) c = 16777215ll;
  const unsigned long long cu = (unsigned long long)c;
  return cu * (Rq >> 24) + ((cu * (Rq & 16777215ull)) >> 24);
}

// The R_q = 0 fallback's block argmax (both K6 kernels; every thread calls it): warp reductions, the
// warps' results staged in rv/ri (one __syncthreads), then warp 0, whose every lane ends with the result.
__device__ __forceinline__ void k6_block_argmax(float& av, long long& ai, float* rv, long long* ri) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
  warp_argmax(av, ai);
  if (lane == 0) { rv[wid] = av; ri[wid] = ai; }
  __syncthreads();
  if (wid == 0) {
    av = lane < nw ? rv[lane] : -INFINITY;
    ai = lane < nw ? ri[lane] : LLONG_MAX;
    warp_argmax(av, ai);
    av = __shfl_sync(FULL, av, 0);
    ai = __shfl_sync(FULL, ai, 0);
  }
}

// The cluster exchanges of both K6 kernels (CS > 1; every block arrived, relaxed, at its start, so the
// first wait only confirms that all blocks run): each block pushes its value into slot `rank` of every
// block's shared array, then one barrier; after it nothing touches another block's shared memory, so a
// block may exit once it is done. Block totals -> (R_q, this block's base: the totals of lower ranks).
__device__ __forceinline__ void k6_exchange_totals(unsigned long long btotal, int rank, int CS,
                                                   unsigned long long* xtot, unsigned long long& Rq,
                                                   unsigned long long& base) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
  if (wid == 0 && lane < CS) *cg::this_cluster().map_shared_rank(&xtot[rank], lane) = btotal;
  cluster_arrive_warp0_release();
  cluster_wait();
  Rq = 0ull;
  base = 0ull;
  for (int k = 0; k < CS; ++k) {
    const unsigned long long t = xtot[k];
    Rq += t;
    base += k < rank ? t : 0ull;
  }
}

// The R_q = 0 fallback's cluster argmax (after k6_exchange_totals): every block's (av, ai) pushed to all.
__device__ __forceinline__ void k6_exchange_argmax(float& av, long long& ai, int rank, int CS, float* xav,
                                                   long long* xai) {
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  if (wid == 0 && lane < CS) {
    cg::cluster_group cl = cg::this_cluster();
    *cl.map_shared_rank(&xav[rank], lane) = av;
    *cl.map_shared_rank(&xai[rank], lane) = ai;
  }
  cluster_arrive_warp0_release();
  cluster_wait();
  for (int k = 0; k < CS; ++k)
    if (amax_better(xav[k], xai[k], av, ai)) { av = xav[k]; ai = xai[k]; }
}

// The register form's exchange through global memory (GX), for rows spread over more blocks than a cluster holds
// (at most K6G_MAX_CS blocks a request, K6G_MAX_B requests; a cooperative launch, so every block runs at once).
// Each block publishes its total as two 64-bit words, 32 bits of it each under a 32-bit tag in the high bits, by one
// relaxed 16-byte store at GPU scope; one thread per block of the row reads that block's words until both carry this
// launch's tag. Each word is one single-copy-atomic access that carries its own tag, so nothing else needs ordering:
// no fence, no barrier between blocks. Every block's words sit in their own 128-byte line, so the row's blocks
// polling them spread over L2's slices (packed into a few lines, the polls queued there: 3150 cycles of exchange at
// deployment-8b's B = 1 against about 1000 expected; reports/kernel_before_after/k6_gx/). The tag is request b's
// launch count (the low 32 bits of g_k6_ep[b], + 1, 0 skipped), written back by block 0 once it has read every
// block's words, so every block has read the old count by then; the next launch reads it after its
// griddepcontrol.wait. Beside the count (the high 32 bits) block 0 records the launch's blocks a request, and it
// clears the slots of blocks the previous launch had and this one has not: so after every launch each slot of the
// request holds this launch's tag or zeros, and the next launch, whose tag differs, can match no word it did not
// write, across the count's wrap too (clearing only at the wrap left a slot a later launch reads, but the ones in
// between did not write, with the tag it had 2^32 launches before). Words and counts are one set per device: two K6
// launches must not run concurrently on two streams (as with the draft step's arrival counter).
constexpr int K6G_MAX_B = 64, K6G_MAX_CS = 64, K6G_LINE = 16;  // K6G_LINE: 64-bit words a block's slot spans
__device__ unsigned long long g_k6_ep[K6G_MAX_B];
__device__ __align__(128) unsigned long long g_k6_slot[K6G_MAX_B * K6G_MAX_CS * K6G_LINE];
__device__ __forceinline__ unsigned long long ld_relaxed_gpu(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed_gpu(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st2_relaxed_gpu(unsigned long long* p, unsigned long long a, unsigned long long c) {
  asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(c) : "memory");
}
__device__ __forceinline__ void ld2_relaxed_gpu(const unsigned long long* p, unsigned long long& a,
                                                unsigned long long& c) {
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(c) : "l"(p) : "memory");
}
// this launch's tag for request b (1 .. 2^32 - 1; the words start as 0, which no tag matches) from the count read by
// ld_relaxed_gpu(&g_k6_ep[b]) (issued early: its latency overlaps phase A)
__device__ __forceinline__ unsigned long long k6g_tag(unsigned long long ep) {
  const unsigned long long t = (ep + 1) & 0xffffffffull;
  return t ? t : 1ull;
}
// Block totals -> (R_q, this block's base), as k6_exchange_totals. xt: K6G_MAX_CS words of shared memory. ep:
// g_k6_ep[b] as thread 0 read it (block 0's thread 0 uses it).
// A wait that outlasts about a second (a block that never runs: impossible under a cooperative launch) traps.
__device__ __forceinline__ void k6g_exchange_totals(unsigned long long btotal, int rank, int CS, int64_t b,
                                                    unsigned long long tag, unsigned long long ep,
                                                    unsigned long long* xt, unsigned long long& Rq,
                                                    unsigned long long& base) {
  unsigned long long* slot = g_k6_slot + b * (K6G_MAX_CS * K6G_LINE);
  const int tid = threadIdx.x, lane = tid & 31;
  const unsigned long long tg = tag << 32;
  if (tid == 0) st2_relaxed_gpu(slot + rank * K6G_LINE, tg | (btotal & 0xffffffffull), tg | (btotal >> 32));
  if (tid < CS) {
    unsigned long long t = btotal;
    if (tid != rank) {
      unsigned long long lo, hi;
      unsigned n = 0;
      for (;;) {
        ld2_relaxed_gpu(slot + tid * K6G_LINE, lo, hi);
        if ((lo & ~0xffffffffull) == tg && (hi & ~0xffffffffull) == tg) break;
        if (++n == (1u << 21)) __trap();
      }
      t = (lo & 0xffffffffull) | (hi << 32);
    }
    xt[tid] = t;
  }
  __syncthreads();
  if (rank == 0 && tid == 0) {
    const int prev = (int)(ep >> 32);  // the previous launch's blocks a request: its slots this launch leaves
    for (int k = CS; k < prev; ++k) st2_relaxed_gpu(slot + k * K6G_LINE, 0ull, 0ull);
    st_relaxed_gpu(&g_k6_ep[b], ((unsigned long long)CS << 32) | tag);
  }
  unsigned long long r = 0ull, bs = 0ull;  // every warp: the totals of blocks lane and lane + 32
  for (int k = lane; k < CS; k += 32) {
    const unsigned long long t = xt[k];
    r += t;
    bs += k < rank ? t : 0ull;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    r += __shfl_xor_sync(FULL, r, o);
    bs += __shfl_xor_sync(FULL, bs, o);
  }
  Rq = r;
  base = bs;
}

// K6's acceptance test coin <= RN(pacc / t) as pacc >= P, P the least float that passes, found without
// a division (t finite, > 0: the host makes t >= 1e-9). RN(y) >= coin exactly when y lies above the
// midpoint m of coin and the float under it, or on m with coin's last bit even (a tie rounds to the
// even one); t > 0, so pacc passes when pacc > m * t, or == with coin even. m * t is exact in double
// (25 and 24 significant bits, far inside its range); P is the float it rounds down to where that is
// m * t itself and coin is even, else the float after it. The ends follow the same rule with 2^128
// for the float after FLT_MAX: coin +inf passes from the overflow threshold (2^128 - 2^103) * t on,
// coin -FLT_MAX above -(2^128 - 2^103) * t; coin -inf passes every pacc but NaN (P = -inf), NaN
// none (P = NaN), and a NaN pacc fails both forms. So every row takes the one float compare a tested
// child instead of an IEEE division (those divisions took 0.27 us of a B = 1 launch on the H100:
// reports/kernel_before_after/k6_division/; every kind of coin against numpy's division on the CPU:
// reports/kernel_before_after/k6_phase_a/pass_bound_check.py).
__device__ __forceinline__ float k6_pass_bound(float c, float t) {
  if (isnan(c) || c == -INFINITY) return c;
  const double hi = c == INFINITY ? 0x1p128 : (double)c;
  const double lo = c == -FLT_MAX ? -0x1p128 : (double)nextafterf(c, -INFINITY);
  const double mt = (hi + lo) * 0.5 * (double)t;
  const float d = __double2float_rd(mt);
  return ((double)d == mt && (__float_as_uint(c) & 1u) == 0u) ? d : nextafterf(d, INFINITY);
}

// Phase A, shared by both K6 kernels (every block of a request's cluster replays it): the tree
// arrays staged in shared memory (carved from `sm`, k6_tree_bytes(Q) bytes), each row's coin as its
// pass bound P (computed while staging, off the rows' chains), the accepted child of every row
// resolved in parallel, then the walk (thread 0; rank 0 writes predicts/accept_index/accept_length).
// Returns the final row, `last` and the rejected tokens of the final row (nrej of them at `rej`) through
// shared memory. Every row's in-range tokens of its first K6_PK children are listed while its row is
// resolved, so a walk that stops at a row whose chain ends there takes them as its rejected tokens
// instead of chasing the chain again (H100, one process: 0.95-0.97 of the time at the default contract's
// points and deployment-8b's B = 1, where the walk's own chase took 0.3-0.4 us; 0.99-1.00 at deployment-8b's
// B >= 8: reports/kernel_before_after/k6_walk_rej/).
struct K6Walk {
  int row;
  long long last;
  int nrej;
  const int64_t* rej;
  long long tpred_row;  // target_predict[b, row] (greedy requests)
};

constexpr int K6_PK = 8;  // children per row whose tested probabilities phase A loads ahead
__host__ __device__ constexpr size_t k6_tree_bytes(int64_t Q) { return (size_t)Q * (6 * 8 + 8 * K6_PK + 4 + 4 + 4) + 8; }

__device__ __forceinline__ K6Walk k6_walk(
    const int64_t* __restrict__ cand, const int64_t* __restrict__ ridx, const int64_t* __restrict__ rnext,
    const int64_t* __restrict__ rsib, const float* __restrict__ probs, const int64_t* __restrict__ tpred,
    const float* __restrict__ coins, bool gr, float thr_single, float thr_acc, int Q, int S, int64_t V, int64_t b,
    int64_t BQ, int rank, int32_t* __restrict__ predicts, int32_t* __restrict__ acc_idx,
    int32_t* __restrict__ acc_len, void* sm) {
  const int tid = threadIdx.x, nt = blockDim.x;
  int64_t* s_cand = reinterpret_cast<int64_t*>(sm);  // Q
  int64_t* s_next = s_cand + Q;
  int64_t* s_sib = s_next + Q;
  int64_t* s_ridx = s_sib + Q;
  int64_t* s_tpred = s_ridx + Q;
  int64_t* s_rej = s_tpred + Q;  // Q + 1 (a chain visits <= Q + 1 nodes)
  int64_t* s_rowtok = s_rej + Q + 1;  // per row: the in-range tokens of its first K6_PK children, in chain order
  // per row: P = k6_pass_bound(coin, t) (t finite), else the coin itself
  float* s_pass = reinterpret_cast<float*>(s_rowtok + Q * K6_PK);
  int* s_acc = reinterpret_cast<int*>(s_pass + Q);  // per row: the child the walk accepts under it (-1: none)
  int* s_nrowtok = s_acc + Q;  // per row: how many s_rowtok holds, or -1 where its chain goes on past K6_PK
  __shared__ int s_row, s_nrej;
  __shared__ long long s_last;
  __shared__ const int64_t* s_rejp;

  const bool tfin = thr_acc <= FLT_MAX;  // the host makes thr_acc >= 1e-9; an infinite one keeps the division
  for (int i = tid; i < Q; i += nt) {
    const int64_t o = b * Q + i;
    s_cand[i] = cand[o]; s_next[i] = rnext[o]; s_sib[i] = rsib[o]; s_ridx[i] = ridx[o];
    s_tpred[i] = tpred[o];
    const float c = coins[o];
    s_pass[i] = tfin ? k6_pass_bound(c, thr_acc) : c;
    if (rank == 0) predicts[o] = -1;
  }
  if (rank == 0)
    for (int j = tid; j < S; j += nt) acc_idx[b * S + j] = -1;
  __syncthreads();
  E4_T(1);
  // phase A, in parallel: a level's outcome depends only on its row (coin, the children chain, pacc
  // from 0), so one thread per row runs that row's sibling scan (same order, same f32 sums). The
  // thread first chases the chain of its first PK children once, keeping each child, whether its token
  // is in range (and, greedy, whether it is the prediction) in registers and issuing the tested
  // probabilities' loads together, so the scan of those children reads no shared memory; children
  // past PK read theirs as the scan reaches them (H100, one process, against a second chase with the
  // bound computed in the scan: 0.96-0.98 of its time at B <= 32, reports/kernel_before_after/k6_phase_a/)
  constexpr int PK = K6_PK;
  for (int r = tid; r < Q; r += nt) {
    float pv[PK];
    int ck[PK];          // the chain's k-th child, -1 once it ends, leaves [0, Q) or passes the guard
    unsigned inr = 0u;   // bit k: child k's token is in [0, V)
    unsigned gacc = 0u;  // greedy rows: bit k: child k's token is target_predict[b, r]
    int64_t cur = s_next[r];
    const int64_t tp = s_tpred[r];
    int nin = 0;  // in-range tokens so far: the row's rejected tokens if the walk stops at it
#pragma unroll
    for (int k = 0; k < PK; ++k) {
      pv[k] = 0.0f;
      ck[k] = -1;
      if (cur >= 0 && cur < Q && k <= Q) {
        ck[k] = (int)cur;
        const int64_t tok = s_cand[cur];
        if (tok >= 0 && tok < V) {
          inr |= 1u << k;
          s_rowtok[r * PK + nin++] = tok;
          if (gr) gacc |= (tok == tp ? 1u : 0u) << k;
          else pv[k] = probs[(b * Q + r) * V + tok];
        }
        cur = s_sib[cur];
      } else {
        cur = -1;
      }
    }
    // the walk's scan of a final row ends where this chase ended (same tests); past K6_PK it chases itself
    s_nrowtok[r] = (cur >= 0 && cur < Q && PK <= Q) ? -1 : nin;
    const float pass = s_pass[r];
    auto resolve = [&](auto passes) {
      int acc_c = -1;
      float pacc = 0.0f;
      bool done = false;
#pragma unroll
      for (int k = 0; k < PK; ++k) {
        if (!done) {
          if (ck[k] < 0) {
            done = true;
          } else if ((inr >> k) & 1u) {
            bool acc;
            if (gr) {
              acc = (gacc >> k) & 1u;
            } else {
              pacc = __fadd_rn(pacc, pv[k]);
              acc = passes(pacc) || (pv[k] >= thr_single);
            }
            if (acc) { acc_c = ck[k]; done = true; }
          }
        }
      }
      for (int guard = PK; !done && cur != -1 && guard <= Q; ++guard) {
        if (cur < 0 || cur >= Q) break;
        const int64_t tok = s_cand[cur];
        if (tok < 0 || tok >= V) { cur = s_sib[cur]; continue; }
        bool acc;
        if (gr) {
          acc = tok == tp;
        } else {
          const float p = probs[(b * Q + r) * V + tok];
          pacc = __fadd_rn(pacc, p);
          acc = passes(pacc) || (p >= thr_single);
        }
        if (acc) { acc_c = (int)cur; break; }
        cur = s_sib[cur];
      }
      return acc_c;
    };
    const int acc_c = tfin ? resolve([&](float pa) { return pa >= pass; })
                           : resolve([&](float pa) { return pass <= __fdiv_rn(pa, thr_acc); });
    s_acc[r] = acc_c;
  }
  __syncthreads();
  E4_T(2);
  // the walk itself: S-1 lookups (thread 0 of every block; rank 0 writes)
  if (tid == 0) {
    int row = 0;
    long long last = s_ridx[0];
    int n = 0, nrej = 0;
    bool stopped = false;
    if (rank == 0) acc_idx[b * S] = (int32_t)last;
    for (int j = 1; j < S; ++j) {
      const int c = s_acc[row];
      if (c < 0) { stopped = true; break; }
      if (rank == 0 && last >= 0 && last < BQ) predicts[last] = (int32_t)s_cand[c];
      ++n;
      last = s_ridx[c];
      if (rank == 0) acc_idx[b * S + n] = (int32_t)last;
      row = c;
    }
    const int64_t* rejp = s_rej;
    if (stopped) {  // every in-range token of the final row's chain was rejected
      const int nr = s_nrowtok[row];
      if (nr >= 0) {  // listed by phase A
        rejp = s_rowtok + row * K6_PK;
        nrej = nr;
      } else {
        int64_t cur = s_next[row];
        for (int guard = 0; cur != -1 && guard <= Q; ++guard) {
          if (cur < 0 || cur >= Q) break;
          const int64_t tok = s_cand[cur];
          if (tok >= 0 && tok < V) s_rej[nrej++] = tok;
          cur = s_sib[cur];
        }
      }
    }
    s_rejp = rejp;
    if (rank == 0) acc_len[b] = n;
    s_row = row;
    s_last = last;
    s_nrej = nrej;
  }
  __syncthreads();
  E4_T(3);
  return K6Walk{s_row, s_last, s_nrej, s_rejp, s_tpred[s_row]};
}

template <bool VEC4>
__global__ void __launch_bounds__(512) k6_kernel(
    const int64_t* __restrict__ cand, const int64_t* __restrict__ ridx, const int64_t* __restrict__ rnext,
    const int64_t* __restrict__ rsib, const float* __restrict__ probs, const int64_t* __restrict__ tpred,
    const uint8_t* __restrict__ greedy_in, const float* __restrict__ coins, const float* __restrict__ fcoins,
    float thr_single, float thr_acc, int Q, int S, int64_t V, int32_t* __restrict__ predicts,
    int32_t* __restrict__ acc_idx, int32_t* __restrict__ acc_len, int64_t chunk) {
  pdl_wait();  // the dependents' trigger comes after the row's stream (below)
  const int CS = (int)gridDim.x, rank = (int)blockIdx.x;  // the cluster spans the grid's x
  if (CS > 1) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");  // see k6_exchange_totals
  E4_T(0);
  const int64_t b = blockIdx.y;
  const float fcoin = fcoins[b];  // loaded now: the sample needs it last, after the exchange
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, wid = tid >> 5, nw = nt >> 5;
  const int64_t BQ = (int64_t)gridDim.y * Q;

  extern __shared__ unsigned long long k6_sm[];
  const int64_t ntiles = (chunk + K6_TILE - 1) / K6_TILE;
  unsigned long long* tsum = k6_sm;                                   // ntiles + 1
  unsigned long long* wbuf = tsum + ntiles + 1;                       // 33
  __shared__ unsigned long long xtot[16];  // xtot[k]: block k's total (pushed by block k)
  __shared__ float xav[16];                // the fallback's block argmax (R_q = 0 only)
  __shared__ long long xai[16];
  __shared__ int64_t s_tile;
  __shared__ float rv[32];
  __shared__ long long ri[32];

  const bool gr = greedy_in[b] != 0;
  const K6Walk w = k6_walk(cand, ridx, rnext, rsib, probs, tpred, coins, gr, thr_single, thr_acc, Q, S, V, b, BQ,
                           rank, predicts, acc_idx, acc_len, wbuf + 33);
  const int64_t* s_rej = w.rej;
  const int row = w.row;
  const long long last = w.last;
  const bool last_ok = last >= 0 && last < BQ;
  if (gr) {
    if (CS > 1) asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // leave no arrival pending
    if (rank == 0 && tid == 0 && last_ok) predicts[last] = (int32_t)w.tpred_row;
    return;  // the whole cluster takes this branch (greedy is per request); no DSMEM use
  }
  // phases B/C on row `row`, range [v0, v1) of this block
  const float* rowp = probs + (b * Q + row) * V;
  const int64_t v0 = (int64_t)rank * chunk;
  const int64_t v1 = v0 + chunk < V ? v0 + chunk : V;
  const int64_t nt_loc = v1 > v0 ? (v1 - v0 + K6_TILE - 1) / K6_TILE : 0;
  // the rejected tokens (a set: each distinct token once) of this block's range: the first round's
  // values are loaded before the row's tiles, so their latency overlaps the tile loads
  const int nrej = w.nrej;
  auto rej_q = [&](int i, int64_t& tok_out) -> unsigned long long {
    const int64_t tok = s_rej[i];
    bool dup = false;
    for (int j = 0; j < i; ++j) dup |= (s_rej[j] == tok);
    tok_out = tok;
    return (!dup && tok >= v0 && tok < v1) ? k6_q(rowp[tok]) : 0ull;
  };
  int64_t rej_tok0 = 0;
  const unsigned long long rej_q0 = tid < nrej ? rej_q(tid, rej_tok0) : 0ull;
#pragma unroll 1
  for (int64_t t0 = wid; t0 < nt_loc; t0 += 4 * nw) {
    float x[4][4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int64_t t = t0 + (int64_t)u * nw;
      if (t < nt_loc) k6_load4<VEC4>(rowp, v0 + t * K6_TILE + lane * 4, v1, x[u]);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int64_t t = t0 + (int64_t)u * nw;
      if (t >= nt_loc) break;  // warp-uniform
      // q below 1.0 in 32 bits (entries past v1 were loaded as 0), an entry >= 1: k6_q (see k6r_kernel)
      unsigned long long s = 0;
      bool big = false;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        s += __float2uint_rz(__fmul_rn(x[u][k], 4294967296.0f));
        big |= x[u][k] >= 1.0f;
      }
      if (big) {
        s = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) s += k6_q(x[u][k]);
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(FULL, s, o);
      if (lane == 0) tsum[t] = s;
    }
  }
  // the next kernel may launch now, not at the start: launched early, its blocks slowed this kernel at
  // B = 32 (deployment-8b, one process: 16.6 us with the trigger at the start, 14.9 here, 12.4 plain launches)
  pdl_trigger();
  __syncthreads();
  // remove the rejected tokens from their tiles' sums
  if (rej_q0) atomicAdd(&tsum[(rej_tok0 - v0) / K6_TILE], (unsigned long long)(0ull - rej_q0));
  for (int i = tid + nt; i < nrej; i += nt) {
    int64_t tok;
    const unsigned long long q = rej_q(i, tok);
    if (q) atomicAdd(&tsum[(tok - v0) / K6_TILE], (unsigned long long)(0ull - q));
  }
  __syncthreads();
  const unsigned long long btotal = block_exclusive_scan<unsigned long long>(tsum, nt_loc, wbuf);
  if (wid == 0 && lane == 0) tsum[nt_loc] = btotal;
  E4_T(4);
  unsigned long long Rq = btotal, base = 0ull;
  if (CS > 1) k6_exchange_totals(btotal, rank, CS, xtot, Rq, base);
  E4_T(5);
  if (Rq == 0) {  // (every block of the cluster) the fallback: argmax of the row, Rej ignored, a second pass
    float av = -INFINITY;
    long long ai = LLONG_MAX;
    for (int64_t v = v0 + tid; v < v1; v += nt)
      if (amax_better(rowp[v], v, av, ai)) { av = rowp[v]; ai = v; }
    k6_block_argmax(av, ai, rv, ri);
    if (CS > 1) k6_exchange_argmax(av, ai, rank, CS, xav, xai);
    if (rank == 0 && tid == 0 && last_ok) predicts[last] = (int32_t)ai;
    return;
  }
  const unsigned long long u = k6_target(fcoin, Rq);
  if (!(u >= base && u < base + btotal)) return;
  // this block holds the sample: find the tile, then the element
  const unsigned long long ul = u - base;
  if (tid == 0) s_tile = -1;
  __syncthreads();
  for (int64_t t = tid; t < nt_loc; t += nt)
    if (tsum[t] <= ul && ul < tsum[t + 1]) s_tile = t;
  __syncthreads();
  E4_T(6);
  const int64_t t = s_tile;
  if (wid == 0 && t >= 0) {
    const int64_t v = v0 + t * K6_TILE + lane * 4;
    float x[4];
    k6_load4<VEC4>(rowp, v, v1, x);
    unsigned long long q[4], s = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      q[k] = (v + k < v1) ? k6_q(x[k]) : 0ull;
      if (q[k]) {
        for (int j = 0; j < nrej; ++j)
          if (s_rej[j] == v + k) { q[k] = 0ull; break; }
      }
      s += q[k];
    }
    unsigned long long incl = s;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      unsigned long long y = __shfl_up_sync(FULL, incl, o);
      if (lane >= o) incl += y;
    }
    const unsigned long long target = ul - tsum[t];
    const unsigned mask = __ballot_sync(FULL, incl > target);
    const int first = __ffs(mask) - 1;
    if (lane == first) {
      unsigned long long run = incl - s;
      for (int k = 0; k < 4; ++k) {
        run += q[k];
        if (run > target) {
          if (last_ok) predicts[last] = (int32_t)(v + k);
          break;
        }
      }
    }
  }
}

// K6, the register form (small B, V <= 16 * 2048 * 8): each thread of a cluster of CS 512-thread blocks
// holds 4 * NV consecutive entries of the final row in registers (one round of float4 loads), so phases
// B/C take one block scan (warp shuffles, one __syncthreads), one exchange of block totals (each block
// pushes its total and argmax into every block's shared memory, then one cluster barrier) and the
// owning thread's scan of its own registers: no tile sums, no reload of the sampled tile. CS = 1 (the whole row in one block) launches without a cluster. Same integers,
// same sample as k6_kernel. GX: the same kernel without a cluster (up to K6G_MAX_CS blocks a row, a cooperative
// launch): the block totals go through global memory (k6g_exchange_totals), and where R_q = 0 block 0 alone takes
// the row's argmax (the others return).
template <int NV, bool VEC4, bool GX = false>
__global__ void __launch_bounds__(512, NV == 8 ? 1 : 2) k6r_kernel(
    const int64_t* __restrict__ cand, const int64_t* __restrict__ ridx, const int64_t* __restrict__ rnext,
    const int64_t* __restrict__ rsib, const float* __restrict__ probs, const int64_t* __restrict__ tpred,
    const uint8_t* __restrict__ greedy_in, const float* __restrict__ coins, const float* __restrict__ fcoins,
    float thr_single, float thr_acc, int Q, int S, int64_t V, int32_t* __restrict__ predicts,
    int32_t* __restrict__ acc_idx, int32_t* __restrict__ acc_len) {
  constexpr int E = 4 * NV;  // entries per thread
  pdl_begin();
  const int CS = (int)gridDim.x, rank = (int)blockIdx.x;  // the cluster spans the grid's x
  // a block's shared memory may take DSMEM stores only once every block of the cluster runs: arrive
  // now, wait right before the stores (by then long satisfied)
  if (!GX && CS > 1) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  E4_T(0);
  const int64_t b = blockIdx.y;
  const float fcoin = fcoins[b];  // loaded now: the sample needs it last, after the exchange
  const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5;
  __shared__ unsigned long long s_tag;  // GX: this launch's tag, stored by thread 0 before the block scan's barrier
  // GX: the launch count, loaded now and used only after phase A (a thread waits for a load only at its first use)
  const unsigned long long ep = (GX && CS > 1 && tid == 0) ? ld_relaxed_gpu(&g_k6_ep[b]) : 0ull;
  constexpr int NW = 512 / 32;
  const int64_t BQ = (int64_t)gridDim.y * Q;
  extern __shared__ unsigned long long k6r_sm[];
  __shared__ unsigned long long wsum[NW];
  __shared__ float wav[NW];
  __shared__ long long wai[NW];
  __shared__ unsigned long long xtot[16];  // xtot[k]: block k's total (pushed by block k)
  __shared__ float xav[16];                // the fallback's block argmax (R_q = 0 only)
  __shared__ long long xai[16];

  const bool gr = greedy_in[b] != 0;
  const K6Walk w = k6_walk(cand, ridx, rnext, rsib, probs, tpred, coins, gr, thr_single, thr_acc, Q, S, V, b, BQ,
                           rank, predicts, acc_idx, acc_len, k6r_sm);
  const long long last = w.last;
  const bool last_ok = last >= 0 && last < BQ;
  if (gr) {
    if (!GX && CS > 1) asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // leave no arrival pending
    if (rank == 0 && tid == 0 && last_ok) predicts[last] = (int32_t)w.tpred_row;
    return;  // the whole cluster takes this branch (greedy is per request)
  }
  const float* rowp = probs + (b * Q + w.row) * V;
  const int64_t lo = (int64_t)rank * (512 * E) + (int64_t)tid * E;
  float x[E];
#pragma unroll
  for (int i = 0; i < NV; ++i) k6_load4<VEC4>(rowp, lo + 4 * i, V, &x[4 * i]);
  // the rejected tokens in [lo, lo + E), as a bit mask (a set: duplicates collapse); overlaps the loads
  unsigned rmask = 0u;
  for (int j = 0; j < w.nrej; ++j) {
    const int64_t d = w.rej[j] - lo;
    if (d >= 0 && d < E) rmask |= 1u << (int)d;
  }
  // q_v below 1.0 in 32 bits: the u32 conversion truncates like k6_q and gives 0 for NaN and t <= 0
  // (entries past V were loaded as 0); an entry >= 1 or a rejected token here: the exact form again
  // qw[k]: q_k in 32 bits where every q here is below 2^32 and no token here is rejected (the common case), so
  // the owner's scan after the exchange only adds (the conversions it did there took 0.26 us of deployment-8b's
  // B = 1 launch on the H100); else the entries' bits, for the exact form. One array, so no more registers.
  bool big = false;
#pragma unroll
  for (int k = 0; k < E; ++k) big |= x[k] >= 1.0f;
  const bool exact = big || rmask;
  unsigned qw[E];
  unsigned long long s = 0ull;
  if (!exact) {
#pragma unroll
    for (int k = 0; k < E; ++k) {
      qw[k] = __float2uint_rz(__fmul_rn(x[k], 4294967296.0f));
      s += qw[k];
    }
  } else {
#pragma unroll
    for (int k = 0; k < E; ++k) {
      s += ((rmask >> k) & 1u) ? 0ull : k6_q(x[k]);
      qw[k] = __float_as_uint(x[k]);
    }
  }
  // block scan: inclusive within the warp, warp totals through shared memory
  unsigned long long incl = s;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned long long y = __shfl_up_sync(FULL, incl, o);
    if (lane >= o) incl += y;
  }
  if (lane == 31) wsum[wid] = incl;
  if (GX && CS > 1 && tid == 0) s_tag = k6g_tag(ep);
  __syncthreads();
  E4_T(4);
  unsigned long long below_w = 0ull, btotal = 0ull;
#pragma unroll
  for (int k = 0; k < NW; ++k) {
    const unsigned long long t = wsum[k];
    below_w += k < wid ? t : 0ull;
    btotal += t;
  }
  unsigned long long Rq = btotal, base = 0ull;
  if (CS > 1) {
    if constexpr (GX) {
      __shared__ unsigned long long xt[K6G_MAX_CS];
      k6g_exchange_totals(btotal, rank, CS, b, s_tag, ep, xt, Rq, base);
    } else {
      k6_exchange_totals(btotal, rank, CS, xtot, Rq, base);
    }
  }
  E4_T(5);
  if (GX && CS > 1 && Rq == 0ull) {  // the fallback (rare): block 0 takes the argmax of the whole row itself
    if (rank != 0) return;
    float av = -INFINITY;
    long long ai = LLONG_MAX;
    for (int64_t v = tid; v < V; v += 512)
      if (amax_better(rowp[v], v, av, ai)) { av = rowp[v]; ai = v; }
    k6_block_argmax(av, ai, wav, wai);
    if (tid == 0 && last_ok) predicts[last] = (int32_t)ai;
    return;
  }
  if (Rq == 0ull) {  // (every block of the cluster) the fallback: argmax of the row, Rej ignored
    float av = -INFINITY;
    long long ai = LLONG_MAX;
#pragma unroll
    for (int k = 0; k < E; ++k) {
      if (lo + k < V) {
        const float xk = exact ? __uint_as_float(qw[k]) : rowp[lo + k];  // qw holds q there: reload (rare path)
        if (amax_better(xk, lo + k, av, ai)) { av = xk; ai = lo + k; }
      }
    }
    k6_block_argmax(av, ai, wav, wai);
    if (!GX && CS > 1) k6_exchange_argmax(av, ai, rank, CS, xav, xai);
    if (rank == 0 && tid == 0 && last_ok) predicts[last] = (int32_t)ai;
    return;
  }
  const unsigned long long u = k6_target(fcoin, Rq);
  const unsigned long long start = base + below_w + (incl - s);  // entries before this thread's first
  E4_T(6);
  if (s == 0ull || u < start || u >= start + s) return;
  unsigned long long run = start;
  if (!exact) {  // every q below 2^32 and no rejected token here: qw holds them (0 past V)
#pragma unroll
    for (int k = 0; k < E; ++k) {
      run += qw[k];
      if (run > u) {
        if (last_ok) predicts[last] = (int32_t)(lo + k);
        break;
      }
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < E; ++k) {
    if (lo + k < V) {
      run += ((rmask >> k) & 1u) ? 0ull : k6_q(__uint_as_float(qw[k]));
      if (run > u) {
        if (last_ok) predicts[last] = (int32_t)(lo + k);
        break;
      }
    }
  }
}

// Tuning hook (the bench's sweep only): 0 automatic; 1 the register form with `arg` float4 loads a thread
// (clusters of V / (2048 arg) blocks, however many waves); 2 the tiled kernel with clusters of `arg` blocks; 3 the
// register form without clusters (GX) with `arg` float4 loads a thread
static int g_k6_form = 0;
static int64_t g_k6_arg = 0;
void k6_form(int64_t form, int64_t arg) { g_k6_form = (int)form; g_k6_arg = arg; }
// Test hook: every request's launch count of K6's form without clusters set to `count` (the low 32 bits of g_k6_ep;
// the blocks a request beside it kept), so that a test takes the count across its wrap without 2^32 launches.
void k6_gx_count(int64_t count) {
  E4_CUDA_CHECK(cudaDeviceSynchronize());
  unsigned long long ep[K6G_MAX_B];
  E4_CUDA_CHECK(cudaMemcpyFromSymbol(ep, g_k6_ep, sizeof ep));
  for (auto& e : ep) e = (e & ~0xffffffffull) | ((unsigned long long)count & 0xffffffffull);
  E4_CUDA_CHECK(cudaMemcpyToSymbol(g_k6_ep, ep, sizeof ep));
  E4_CUDA_CHECK(cudaDeviceSynchronize());
}

void draft_tree_reject_sample(at::Tensor candidates, at::Tensor retrive_index, at::Tensor retrive_next_token,
                              at::Tensor retrive_next_sibling, at::Tensor target_probs, at::Tensor target_predict,
                              at::Tensor is_greedy, at::Tensor coins, at::Tensor final_coins, double threshold_single,
                              double threshold_acc, int64_t B, int64_t Q, int64_t S, int64_t V, at::Tensor predicts,
                              at::Tensor accept_index, at::Tensor accept_length) {
  E4_PRE(B >= 1, "B must be >= 1, got ", B);
  E4_PRE(Q >= 1, "Q must be >= 1, got ", Q);
  E4_PRE(S >= 1, "S must be >= 1, got ", S);
  E4_PRE(V >= 1, "V must be >= 1, got ", V);
  check_tensor(candidates, "candidates", at::kLong, {B, Q});
  check_tensor(retrive_index, "retrive_index", at::kLong, {B, Q});
  check_tensor(retrive_next_token, "retrive_next_token", at::kLong, {B, Q});
  check_tensor(retrive_next_sibling, "retrive_next_sibling", at::kLong, {B, Q});
  check_tensor(target_probs, "target_probs", at::kFloat, {B, Q, V});
  check_tensor(target_predict, "target_predict", at::kLong, {B, Q});
  check_tensor(is_greedy, "is_greedy", at::kByte, {B});
  check_tensor(coins, "coins", at::kFloat, {B, Q});
  check_tensor(final_coins, "final_coins", at::kFloat, {B});
  check_tensor(predicts, "predicts", at::kInt, {B * Q});
  check_tensor(accept_index, "accept_index", at::kInt, {B, S});
  check_tensor(accept_length, "accept_length", at::kInt, {B});
  E4_CHECK(B <= 65535, "draft_tree_reject_sample: B > 65535 not supported");
  const float ts = (float)threshold_single;
  const float ta_in = (float)threshold_acc;
  const float ta = ta_in > 1e-9f ? ta_in : 1e-9f;  // max(f32(threshold_acc), f32(1e-9))
  const c10::cuda::CUDAGuard guard(candidates.device());
  auto stream = c10::cuda::getCurrentCUDAStream();
  const dim3 block(512);
  const bool vec = V % 4 == 0 && reinterpret_cast<uintptr_t>(target_probs.data_ptr()) % 16 == 0;
  auto run = [&](auto kern, dim3 grid, size_t smem, int cs, bool coop, auto... tail) {
    launch_cfg(kern, grid, block, smem, cs, coop, stream, (const int64_t*)ptr<int64_t>(candidates),
              (const int64_t*)ptr<int64_t>(retrive_index), (const int64_t*)ptr<int64_t>(retrive_next_token),
              (const int64_t*)ptr<int64_t>(retrive_next_sibling), (const float*)ptr<float>(target_probs),
              (const int64_t*)ptr<int64_t>(target_predict), (const uint8_t*)ptr<uint8_t>(is_greedy),
              (const float*)ptr<float>(coins), (const float*)ptr<float>(final_coins), ts, ta, (int)Q, (int)S, V,
              ptr<int32_t>(predicts), ptr<int32_t>(accept_index), ptr<int32_t>(accept_length), tail...);
  };
  // The register form, in clusters (k6_exchange_totals): the smallest NV (>= E4_K6R_MIN_NV) whose clusters of
  // <= 16 blocks hold the row, all B clusters in one wave of resident blocks. Without clusters (GX,
  // k6g_exchange_totals; 16-byte aligned rows, V % 4 == 0): the smallest NV whose B x (blocks a row <= 64) blocks
  // are all resident at once (a cooperative launch), taken where that NV is smaller than the cluster form's: a
  // block's share of the final row is then smaller than a cluster allows. Measured on the H100 (kernel_bench
  // compare-src, one process, reports/kernel_before_after/k6_gx/): deployment-8b's B = 1 (63 blocks of 2048
  // entries instead of 16 clusters' blocks of 8192) 5.59 -> 4.97 us, B = 8 (NV 2: 256 blocks instead of clusters
  // of NV 4) 7.45 -> 6.08; with the same NV as the cluster form (the default contract's V = 16384, 8 blocks) GX
  // took 1.03-1.05x the cluster form's time, so equal NV keeps the clusters. Otherwise the tiled kernel below.
  const size_t smem_r = k6_tree_bytes(Q);
  auto blocks_of = [&](int nv) { return (V + 2048 * nv - 1) / (2048 * nv); };
  auto fits_r = [&](auto kern, int nv) -> bool {
    const int64_t cs = blocks_of(nv);
    if (g_k6_form >= 2 || (g_k6_form == 1 && nv != g_k6_arg)) return false;
    if (nv < E4_K6R_MIN_NV || cs > 16 || smem_r > 200 * 1024) return false;
    if (cs > 8 && usable_cluster(kern, (int)cs, block, smem_r) < cs) return false;
    // all B clusters in one wave: a cluster's blocks share a GPC, so fewer clusters fit than blocks / cs
    const int64_t fit = cs > 1 ? resident(kern, (int)cs, (int)block.x, smem_r) : resident_blocks(kern, (int)block.x, smem_r);
    return g_k6_form == 1 || B <= fit;
  };
  auto fits_g = [&](auto kern, int nv) -> bool {
    const int64_t cs = blocks_of(nv);
    if (!vec || g_k6_form == 1 || g_k6_form == 2 || (g_k6_form == 3 && nv != g_k6_arg)) return false;
    if (cs < 2 || cs > K6G_MAX_CS || B > K6G_MAX_B || smem_r > 200 * 1024) return false;
    return B * cs <= resident_blocks(kern, (int)block.x, smem_r);
  };
  // each form's builds by NV = 1 << index (one kernel type: every build takes the same arguments)
  using K6R = decltype(&k6r_kernel<1, true>);
  const K6R reg_vec[] = {k6r_kernel<1, true>, k6r_kernel<2, true>, k6r_kernel<4, true>, k6r_kernel<8, true>};
  const K6R reg_any[] = {k6r_kernel<1, false>, k6r_kernel<2, false>, k6r_kernel<4, false>, k6r_kernel<8, false>};
  const K6R gx[] = {k6r_kernel<1, true, true>, k6r_kernel<2, true, true>, k6r_kernel<4, true, true>};
  const K6R* reg = vec ? reg_vec : reg_any;
  int ir = -1, ig = -1;  // the index each register form takes here (-1: it does not apply)
  for (int i = 0; i < 4 && ir < 0; ++i)
    if (fits_r(reg[i], 1 << i)) ir = i;
  for (int i = 0; i < 3 && ig < 0; ++i)
    if (fits_g(gx[i], 1 << i)) ig = i;
  if (ig >= 0 && (ir < 0 || ig < ir)) {
    run(gx[ig], dim3((unsigned)blocks_of(1 << ig), (unsigned)B), smem_r, 0, true);
    return;
  }
  if (ir >= 0) {
    const int64_t cs = blocks_of(1 << ir);
    run(reg[ir], dim3((unsigned)cs, (unsigned)B), smem_r, cs > 1 ? (int)cs : 0, false);
    return;
  }
  E4_CHECK(g_k6_form != 3, "draft_tree_reject_sample: the register form without clusters with ", g_k6_arg,
           " float4 loads a thread does not fit B = ", B, ", V = ", V);
  E4_CHECK(g_k6_form != 1, "draft_tree_reject_sample: the register form with ", g_k6_arg,
           " float4 loads a thread does not fit V = ", V);
  auto k = vec ? k6_kernel<true> : k6_kernel<false>;
  auto smem_of = [&](int64_t chunk) {
    return (size_t)(chunk / K6_TILE + 1 + 33) * 8 + k6_tree_bytes(Q);
  };
  auto chunk_of = [&](int c) { int64_t ch = (V + c - 1) / c; return (ch + K6_TILE - 1) / K6_TILE * K6_TILE; };
  // blocks per request: as many as one wave holds for all B requests' clusters (large B: fewer, longer
  // blocks instead of a second wave), at most 16 and at most one per 8192 entries of the row. The wave is
  // counted in clusters: they must fit the GPCs, which hold fewer clusters of cs than slots / cs
  const int64_t slots = resident_blocks(k, (int)block.x, smem_of(chunk_of(1)));
  int cs = (int)std::min<int64_t>(std::min<int64_t>(16, std::max<int64_t>(1, slots / B)),
                                  std::max<int64_t>(1, (V + 8191) / 8192));
  if (g_k6_form == 2 && g_k6_arg > 0)
    cs = (int)std::min<int64_t>(16, g_k6_arg);
  else
    while (cs > 1 && resident(k, cs, (int)block.x, smem_of(chunk_of(cs))) < B) --cs;
  if (cs > 8) cs = usable_cluster(k, cs, block, smem_of(chunk_of(cs)));
  const int64_t chunk = chunk_of(cs);
  cs = (int)((V + chunk - 1) / chunk);
  const size_t smem = smem_of(chunk);
  E4_CHECK(smem <= 227 * 1024, "draft_tree_reject_sample: Q/V too large for shared memory");
  run(k, dim3((unsigned)cs, (unsigned)B), smem, cs, false, chunk);
}

// ==========================================================================================
// K7 update_verify_result (§7): every block rebuilds the (small) per-request metadata in shared
// memory; block 0 writes the bookkeeping outputs and copies no row, blocks 1.. copy the next_hidden
// rows (they need only the accepted rows and their prefix sums: no predicts/cache-slot loads), so a
// row copy runs beside the bookkeeping chain instead of after it.

struct K7Out {
  int32_t *acc_out, *acc_len_out, *acc_indptr, *acc_flat, *verified;
  uint8_t* evict;
  int64_t *free_slots, *seq_out, *acc_node;
  int32_t* unf_count;
  int64_t* unf_index;
  int32_t *next_len, *next_indptr, *next_vid;
  int64_t* next_pos;
  int64_t *next_seq, *next_pool;
  int32_t *next_root, *next_last;
};

template <typename VT>
__global__ void __launch_bounds__(256) k7_kernel(
    const int32_t* __restrict__ acc_idx, const int32_t* __restrict__ predicts, const int32_t* __restrict__ finish,
    const int64_t* __restrict__ seq_lens, const int64_t* __restrict__ pool, int32_t* __restrict__ r2t, int64_t P,
    const int64_t* __restrict__ ocl, const VT* __restrict__ hidden, const int64_t* __restrict__ vnode, int B, int Q,
    int S, int64_t Smax, int64_t row_units, VT* __restrict__ next_hidden, K7Out o) {
  pdl_begin();
  extern __shared__ int64_t k7_sm[];
  int64_t* wbuf = k7_sm;               // 33
  int64_t* accp = wbuf + 33;           // B+1: exclusive prefix of (a_b + 1)
  int64_t* unfp = accp + (B + 1);      // B+1: same over unfinished requests
  int64_t* urank = unfp + (B + 1);     // B+1: rank among unfinished
  int64_t* s_L = urank + (B + 1);      // B: seq_lens (block 0)
  int64_t* s_pb = s_L + B;             // B: req_pool_indices (block 0)
  int32_t* row = reinterpret_cast<int32_t*>(s_pb + B);  // B*S, truncated accept rows
  int32_t* src = row + (int64_t)B * S;                         // B*S, source position of next rows
  int64_t* s_ocl = reinterpret_cast<int64_t*>(src + (int64_t)B * S);  // B*S (row + src: 8*B*S bytes, aligned)
  int64_t* s_vn = s_ocl + (int64_t)B * S;                                                    // B*S
  int32_t* s_pred = reinterpret_cast<int32_t*>(s_vn + (int64_t)B * S);                       // B*S
  uint32_t* bm = reinterpret_cast<uint32_t*>(s_pred + (int64_t)B * S);  // ceil(B*Q/32)
  const int tid = threadIdx.x, nt = blockDim.x;
  const int64_t BS = (int64_t)B * S, BQ = (int64_t)B * Q;
  const bool blk0 = blockIdx.x == 0;  // the bookkeeping block; the others copy rows
  // loads issued up front so that their latency overlaps the first phase: the per-request scalars of
  // this thread's first request, and (block 0, <= 4 slots a thread) the cache slots the free-slot
  // compaction of the end may need
  const int64_t L_pre = tid < B ? seq_lens[tid] : 0, pool_pre = tid < B ? pool[tid] : 0;
  const int32_t fin_pre = tid < B ? finish[tid] : 0;
  const int64_t ev_c = (BQ + nt - 1) / nt;
  const int64_t ev_s0 = (int64_t)tid * ev_c, ev_s1 = ev_s0 + ev_c < BQ ? ev_s0 + ev_c : BQ;
  constexpr int NPRE = 4;
  const bool ocl_pre_ok = blk0 && ev_c <= NPRE;
  int64_t ocl_pre[NPRE];
#pragma unroll
  for (int u = 0; u < NPRE; ++u) ocl_pre[u] = (ocl_pre_ok && ev_s0 + u < ev_s1) ? ocl[ev_s0 + u] : 0;
  // accepted rows, and (one parallel round of loads) what every accepted entry needs
  for (int64_t e = tid; e < BS; e += nt) {
    const int b = (int)e / S, j = (int)e - b * S;  // B*S < 2^21 (host check)
    int32_t v = acc_idx[e];
    const int32_t fp = finish[b];
    if (fp >= 0 && j > fp) v = -1;
    row[e] = v;
    if (blk0) {
      const bool pok = v >= 0 && v < BQ;
      s_pred[e] = pok ? predicts[v] : -1;
      s_ocl[e] = pok ? ocl[v] : 0;
      s_vn[e] = (pok && vnode) ? vnode[v] : -1;
    }
  }
  if (blk0) {
    for (int64_t w = tid; w < (BQ + 31) / 32; w += nt) bm[w] = 0u;
    for (int b = tid; b < B; b += nt) {
      s_L[b] = b == tid ? L_pre : seq_lens[b];
      s_pb[b] = b == tid ? pool_pre : pool[b];
    }
  }
  __syncthreads();
  // the three exclusive prefix sums (accepted entries, the same over unfinished requests, rank
  // among unfinished) in one block scan: three 21-bit fields of one int64 (every total <= B*S < 2^21)
  constexpr int64_t F21 = (1ll << 21) - 1;
  int64_t Nacc, Nunf, U;
  if (B <= 32) {
    // one warp: counts and their scan by shuffles (integer sums: the block scan's values), one block
    // barrier instead of the block scan path's five
    if (tid < 32) {
      long long v = 0;
      if (tid < B) {
        long long cnt = 0;
        for (int j = 0; j < S; ++j) cnt += row[(int64_t)tid * S + j] != -1;
        const bool unf = fin_pre < 0;
        v = cnt | ((unf ? cnt : 0ll) << 21) | ((unf ? 1ll : 0ll) << 42);
      }
      long long inc = v;
      for (int o = 1; o < B; o <<= 1) {  // lanes >= B add nothing: ceil(log2 B) levels suffice for lanes < B
        const long long u = __shfl_up_sync(FULL, inc, o);
        if (tid >= o) inc += u;
      }
      const long long ex = inc - v;
      if (tid < B) { accp[tid] = ex & F21; unfp[tid] = (ex >> 21) & F21; urank[tid] = ex >> 42; }
      if (tid == B - 1) { accp[B] = inc & F21; unfp[B] = (inc >> 21) & F21; urank[B] = inc >> 42; }
    }
    __syncthreads();
    Nacc = accp[B]; Nunf = unfp[B]; U = urank[B];
  } else {
    for (int b = tid; b < B; b += nt) {
      int64_t cnt = 0;
      for (int j = 0; j < S; ++j) cnt += row[(int64_t)b * S + j] != -1;
      const bool unf = (b == tid ? fin_pre : finish[b]) < 0;
      accp[b] = cnt | ((unf ? cnt : 0ll) << 21) | ((unf ? 1ll : 0ll) << 42);
    }
    __syncthreads();
    const int64_t tot3 = block_exclusive_scan<int64_t>(accp, B, wbuf);
    for (int b = tid; b <= B; b += nt) {
      const int64_t v = b < B ? accp[b] : tot3;
      accp[b] = v & F21;
      unfp[b] = (v >> 21) & F21;
      urank[b] = v >> 42;
    }
    __syncthreads();
    Nacc = tot3 & F21; Nunf = (tot3 >> 21) & F21; U = tot3 >> 42;
  }
  // compacted rows, one thread per accepted entry (its place k among its row's accepted entries from the
  // row in shared memory), so no thread walks a request's S entries in turn while the block waits
  for (int64_t e = tid; e < BS; e += nt) {
    const int32_t p = row[e];
    if (p == -1) continue;
    const int b = (int)e / S, j = (int)e - b * S;
    int64_t k = 0;
    for (int i = 0; i < j; ++i) k += row[(int64_t)b * S + i] != -1;
    const bool unf = urank[b + 1] > urank[b];  // urank: exclusive prefix of the unfinished flags
    if (!blk0) {
      if (unf) src[unfp[b] + k] = p;
      continue;
    }
    const bool pok = p >= 0 && p < BQ;
    const int64_t L = s_L[b], pb = s_pb[b], f = accp[b] + k;
    const int32_t pred = s_pred[e];
    o.acc_flat[f] = p;
    o.verified[f] = pred;
    if (o.acc_node) o.acc_node[f] = s_vn[e];
    if (pok) atomicOr(&bm[p >> 5], 1u << (p & 31));
    if (pb >= 0 && pb < P && L + k >= 0 && L + k < Smax && pok) r2t[pb * Smax + L + k] = (int32_t)s_ocl[e];
    if (unf) {
      const int64_t m = unfp[b] + k;
      o.next_vid[m] = pred;
      o.next_pos[m] = L + k;
    }
  }
  // per request: its counts and its last accepted entry
  for (int b = tid; blk0 && b < B; b += nt) {
    const bool unf = urank[b + 1] > urank[b];
    const int64_t L = s_L[b], pb = s_pb[b];
    int32_t lastpos = -1, lastpred = -1;
    for (int j = S - 1; j >= 0; --j) {
      const int64_t e = (int64_t)b * S + j;
      if (row[e] != -1) { lastpos = row[e]; lastpred = s_pred[e]; break; }
    }
    const int64_t cnt = accp[b + 1] - accp[b];
    o.acc_len_out[b] = (int32_t)(cnt - 1);
    o.seq_out[b] = L + cnt;
    if (unf) {
      const int64_t u = urank[b];
      o.unf_index[u] = b;
      o.next_len[u] = (int32_t)(cnt - 1);
      o.next_indptr[u] = (int32_t)unfp[b];
      o.next_seq[u] = L + cnt;
      o.next_pool[u] = pb;
      o.next_root[u] = (lastpos >= 0 && lastpos < BQ) ? lastpred : -1;
      o.next_last[u] = lastpos;
    }
  }
  if (blk0) {
    for (int64_t e = tid; e < BS; e += nt) o.acc_out[e] = row[e];
    for (int b = tid; b <= B; b += nt) o.acc_indptr[b] = (int32_t)accp[b];
    for (int64_t f = Nacc + tid; f < BS; f += nt) {
      o.acc_flat[f] = -1;
      o.verified[f] = -1;
      if (o.acc_node) o.acc_node[f] = -1;
    }
    for (int64_t m = Nunf + tid; m < BS; m += nt) { o.next_vid[m] = -1; o.next_pos[m] = -1; }
    for (int64_t u = U + tid; u < B; u += nt) {
      o.unf_index[u] = -1; o.next_len[u] = -1; o.next_seq[u] = -1; o.next_pool[u] = -1;
      o.next_root[u] = -1; o.next_last[u] = -1;
    }
    if (tid == 0) { o.next_indptr[U] = (int32_t)Nunf; o.unf_count[0] = (int32_t)U; }
    for (int64_t u = U + 1 + tid; u <= B; u += nt) o.next_indptr[u] = -1;
  }
  __syncthreads();
  if (blk0) {
    // evict mask and free-slot compaction (ascending p)
    const int64_t c = (BQ + nt - 1) / nt;
    const int64_t s0 = (int64_t)tid * c, s1 = s0 + c < BQ ? s0 + c : BQ;
    int64_t cnt = 0;
    for (int64_t p = s0; p < s1; ++p) {
      const bool ev = !((bm[p >> 5] >> (p & 31)) & 1u);
      o.evict[p] = ev ? 1 : 0;
      cnt += ev;
    }
    // exclusive scan of the per-thread counts: shuffles within each warp, the warps' totals through
    // shared memory (one block barrier)
    __shared__ long long wev[32];
    long long inc = cnt;
    if (BQ <= nt) {  // at most one slot a thread: the warp's inclusive count from one ballot
      inc = __popc(__ballot_sync(FULL, cnt != 0) & (0xffffffffu >> (31 - (tid & 31))));
    } else {
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const long long u = __shfl_up_sync(FULL, inc, o);
        if ((tid & 31) >= o) inc += u;
      }
    }
    if ((tid & 31) == 31) wev[tid >> 5] = inc;
    __syncthreads();
    long long before = 0, nev = 0;
    for (int i = 0; i < (nt >> 5); ++i) {
      const long long v = wev[i];
      if (i < (tid >> 5)) before += v;
      nev += v;
    }
    int64_t w = before + inc - cnt;
    for (int64_t p0 = s0; p0 < s1; p0 += 8) {  // 8 slot loads in flight before the stores
      int64_t v[8];
      bool ev[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int64_t p = p0 + u;
        ev[u] = p < s1 && !((bm[p >> 5] >> (p & 31)) & 1u);
        // ocl_pre_ok: one pass (p0 == s0) over <= NPRE slots
        v[u] = ev[u] ? ((u < NPRE && ocl_pre_ok) ? ocl_pre[u % NPRE] : ocl[p]) : 0;
      }
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (ev[u]) o.free_slots[w++] = v[u];
    }
    for (int64_t f = nev + tid; f < BQ; f += nt) o.free_slots[f] = -1;
  }
  // next_hidden rows [0, N_unf): blocks 1.. (block 0 has none)
  for (int64_t m = (int64_t)blockIdx.x - 1; !blk0 && m < Nunf; m += gridDim.x - 1) {
    const int32_t p = src[m];
    if (p >= 0 && p < BQ) copy_row<VT>(hidden + (int64_t)p * row_units, next_hidden + m * row_units, row_units, tid, nt);
  }
}

void update_verify_result(
    at::Tensor accept_index, at::Tensor accept_length, at::Tensor predicts, at::Tensor finish_pos, at::Tensor seq_lens,
    at::Tensor req_pool_indices, at::Tensor req_to_token, at::Tensor out_cache_loc, at::Tensor hidden_states,
    std::optional<at::Tensor> verify_node_ids, int64_t B, int64_t Q, int64_t S, int64_t H, int64_t S_max,
    at::Tensor accept_index_out, at::Tensor accept_length_out, at::Tensor accept_indptr, at::Tensor accepted_flat,
    at::Tensor verified_id, at::Tensor evict_mask, at::Tensor free_slots, at::Tensor seq_lens_out,
    std::optional<at::Tensor> accepted_node_ids, at::Tensor unfinished_count, at::Tensor unfinished_index,
    at::Tensor next_accept_length, at::Tensor next_indptr, at::Tensor next_verified_id, at::Tensor next_hidden,
    at::Tensor next_positions, at::Tensor next_seq_lens, at::Tensor next_req_pool_indices, at::Tensor next_root_token,
    at::Tensor next_last_flat) {
  E4_PRE(B >= 1 && Q >= 1 && S >= 1 && H >= 1 && S_max >= 1, "B, Q, S, H, S_max must be >= 1, got ", B, ", ",
         Q, ", ", S, ", ", H, ", ", S_max);
  check_tensor(accept_index, "accept_index", at::kInt, {B, S});
  check_tensor(accept_length, "accept_length", at::kInt, {B});
  check_tensor(predicts, "predicts", at::kInt, {B * Q});
  check_tensor(finish_pos, "finish_pos", at::kInt, {B});
  check_tensor(seq_lens, "seq_lens", at::kLong, {B});
  check_tensor(req_pool_indices, "req_pool_indices", at::kLong, {B});
  E4_VALUE(req_to_token.dim() == 2, "req_to_token must be [P, S_max]");
  check_tensor(req_to_token, "req_to_token", at::kInt, {-1, S_max});
  check_tensor(out_cache_loc, "out_cache_loc", at::kLong, {B * Q});
  check_hidden_dtype(hidden_states, "hidden_states");
  const auto ht = hidden_states.scalar_type();
  check_tensor(hidden_states, "hidden_states", ht, {B * Q, H});
  const bool with_nodes = has(verify_node_ids);
  if (with_nodes) {
    check_tensor(*verify_node_ids, "verify_node_ids", at::kLong, {B, Q});
    E4_PRE(has(accepted_node_ids), "accepted_node_ids is required when verify_node_ids is given");
    check_tensor(*accepted_node_ids, "accepted_node_ids", at::kLong, {B * S});
  }
  check_tensor(accept_index_out, "accept_index_out", at::kInt, {B, S});
  check_tensor(accept_length_out, "accept_length_out", at::kInt, {B});
  check_tensor(accept_indptr, "accept_indptr", at::kInt, {B + 1});
  check_tensor(accepted_flat, "accepted_flat", at::kInt, {B * S});
  check_tensor(verified_id, "verified_id", at::kInt, {B * S});
  check_tensor(evict_mask, "evict_mask", at::kBool, {B * Q});
  check_tensor(free_slots, "free_slots", at::kLong, {B * Q});
  check_tensor(seq_lens_out, "seq_lens_out", at::kLong, {B});
  check_tensor(unfinished_count, "unfinished_count", at::kInt, {1});
  check_tensor(unfinished_index, "unfinished_index", at::kLong, {B});
  check_tensor(next_accept_length, "next_accept_length", at::kInt, {B});
  check_tensor(next_indptr, "next_indptr", at::kInt, {B + 1});
  check_tensor(next_verified_id, "next_verified_id", at::kInt, {B * S});
  check_tensor(next_hidden, "next_hidden", ht, {B * S, H});
  check_tensor(next_positions, "next_positions", at::kLong, {B * S});
  check_tensor(next_seq_lens, "next_seq_lens", at::kLong, {B});
  check_tensor(next_req_pool_indices, "next_req_pool_indices", at::kLong, {B});
  check_tensor(next_root_token, "next_root_token", at::kInt, {B});
  check_tensor(next_last_flat, "next_last_flat", at::kInt, {B});
  const c10::cuda::CUDAGuard guard(accept_index.device());
  auto stream = c10::cuda::getCurrentCUDAStream();
  const int64_t BS = B * S, BQ = B * Q;
  const size_t smem = (size_t)(33 + 3 * (B + 1) + 2 * B) * 8 + (size_t)BS * 8 + 4 + (size_t)BS * 20 +
                     (size_t)((BQ + 31) / 32) * 4;
  E4_CHECK(smem <= 200 * 1024, "update_verify_result: B*S / B*Q too large for shared memory");
  E4_CHECK(BS < (1ll << 21), "update_verify_result: B*S >= 2^21 not supported");
  const unsigned nblk = 1 + (unsigned)std::max<int64_t>(1, std::min<int64_t>(BS, 2048));  // bookkeeping + copies
  K7Out o;
  o.acc_out = ptr<int32_t>(accept_index_out); o.acc_len_out = ptr<int32_t>(accept_length_out);
  o.acc_indptr = ptr<int32_t>(accept_indptr); o.acc_flat = ptr<int32_t>(accepted_flat);
  o.verified = ptr<int32_t>(verified_id); o.evict = ptr<uint8_t>(evict_mask);
  o.free_slots = ptr<int64_t>(free_slots); o.seq_out = ptr<int64_t>(seq_lens_out);
  o.acc_node = with_nodes ? ptr<int64_t>(*accepted_node_ids) : nullptr;
  o.unf_count = ptr<int32_t>(unfinished_count); o.unf_index = ptr<int64_t>(unfinished_index);
  o.next_len = ptr<int32_t>(next_accept_length); o.next_indptr = ptr<int32_t>(next_indptr);
  o.next_vid = ptr<int32_t>(next_verified_id); o.next_pos = ptr<int64_t>(next_positions);
  o.next_seq = ptr<int64_t>(next_seq_lens); o.next_pool = ptr<int64_t>(next_req_pool_indices);
  o.next_root = ptr<int32_t>(next_root_token); o.next_last = ptr<int32_t>(next_last_flat);
  const int64_t row_bytes = H * hidden_states.element_size();
  dispatch_units(row_bytes, {hidden_states.data_ptr(), next_hidden.data_ptr()}, [&](auto unit, int64_t ub) {
    using VT = decltype(unit);
    auto k = k7_kernel<VT>;
    if (smem > 48 * 1024)
      E4_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    launch_ex(k, dim3(nblk), dim3(256), smem, 0, stream,
        ptr<int32_t>(accept_index), ptr<int32_t>(predicts), ptr<int32_t>(finish_pos), ptr<int64_t>(seq_lens),
        ptr<int64_t>(req_pool_indices), ptr<int32_t>(req_to_token), req_to_token.size(0), ptr<int64_t>(out_cache_loc),
        ptr<VT>(hidden_states), with_nodes ? ptr<int64_t>(*verify_node_ids) : nullptr, (int)B, (int)Q, (int)S, S_max,
        row_bytes / ub, ptr<VT>(next_hidden), o);
  });
  E4_CUDA_CHECK(cudaGetLastError());
}

#ifdef E4_TRACE
at::Tensor trace_dump() {
  auto out = at::empty({4096, 8}, at::kLong);
  E4_CUDA_CHECK(cudaMemcpyFromSymbol(out.data_ptr(), g_e4_trace, sizeof(long long) * 4096 * 8));
  static const std::vector<long long> zeros(4096 * 8, 0);
  E4_CUDA_CHECK(cudaMemcpyToSymbol(g_e4_trace, zeros.data(), sizeof(long long) * 4096 * 8));
  return out;
}
#endif

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "EAGLE4 CostDraftTree P0 kernels (K1..K7), CUDA baseline";
  m.def("draft_tree_layer_score_index_gen_op", &draft_tree_layer_score_index_gen_op);
  m.def("update_cumu_draft_state", &update_cumu_draft_state);
  m.def("calculate_work_deltas", &calculate_work_deltas);
  m.def("fused_tree_mask_operator", &fused_tree_mask_operator);
  m.def("convert_logits_to_probas", &convert_logits_to_probas);
  m.def("draft_tree_reject_sample", &draft_tree_reject_sample);
  m.def("update_verify_result", &update_verify_result);
  m.def("draft_step", &draft_step, "K1 -> K2 -> K3 of one draft layer in one launch (their arguments in ABI order)");
  m.def("_k5_max_cluster", &k5_max_cluster, "bench sweep hook: the register K5's largest cluster (0: automatic)");
  m.def("_k5_reg", &k5_reg, "bench sweep hook: the register K5's smallest cluster and 4-blocks-per-SM build (0: automatic)");
#ifdef E4_TRACE
  m.def("_trace_dump", &trace_dump, "development probe: the E4_T clock stamps since the last call (then zeroed)");
#endif
  m.def("_k6_form", &k6_form, "bench sweep hook: K6's form (0 automatic, 1 register with arg float4 loads a thread, 2 tiled with clusters of arg)");
  m.def("_k6_gx_count", &k6_gx_count, "test hook: K6's GX launch count of every request (its low 32 bits)");
  m.def("_k4_blocks", &k4_blocks, "bench sweep hook: K4's blocks per request (0: automatic)");
  m.def("_k5_narrow", &k5_narrow, "bench sweep hook: K5's narrow register build (0 automatic, < 0 never, > 0 wherever it applies)");
  m.def("_k5_held", &k5_held, "bench sweep hook: clusters of cs blocks the GPU holds at once (the narrow build or k5r14_kernel<8>)");
  m.def("_k5_prefetch", &k5_prefetch,
        "bench sweep hook: the register K5's L2 prefetch (0 automatic, < 0 never, > 0 this percent of the rows held at "
        "once ahead wherever its build applies)");
  m.def("_k5_one", &k5_one,
        "bench sweep hook: K5's reduction (0 automatic, 1 two rounds, 2 one round; the shared-memory kernel: "
        "one round unless 1)");
  m.def("_k5_tuning", &k5_tuning, "bench sweep hook: K5 kernel choice (0 auto, 1 shared-memory, 2 register) and target grid");
}

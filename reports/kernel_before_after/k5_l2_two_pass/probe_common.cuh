// Host helpers shared by the probes (folded out of them after the runs; the same calls): the error check, a launch in
// thread-block clusters, how many such clusters the GPU holds at once, and the graph timer.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <random>
#include <vector>

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_));                 \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

// a launch configuration with a cluster of cs blocks along x (its attribute lives in the object, so no copies)
struct ClusterCfg {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute at[1];
  ClusterCfg(dim3 grid, int nt, int cs, cudaStream_t st) {
    cfg.gridDim = grid;
    cfg.blockDim = dim3(nt);
    cfg.stream = st;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = cs;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
  }
};

template <typename F, typename... A>
static void launch_cluster(F fn, dim3 grid, int nt, int cs, cudaStream_t st, A... args) {
  ClusterCfg c(grid, nt, cs, st);
  CK(cudaLaunchKernelEx(&c.cfg, fn, args...));
}

// clusters of cs blocks of nt threads the GPU holds at once (-1: the query failed)
template <typename F>
static int clusters_held(F fn, int cs, int nt) {
  ClusterCfg c(dim3(cs, 1), nt, cs, 0);
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, fn, &c.cfg) != cudaSuccess) n = -1;
  (void)cudaGetLastError();
  return n;
}

// median time per launch (us): a graph of per_graph calls f(set), set = i & 1 when rot (two input/output sets, so
// that no launch finds the previous one's lines in L2) else 0; two warm-up replays, then reps timed replays
template <typename F>
static float time_graph(cudaStream_t st, F f, bool rot, int per_graph, int reps) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < per_graph; ++i) f(rot ? i & 1 : 0);
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, st));
  CK(cudaGraphLaunch(ge, st));
  std::vector<float> ts;
  for (int k = 0; k < reps; ++k) {
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ts.push_back(ms * 1000.f / per_graph);
  }
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

// K5's device buffers of one point: two sets of (logits, probas, argmax) for the rotating timings, the requests'
// temperatures and greedy flags; upload() fills both logits sets and the temperatures, take() reads set 0's outputs
struct K5Bufs {
  size_t N;
  int R, B;
  float *lg[2], *pr[2], *tp;
  int64_t* am[2];
  uint8_t* gr;
  K5Bufs(int R_, size_t V, int B_) : N((size_t)R_ * V), R(R_), B(B_) {
    for (int s = 0; s < 2; ++s) {
      CK(cudaMalloc(&lg[s], N * 4));
      CK(cudaMalloc(&pr[s], N * 4));
      CK(cudaMalloc(&am[s], R * 8));
    }
    CK(cudaMalloc(&tp, B * 4));
    CK(cudaMalloc(&gr, B));
  }
  void upload(const std::vector<float>& h, const std::vector<float>& t) {
    for (int s = 0; s < 2; ++s) CK(cudaMemcpy(lg[s], h.data(), N * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(tp, t.data(), B * 4, cudaMemcpyHostToDevice));
  }
  // set 0's outputs after the launches queued on st (probas into h, argmax into a), then set 0 poisoned again
  void take(std::vector<float>& h, std::vector<int64_t>& a, cudaStream_t st) {
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    CK(cudaMemcpy(h.data(), pr[0], N * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(a.data(), am[0], R * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemsetAsync(pr[0], 0xff, N * 4, st));
    CK(cudaMemsetAsync(am[0], 0xff, R * 8, st));
  }
  ~K5Bufs() {
    for (int s = 0; s < 2; ++s) {
      CK(cudaFree(lg[s]));
      CK(cudaFree(pr[s]));
      CK(cudaFree(am[s]));
    }
    CK(cudaFree(tp));
    CK(cudaFree(gr));
  }
};

// n logits drawn from N(0, 4^2) by mt19937(seed)
static std::vector<float> normal_logits(size_t n, unsigned seed) {
  std::vector<float> h(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 4.f);
  for (auto& x : h) x = nd(rng);
  return h;
}

// the probes' request temperatures: 0.7, 0.7, 0.3, 1.0, repeated
static std::vector<float> request_temps(int B) {
  std::vector<float> t(B);
  for (int b = 0; b < B; ++b) t[b] = b % 4 == 3 ? 1.0f : b % 4 == 2 ? 0.3f : 0.7f;
  return t;
}

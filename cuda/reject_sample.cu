// K6 draft_tree_reject_sample (KERNELS.md §6).
#include "eagle4_cuda.cuh"

// One cluster of CS blocks per request. Every block replays the
// (cheap, deterministic) tree walk from shared-memory copies of the tree; the final row's integer
// inverse CDF is split over the cluster: u64 tile sums (128 entries a tile), a block scan, and an
// exchange of block totals through distributed shared memory.

static constexpr int K6_TILE = 128;

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
// polling them spread over L2's slices (packed into a few lines, the polls queue there). The tag is request b's
// launch count (the low 32 bits of k6_ep[b], + 1, 0 skipped), written back by block 0 once it has read every
// block's words, so every block has read the old count by then; the next launch reads it after its
// griddepcontrol.wait. Beside the count (the high 32 bits) block 0 records the launch's blocks a request, and it
// clears the slots of blocks the previous launch had and this one has not: so after every launch each slot of the
// request holds this launch's tag or zeros, and the next launch, whose tag differs, can match no word it did not
// write, across the count's wrap too (clearing only at the wrap left a slot a later launch reads, but the ones in
// between did not write, with the tag it had 2^32 launches before). Words and counts are one set per device: two K6
// launches must not run concurrently on two streams (as with the draft step's arrival counter).
constexpr int K6G_MAX_B = 64, K6G_MAX_CS = 64, K6G_LINE = 16;  // K6G_LINE: 64-bit words a block's slot spans
__device__ unsigned long long k6_ep[K6G_MAX_B];
__device__ __align__(128) unsigned long long k6_slot[K6G_MAX_B * K6G_MAX_CS * K6G_LINE];
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
// ld_relaxed_gpu(&k6_ep[b]) (issued early: its latency overlaps phase A)
__device__ __forceinline__ unsigned long long k6g_tag(unsigned long long ep) {
  const unsigned long long t = (ep + 1) & 0xffffffffull;
  return t ? t : 1ull;
}
// Block totals -> (R_q, this block's base), as k6_exchange_totals. xt: K6G_MAX_CS words of shared memory. ep:
// k6_ep[b] as thread 0 read it (block 0's thread 0 uses it).
// A wait that outlasts about a second (a block that never runs: impossible under a cooperative launch) traps.
__device__ __forceinline__ void k6g_exchange_totals(unsigned long long btotal, int rank, int CS, int64_t b,
                                                    unsigned long long tag, unsigned long long ep,
                                                    unsigned long long* xt, unsigned long long& Rq,
                                                    unsigned long long& base) {
  unsigned long long* slot = k6_slot + b * (K6G_MAX_CS * K6G_LINE);
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
    st_relaxed_gpu(&k6_ep[b], ((unsigned long long)CS << 32) | tag);
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
// child instead of an IEEE division (the divisions were on the walk's critical path).
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
// instead of chasing the chain again.
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
  // phase A, in parallel: a level's outcome depends only on its row (coin, the children chain, pacc
  // from 0), so one thread per row runs that row's sibling scan (same order, same f32 sums). The
  // thread first chases the chain of its first PK children once, keeping each child, whether its token
  // is in range (and, greedy, whether it is the prediction) in registers and issuing the tested
  // probabilities' loads together, so the scan of those children reads no shared memory; children
  // past PK read theirs as the scan reaches them.
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
  unsigned long long Rq = btotal, base = 0ull;
  if (CS > 1) k6_exchange_totals(btotal, rank, CS, xtot, Rq, base);
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
  const int64_t b = blockIdx.y;
  const float fcoin = fcoins[b];  // loaded now: the sample needs it last, after the exchange
  const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5;
  __shared__ unsigned long long s_tag;  // GX: this launch's tag, stored by thread 0 before the block scan's barrier
  // GX: the launch count, loaded now and used only after phase A (a thread waits for a load only at its first use)
  const unsigned long long ep = (GX && CS > 1 && tid == 0) ? ld_relaxed_gpu(&k6_ep[b]) : 0ull;
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
  // The register form, in clusters (k6_exchange_totals): the smallest NV whose clusters of
  // <= 16 blocks hold the row, all B clusters in one wave of resident blocks. Without clusters (GX,
  // k6g_exchange_totals; 16-byte aligned rows, V % 4 == 0): the smallest NV whose B x (blocks a row <= 64) blocks
  // are all resident at once (a cooperative launch), taken where that NV is smaller than the cluster form's: a
  // block's share of the final row is then smaller than a cluster allows; with an equal NV the clusters are faster
  // (docs/decisions.md). Otherwise the tiled kernel below.
  const size_t smem_r = k6_tree_bytes(Q);
  auto blocks_of = [&](int nv) { return (V + 2048 * nv - 1) / (2048 * nv); };
  auto fits_r = [&](auto kern, int nv) -> bool {
    const int64_t cs = blocks_of(nv);
    if (cs > 16 || smem_r > 200 * 1024) return false;
    if (cs > 8 && usable_cluster(kern, (int)cs, block, smem_r) < cs) return false;
    // all B clusters in one wave: a cluster's blocks share a GPC, so fewer clusters fit than blocks / cs
    const int64_t fit = cs > 1 ? resident(kern, (int)cs, (int)block.x, smem_r) : resident_blocks(kern, (int)block.x, smem_r);
    return B <= fit;
  };
  auto fits_g = [&](auto kern, int nv) -> bool {
    const int64_t cs = blocks_of(nv);
    if (!vec) return false;
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
  while (cs > 1 && resident(k, cs, (int)block.x, smem_of(chunk_of(cs))) < B) --cs;
  if (cs > 8) cs = usable_cluster(k, cs, block, smem_of(chunk_of(cs)));
  const int64_t chunk = chunk_of(cs);
  cs = (int)((V + chunk - 1) / chunk);
  const size_t smem = smem_of(chunk);
  E4_CHECK(smem <= 227 * 1024, "draft_tree_reject_sample: Q/V too large for shared memory");
  run(k, dim3((unsigned)cs, (unsigned)B), smem, cs, false, chunk);
}


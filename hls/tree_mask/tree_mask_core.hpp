// K4 fused_tree_mask_operator (KERNELS.md §4.4): the per-request core (KV index fill, ancestor
// walk, positions, mask rows packed on the fly), shared by tree_mask_top (operands on m_axi ports)
// and the fused draft / verify pipelines (tree parents / KV slots on chip or on ports). Every
// accessor is anything indexable like a pointer (a PORT(T), a raw pointer, an on-chip array),
// offset by the caller to the request's row (tree_cache_locs, tree_parent: T entries; positions:
// Q) and to the request's first output element (kv_indices, packed_mask, mask_bool).
#ifndef EAGLE4_TREE_MASK_CORE_HPP
#define EAGLE4_TREE_MASK_CORE_HPP

#include <cstdint>

#include "tree_mask.hpp"

namespace eagle4 {
namespace k4 {

// One request (prefix length L, req_to_token row `pool`, T tree tokens, queries t_q = T-Q+q).
// Writes kv_indices[0, L+T), positions[0, Q), packed_mask[0, ceil(Q*(L+T)/8)) and, when
// write_bool_mask, mask_bool[0, Q*(L+T)). Returns the bytes written to packed_mask.
// Preconditions (checked by the caller): 1 <= T <= MAX_TREE_TOKENS, 1 <= Q <= T.
template <typename PR2T, typename PLoc, typename PPar, typename PKV, typename PPos, typename PPack, typename PBool>
int64_t tree_mask_request(int64_t L, int64_t pool, PR2T req_to_token, int64_t S_max, PLoc tree_cache_locs,
                          PPar tree_parent, int T, int Q, PKV kv_indices, PPos positions, PPack packed_mask,
                          bool write_bool_mask, PBool mask_bool) {
#pragma HLS INLINE
  constexpr int VIS_WORDS = MAX_TREE_TOKENS / 64 + 2;  // +1 spare word for the 8-bit window
  int64_t par[MAX_TREE_TOKENS];  // tree_parent row of the request
  uint64_t vis[VIS_WORDS];       // bit t: tree token t is on the current query's chain
  const int64_t len = L + T;

kv_prefix:
  for (int64_t j = 0; j < L; ++j) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 4096
    kv_indices[j] = req_to_token[pool * S_max + j];
  }
kv_tree:
  for (int t = 0; t < T; ++t) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 1024
    kv_indices[L + t] = static_cast<int32_t>(tree_cache_locs[t]);  // < 2^31 (precondition)
    par[t] = tree_parent[t];
  }

  uint32_t acc = 0;  // packing register: bit i of the next byte = flat mask element 8k+i
  int nacc = 0;      // bits pending in acc (< 8 between chunks)
  int64_t out_byte = 0;
  int64_t flat = 0;
  const int vis_words = (T + 63) / 64 + 1;
per_query:
  for (int q = 0; q < Q; ++q) {
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 128
    const int tq = T - Q + q;
  clear_vis:
    for (int w = 0; w < vis_words; ++w) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 2 max = 18
      vis[w] = 0;
    }
    vis[tq >> 6] |= uint64_t(1) << (tq & 63);  // self
    int depth = 0;
    int cur = tq;
  ancestor_walk:  // at most T steps: the token strictly decreases
    for (int step = 0; step < T; ++step) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 1024
      const int64_t p = par[cur];
      if (p < 0 || p >= cur) break;  // -1 ends the walk; p >= t or p < -1 is invalid (D22)
      cur = static_cast<int>(p);
      vis[cur >> 6] |= uint64_t(1) << (cur & 63);
      ++depth;
    }
    positions[q] = L + depth;
  mask_row:  // 8 columns per iteration: one packed byte per cycle
    for (int64_t c = 0; c < len; c += 8) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 512
      const int n = len - c < 8 ? static_cast<int>(len - c) : 8;  // columns in this chunk
      const int np = L - c >= 8 ? 8 : (L - c <= 0 ? 0 : static_cast<int>(L - c));  // prefix columns
      uint32_t chunk = (1u << np) - 1u;  // prefix columns are visible
      if (np < 8) {  // tree columns t0, t0+1, ... from the visibility bitset
        const int t0 = static_cast<int>(c + np - L);
        const int w = t0 >> 6, o = t0 & 63;
        uint64_t v = vis[w] >> o;
        if (o > 56) v |= vis[w + 1] << (64 - o);
        chunk |= static_cast<uint32_t>((v & 0xFFu) << np);
      }
      chunk &= (1u << n) - 1u;  // never past the row end
      if (write_bool_mask) {  // debug output: 8 bool writes per chunk
      bool_bits:
        for (int i = 0; i < 8; ++i) {
#pragma HLS UNROLL
          if (i < n) mask_bool[flat + i] = static_cast<uint8_t>((chunk >> i) & 1u);
        }
      }
      flat += n;
      acc |= chunk << nacc;
      nacc += n;
      if (nacc >= 8) {  // at most one byte per chunk (nacc < 8 before, n <= 8)
        packed_mask[out_byte++] = static_cast<uint8_t>(acc & 0xFFu);
        acc >>= 8;
        nacc -= 8;
      }
    }
  }
  if (nacc) packed_mask[out_byte++] = static_cast<uint8_t>(acc);  // last byte of the segment, zero-padded
  return out_byte;
}

}  // namespace k4
}  // namespace eagle4

#endif  // EAGLE4_TREE_MASK_CORE_HPP

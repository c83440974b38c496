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

// 32-bit columns: a row has L + T <= MAX_SEQ_LEN + MAX_TREE_TOKENS columns.
static_assert(int64_t(MAX_SEQ_LEN) + MAX_TREE_TOKENS + 8 <= INT32_MAX, "mask columns fit 32 bits");

// A write-only accessor that drops what is written: the mask rows without the bool debug output run
// the same unconditional loop as with it (no run-time test around a port write in a pipelined loop).
struct DiscardBytes {
  struct Sink {
    Sink& operator=(uint8_t) { return *this; }
  };
  Sink operator[](int) const { return Sink(); }
};

// Columns [c, c+8) of a mask row (prefix length L) as 8 bits: prefix columns set, tree columns from the
// visibility bitset (bit t: tree token t is on the query's chain). Bits past the row end are not masked.
inline uint32_t mask_chunk(int c, int L, const uint64_t* vis) {
#pragma HLS INLINE
  const int np = L - c >= 8 ? 8 : (L - c <= 0 ? 0 : L - c);  // prefix columns
  uint32_t chunk = (1u << np) - 1u;                           // prefix columns are visible
  if (np < 8) {  // tree columns t0, t0+1, ... from the visibility bitset
    const int t0 = c + np - L;
    const int w = t0 >> 6, o = t0 & 63;
    uint64_t v = vis[w] >> o;
    if (o > 56) v |= vis[w + 1] << (64 - o);
    chunk |= static_cast<uint32_t>((v & 0xFFu) << np);
  }
  return chunk;
}

// One mask row of len = L + T columns through the packing register (acc, nacc: bits pending, < 8 between
// rows). A whole 8-column chunk yields exactly one packed byte (nacc + 8 >= 8) and 8 bool bytes, so the
// chunk loop writes both unconditionally: one byte per cycle to packed_mask, 8 consecutive bytes per
// cycle to mask_bool (built in a register, written as one 64-bit word when the port widens). The last,
// partial chunk (len mod 8 columns) follows the loop.
template <typename PPack, typename PBool>
inline void mask_row(int L, int len, const uint64_t* vis, uint32_t& acc, int& nacc, int& out_byte, int& flat,
                     PPack packed_mask, PBool mask_bool) {
#pragma HLS INLINE
  const int n_whole = len >> 3;
mask_row_chunks:  // 8 columns per iteration: one packed byte per cycle
  for (int k = 0; k < n_whole; ++k) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 512
    const uint32_t chunk = mask_chunk(k << 3, L, vis) & 0xFFu;
  bool_bits:
    for (int i = 0; i < 8; ++i) {
#pragma HLS UNROLL
      mask_bool[flat + i] = static_cast<uint8_t>((chunk >> i) & 1u);
    }
    flat += 8;
    acc |= chunk << nacc;
    packed_mask[out_byte++] = static_cast<uint8_t>(acc & 0xFFu);
    acc >>= 8;
  }
  const int n = len & 7;  // columns of the last, partial chunk
  if (n) {
    const uint32_t chunk = mask_chunk(n_whole << 3, L, vis) & ((1u << n) - 1u);  // never past the row end
  bool_tail:
    for (int i = 0; i < n; ++i) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 7
      mask_bool[flat + i] = static_cast<uint8_t>((chunk >> i) & 1u);
    }
    flat += n;
    acc |= chunk << nacc;
    nacc += n;
    if (nacc >= 8) {  // at most one byte (nacc < 8 before, n < 8)
      packed_mask[out_byte++] = static_cast<uint8_t>(acc & 0xFFu);
      acc >>= 8;
      nacc -= 8;
    }
  }
}

// The Q queries of a request (t_q = T-Q+q): ancestor walk, position, mask row. Returns the bytes written
// to packed_mask.
template <typename PPos, typename PPack, typename PBool>
int mask_queries(int L, const int64_t* par, int T, int Q, PPos positions, PPack packed_mask, PBool mask_bool) {
#pragma HLS INLINE
  constexpr int VIS_WORDS = MAX_TREE_TOKENS / 64 + 2;  // +1 spare word for the 8-bit window
  uint64_t vis[VIS_WORDS];                             // bit t: tree token t is on the current query's chain
  const int len = L + T;
  uint32_t acc = 0;  // packing register: bit i of the next byte = flat mask element 8k+i
  int nacc = 0;      // bits pending in acc (< 8 between rows)
  int out_byte = 0;
  int flat = 0;
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
    positions[q] = static_cast<int64_t>(L) + depth;
    mask_row(L, len, vis, acc, nacc, out_byte, flat, packed_mask, mask_bool);
  }
  if (nacc) packed_mask[out_byte++] = static_cast<uint8_t>(acc);  // last byte of the segment, zero-padded
  return out_byte;
}

// One request (prefix length L, req_to_token row `pool`, T tree tokens, queries t_q = T-Q+q).
// Writes kv_indices[0, L+T), positions[0, Q), packed_mask[0, ceil(Q*(L+T)/8)) and, when
// write_bool_mask, mask_bool[0, Q*(L+T)). Returns the bytes written to packed_mask.
// Preconditions (checked by the caller): 1 <= T <= MAX_TREE_TOKENS, 1 <= Q <= T, 0 <= L <= MAX_SEQ_LEN,
// Q*(L+T) < 2^31 (32-bit column and bit indices).
template <typename PR2T, typename PLoc, typename PPar, typename PKV, typename PPos, typename PPack, typename PBool>
int64_t tree_mask_request(int64_t L, int64_t pool, PR2T req_to_token, int64_t S_max, PLoc tree_cache_locs,
                          PPar tree_parent, int T, int Q, PKV kv_indices, PPos positions, PPack packed_mask,
                          bool write_bool_mask, PBool mask_bool) {
#pragma HLS INLINE
  int64_t par[MAX_TREE_TOKENS];  // tree_parent row of the request
  const int L32 = static_cast<int>(L);
  const int64_t r2t_row = pool * S_max;  // 64-bit: P * S_max is not bounded by 2^31

kv_prefix:
  for (int j = 0; j < L32; ++j) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 0 max = 4096
    kv_indices[j] = req_to_token[r2t_row + j];
  }
kv_tree:
  for (int t = 0; t < T; ++t) {
#pragma HLS PIPELINE II = 1
#pragma HLS LOOP_TRIPCOUNT min = 1 max = 1024
    kv_indices[L32 + t] = static_cast<int32_t>(tree_cache_locs[t]);  // < 2^31 (precondition)
    par[t] = tree_parent[t];
  }
  // the bool debug output selects the instance, not a test inside its loops
  if (write_bool_mask) return mask_queries(L32, par, T, Q, positions, packed_mask, mask_bool);
  return mask_queries(L32, par, T, Q, positions, packed_mask, DiscardBytes());
}

}  // namespace k4
}  // namespace eagle4

#endif  // EAGLE4_TREE_MASK_CORE_HPP

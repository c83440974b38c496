// K7 update_verify_result (KERNELS.md §7.3): the whole-batch core, shared by update_verify_top
// (every operand on an m_axi port) and the fused verify pipeline (accept rows, accept lengths,
// predicts, finish positions and the KV slots already on chip). Input accessors are anything
// indexable like a pointer (a PORT(T), a raw pointer, an on-chip array); outputs are m_axi ports.
// `locs` (the B*Q KV slots, out_cache_loc) is read at random and, for the free list, under a select:
// it must be on chip (update_verify_top loads it in one burst first).
// Hidden rows are bit-copied as `hidden_words` elements of HW (update_verify_top: 16-bit words,
// hidden_words = H * E_h / 2; the fused design: its hidden element type, hidden_words = H).
#ifndef EAGLE4_UPDATE_VERIFY_CORE_HPP
#define EAGLE4_UPDATE_VERIFY_CORE_HPP

#include <cstdint>

#include "update_verify.hpp"

namespace eagle4 {
namespace k7 {

// 32-bit position indices (B*Q, B*S) and hidden-row offsets (position * words); ev_list holds 16-bit positions.
static_assert(MAX_POSITIONS <= 65536, "evicted positions are stored as uint16");
static_assert(int64_t(MAX_POSITIONS) * MAX_HIDDEN_WORDS <= INT32_MAX, "hidden-row offsets fit 32 bits");
static_assert(int64_t(MAX_BATCH) * MAX_ACCEPT <= INT32_MAX, "accept-row offsets fit 32 bits");

template <typename HW, typename PAI, typename PAL, typename PPred, typename PFin, typename PSeq, typename PPool,
          typename PR2T, typename PLoc, typename PHid, typename PNode>
void update_verify_core(PAI accept_index, PAL accept_length, PPred predicts, PFin finish_pos, PSeq seq_lens,
                        PPool req_pool_indices, PR2T req_to_token, PLoc locs, PHid hidden_states,
                        PNode verify_node_ids, PORT(int32_t) accept_index_out, PORT(int32_t) accept_length_out,
                        PORT(int32_t) accept_indptr, PORT(int32_t) accepted_flat, PORT(int32_t) verified_id,
                        PORT(uint8_t) evict_mask, PORT(int64_t) free_slots, PORT(int64_t) seq_lens_out,
                        PORT(int64_t) accepted_node_ids, PORT(int32_t) unfinished_count,
                        PORT(int64_t) unfinished_index, PORT(int32_t) next_accept_length, PORT(int32_t) next_indptr,
                        PORT(int32_t) next_verified_id, PORT(HW) next_hidden, PORT(int64_t) next_positions,
                        PORT(int64_t) next_seq_lens, PORT(int64_t) next_req_pool_indices,
                        PORT(int32_t) next_root_token, PORT(int32_t) next_last_flat, int B, int Q, int S,
                        int hidden_words, int64_t S_max, bool has_node_ids) {
#pragma HLS INLINE
  constexpr int BEAT = HIDDEN_BEAT * 2 / int(sizeof(HW));  // elements per 512-bit beat
  int32_t rows[MAX_BATCH][MAX_ACCEPT];  // truncated accept rows (row_b)
  int32_t a_len[MAX_BATCH];             // a_b
  bool unfinished[MAX_BATCH];
  int64_t seq_l[MAX_BATCH];
  int64_t pool[MAX_BATCH];
  static bool keep[MAX_POSITIONS];         // position appears in accepted_flat
  static uint16_t ev_list[MAX_POSITIONS];  // the evicted positions, ascending (the free list's order)
#pragma HLS ARRAY_PARTITION variable=rows dim=2 complete

  const int n_pos = B * Q;   // <= MAX_POSITIONS (static_assert below): 32-bit position indices
  const int cap_bs = B * S;

clear_keep:
  for (int p = 0; p < n_pos; ++p) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=16384
    keep[p] = false;
  }

  // ---------------- load + truncate
load_requests:
  for (int b = 0; b < B; ++b) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=128
    const int32_t al = accept_length[b];
    const int32_t fp = finish_pos[b];
    const int32_t a = fp >= 0 ? fp : al;
    a_len[b] = a;
    unfinished[b] = fp == -1;
    seq_l[b] = seq_lens[b];
    pool[b] = req_pool_indices[b];
  load_row:
    for (int j = 0; j < S; ++j) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=64
      const int32_t v = accept_index[b * S + j];
      const int32_t t = (fp >= 0 && j > fp) ? int32_t(-1) : v;
      rows[b][j] = t;
      accept_index_out[b * S + j] = t;
    }
  }

  // ---------------- compact, gather, commit
  int32_t k = 0;   // accepted entries so far (N_acc)
  int32_t ku = 0;  // accepted entries of unfinished requests so far (N_unf)
  int32_t u = 0;   // unfinished requests so far (U)
  accept_indptr[0] = 0;
  next_indptr[0] = 0;
compact_requests:
  for (int b = 0; b < B; ++b) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=128
    const int32_t a = a_len[b];
    const bool unf = unfinished[b];
    const int64_t L = seq_l[b];
    const int64_t rtt_row = pool[b] * S_max;
    int32_t last_tok = -1;
    int32_t last_pos = -1;
    accept_length_out[b] = a;
  compact_entries:
    for (int j = 0; j <= a; ++j) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=64
      const int32_t p = rows[b][j];
      const int32_t tok = predicts[p];
      keep[p] = true;
      accepted_flat[k] = p;
      verified_id[k] = tok;
      if (has_node_ids) accepted_node_ids[k] = int64_t(verify_node_ids[p]);
      const int64_t loc = locs[p];
      req_to_token[rtt_row + L + j] = int32_t(loc);  // committed for every request
      if (unf) {
        next_verified_id[ku] = tok;
        next_positions[ku] = L + j;
        const int src = p * hidden_words;  // < MAX_POSITIONS * MAX_HIDDEN_WORDS (static_assert below)
        const int dst = ku * hidden_words;
        // whole 512-bit beats (BEAT elements, every lane unconditional: the m_axi ports widen and burst),
        // then the hidden_words mod BEAT elements of the last, partial beat
        const int n_beats = hidden_words / BEAT;
      copy_hidden:
        for (int wb = 0; wb < n_beats; ++wb) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=256
        copy_beat:
          for (int l = 0; l < BEAT; ++l) {
#pragma HLS UNROLL
            const int w = wb * BEAT + l;
            next_hidden[dst + w] = HW(hidden_states[src + w]);
          }
        }
      copy_hidden_tail:
        for (int w = n_beats * BEAT; w < hidden_words; ++w) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=31
          next_hidden[dst + w] = HW(hidden_states[src + w]);
        }
        ++ku;
      }
      last_tok = tok;
      last_pos = p;
      ++k;
    }
    accept_indptr[b + 1] = k;
    const int64_t seq_out = L + a + 1;
    seq_lens_out[b] = seq_out;
    if (unf) {
      unfinished_index[u] = int64_t(b);
      next_accept_length[u] = a;
      next_indptr[u + 1] = ku;
      next_seq_lens[u] = seq_out;
      next_req_pool_indices[u] = pool[b];
      next_root_token[u] = last_tok;  // predicts[row_b[a_b]]
      next_last_flat[u] = last_pos;   // row_b[a_b]
      ++u;
    }
  }
  unfinished_count[0] = u;

  // ---------------- padding (-1 up to the caps)
pad_bs:
  for (int i = k; i < cap_bs; ++i) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=8192
    accepted_flat[i] = -1;
    verified_id[i] = -1;
  }
  if (has_node_ids) {  // the optional port in its own loop: no conditional access inside a pipelined loop
  pad_node_ids:
    for (int i = k; i < cap_bs; ++i) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=8192
      accepted_node_ids[i] = -1;
    }
  }
pad_bs_unf:
  for (int i = ku; i < cap_bs; ++i) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=8192
    next_verified_id[i] = -1;
    next_positions[i] = -1;
  }
pad_b:
  for (int i = u; i < B; ++i) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=128
    unfinished_index[i] = -1;
    next_accept_length[i] = -1;
    next_indptr[i + 1] = -1;
    next_seq_lens[i] = -1;
    next_req_pool_indices[i] = -1;
    next_root_token[i] = -1;
    next_last_flat[i] = -1;
  }

  // ---------------- evict mask and free list: the mask and the evicted positions (on chip) in one pass,
  // then the free list and its -1 padding in one unconditional sequential write of n_pos slots
  int nfree = 0;
evict_loop:
  for (int p = 0; p < n_pos; ++p) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=16384
    const bool ev = !keep[p];
    evict_mask[p] = ev ? uint8_t(1) : uint8_t(0);
    ev_list[nfree] = uint16_t(p);  // nfree <= p: overwritten by the next evicted position unless ev
    nfree += ev ? 1 : 0;
  }
write_free:
  for (int i = 0; i < n_pos; ++i) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=16384
    free_slots[i] = i < nfree ? int64_t(locs[ev_list[i]]) : int64_t(-1);
  }
}

}  // namespace k7
}  // namespace eagle4

#endif  // EAGLE4_UPDATE_VERIFY_CORE_HPP

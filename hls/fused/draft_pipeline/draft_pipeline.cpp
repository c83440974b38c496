// Fused draft pipeline: one persistent design called once per draft layer (the drafter's
// decoder layer runs outside it, between calls), plus init and finalize phases.
// See draft_pipeline.hpp and reports/fusion_design_v1.md.
#include "draft_pipeline.hpp"

#include <climits>
#include <cstring>
#include <vector>  // the C ABI entry's host-side split of the LM head (not in the synthesized call tree)

#include "eagle4_capi.h"
// the per-kernel cores the stages compose (one kernel = one HLS folder)
#include "../../draft_tree_score/draft_tree_score_core.hpp"
#include "../../tree_mask/tree_mask_core.hpp"
#include "../../update_draft_state/update_draft_state_core.hpp"
#include "../../work_deltas/work_deltas_core.hpp"

namespace e4f {
namespace draft {

// ---------------- on-chip state kept for the whole draft step (URAM / BRAM) ----------------
// Token ids, node ids, depths and parents as 32-bit words: node ids < E4F_MAX_N, depths < E4F_MAX_D, and
// token ids < 2^31 (the C ABI refuses larger ones in root_token, hot_token_id and cand_t): half the storage
// of int64 (the per-kernel cores take any accessor; the write-back widens to the int64 outputs).
struct State {
  int32_t ctok[E4F_MAX_B][E4F_MAX_N];
  float csc[E4F_MAX_B][E4F_MAX_N];
  int32_t cdel[E4F_MAX_B][E4F_MAX_N];
  int32_t prev[E4F_MAX_B][E4F_MAX_N];
  int32_t next[E4F_MAX_B][E4F_MAX_N];
  int32_t side[E4F_MAX_B][E4F_MAX_N];
  float sort[E4F_MAX_B][E4F_MAX_M];
  float work[E4F_MAX_B][E4F_MAX_M + E4F_MAX_K];
  uint8_t mask_in[E4F_MAX_B][E4F_MAX_K][E4F_MAX_I];
  int32_t front_idx[E4F_MAX_B][E4F_MAX_K];  // global node id of each frontier slot
  int32_t tree_parent[E4F_MAX_B][E4F_MAX_I];  // K4 draft-use tree (local parents)
  int64_t cc, Ic, W, off_prev, layer;
};
static State st;  // in a layer's DATAFLOW region, stage_k2's alone
// What the hand-off of one layer leaves for the next (K1's parent scores, K4's parent slots): a region
// argument, read by stage_k1 before stage_handoff writes it (request b's entries, b ascending).
struct Frontier {
  float scores[E4F_MAX_B][E4F_MAX_K];
  int32_t parent[E4F_MAX_B][E4F_MAX_K];  // K1 parent slots of the previous layer
};
static Frontier front;
// LM-head operands on chip. The frontier hidden rows as raw words, converted to f32 where they are used (no
// f32 copy on chip). The synthesized design takes bf16 hidden states: 16-bit words; the C-sim also runs f32
// hidden states.
#ifdef EAGLE4_SYNTHESIS
typedef uint16_t HidWord;
#else
typedef uint32_t HidWord;
#endif
// words of E4F_LMH_LANES elements along h: what one MAC-array cycle reads of a weight row or a hidden row
#define E4F_LMH_WORDS ((E4F_MAX_H + E4F_LMH_LANES - 1) / E4F_LMH_LANES)
struct HidBeat {
  HidWord h[E4F_LMH_LANES];
};
// partitioned by rows (E4F_LMH_RT banks) and aggregated into 64-element words where stage_lm_head reads them
static HidBeat hid_bits[E4F_MAX_ROWS][E4F_LMH_WORDS];
inline float hid_word_to_f(uint32_t w, int code) {
  return code == 0 ? f32_from_bits(w) : hid_to_f(static_cast<uint16_t>(w), code);
}
inline float hid_word_to_f(uint16_t w, int code) { return hid_to_f(w, code); }
inline HidWord hid_at(int r, int h) { return hid_bits[r][h / E4F_LMH_LANES].h[h % E4F_LMH_LANES]; }
inline void hid_put(int r, int h, HidWord w) { hid_bits[r][h / E4F_LMH_LANES].h[h % E4F_LMH_LANES] = w; }
// The LM head's weight tiles: E4F_LMH_IL vocabulary rows each, two of them (ping-pong). The synthesized
// design's int4 weights are held as int8 words (-8..7; converted where they are used); the C-sim also runs bf16 / f32 weights,
// converted once at load. Either way the product is the same f32 value as lm_dot's (e4f_stages.hpp).
#ifdef EAGLE4_SYNTHESIS
typedef int8_t WTileWord;
template <typename WT>
inline WTileWord tile_word(WT w) { return static_cast<WTileWord>(w); }
inline WTileWord tile_from_f(float w) { return static_cast<WTileWord>(w); }  // an int4 value, exact
#else
typedef float WTileWord;
template <typename WT>
inline WTileWord tile_word(WT w) { return w_to_f(w); }
inline WTileWord tile_from_f(float w) { return w; }
#endif
// one 512-bit beat of a weight row per word: the load writes a word per cycle, the MAC array reads one
struct WBeat {
  WTileWord b[E4F_LMH_LANES];
};
typedef WBeat WTile[E4F_LMH_IL][E4F_LMH_WORDS];
static WTile wping, wpong;
static float sping[E4F_LMH_IL], spong[E4F_LMH_IL];
// The on-chip logits tile (rows [0, LM_ROWS) of the layer), two f32 logits (raw bits) per 64-bit word:
// a URAM word is 72 bits, so one f32 per word would leave 40 of them unused (eagle4.budget.onchip).
// Partitioned along v into E4F_LOGITS2_BANKS banks: a row pass reads E4F_LANES_ROW_LOAD logits per cycle.
#define E4F_LOGITS2_BANKS 8
static_assert(E4F_LOGITS2_BANKS * 2 == E4F_LANES_ROW_LOAD, "a row pass reads one word of every bank per cycle");
static uint64_t logits2[E4F_LM_ROWS][(E4F_MAX_VH + 1) / 2];
// one whole word: the logits of v = 2 w (lo) and 2 w + 1 (hi); a tail's unused half holds 0 (never read)
inline void tile_set2(int r, int w, float lo, float hi) {
  uint32_t a, b;
  std::memcpy(&a, &lo, 4);
  std::memcpy(&b, &hi, 4);
  logits2[r][w] = uint64_t(a) | (uint64_t(b) << 32);
}
inline float tile_get(int r, int v) {
  return f32_from_bits(static_cast<uint32_t>(logits2[r][v >> 1] >> ((v & 1) * 32)));
}

struct CandRec {  // one request's W*K sampled candidates (LM head top-K)
  float p[E4F_MAX_C];
  int64_t t[E4F_MAX_C];
};
struct K1Out {  // K1 results of one request (on chip), consumed by K2 and the hand-off
  float curr[E4F_MAX_C];
  float sort_s[E4F_MAX_C];
  int64_t sort_i[E4F_MAX_C];
  int64_t tok[E4F_MAX_C];  // remapped tokens (original order)
  int64_t cache[E4F_MAX_K];
  int64_t parent[E4F_MAX_K];
};
struct FrontRec {  // K2 frontier outputs + K1 parents for the hand-off stage
  float scores[E4F_MAX_K];
  int64_t tokens[E4F_MAX_K];
  int64_t parent[E4F_MAX_K];
};
struct WorkRec {
  float w[E4F_MAX_M + E4F_MAX_K];
  int64_t n0;
};

// ---- stage 0: LM head, ONE weight pass per layer for all B*W frontier rows -------------------
// Rows [0, LM_ROWS) keep their logits in the on-chip tile; rows beyond it (large batches) spill
// their logits to an HBM scratch buffer (4 B written + 4 B read per logit), which costs less than
// streaming the weights again whenever (R - LM_ROWS) * 8 < H * E_w.
// Indices are 32-bit: R <= E4F_MAX_ROWS, H <= E4F_MAX_H, V <= E4F_MAX_VH (parse_draft_cfg), so every flat
// index (v * H + h <= 2^27, (r - LM_ROWS) * V + v <= 2^25) fits.

// One weight tile (vocabulary rows [v0, v0 + E4F_LMH_IL)) into one half of the ping-pong, in full beats.
// Port p holds the rows v = p (mod E4F_LMH_PORTS), row v at its row v / E4F_LMH_PORTS (the host splits the
// LM head so at load time: eagle4.backends.fused_csim.split_lm_weight), so the tile is rows
// [v0 / PORTS, v0 / PORTS + IL / PORTS) of every port: one burst each, the four side by side. A beat is
// E4F_LMH_BEAT port elements: 64 int8 weights (one tile word) or 64 bytes of packed int4 (128 weights: two
// tile words, unpacked as they land).
template <typename WT>
inline void tile_put(WBeat* row, int e, int, WT w) {
  row[e / E4F_LMH_LANES].b[e % E4F_LMH_LANES] = tile_word<WT>(w);
}
inline void tile_put(WBeat* row, int e, int H, i4x2 w) {
  const int h = 2 * e;  // even: h and h + 1 lie in the same 64-lane word
  row[h / E4F_LMH_LANES].b[h % E4F_LMH_LANES] = tile_from_f(i4_lo(w));
  if (h + 1 < H) row[h / E4F_LMH_LANES].b[(h + 1) % E4F_LMH_LANES] = tile_from_f(i4_hi(w));
}
template <typename WT, typename WE>  // WE: the port element (WElem<WT>)
void lmh_load_tile(Port<const WE> lmw0, Port<const WE> lmw1, Port<const WE> lmw2, Port<const WE> lmw3,
                   Port<const float> lms, int use_scale, int H, int V, int v0, WTile& wt, float (&sc)[E4F_LMH_IL]) {
#pragma HLS INLINE off
  static_assert(E4F_LMH_PORTS == 4, "one port argument per weight bundle");
  const int E = static_cast<int>(w_row_elems<WT>(H));  // port elements per weight row
  const int full = E / E4F_LMH_BEAT;
  const int u0 = v0 / E4F_LMH_PORTS;  // the tile's first row in every port
  const int n = V - v0 < E4F_LMH_IL ? V - v0 : E4F_LMH_IL;
  for (int i = 0; i < n; ++i)
    if (use_scale) sc[i] = static_cast<float>(lms[v0 + i]);
  if (n == E4F_LMH_IL) {
    // a whole tile: full 512-bit beats, one of every port per cycle, with no condition on a port (bursts); a
    // row's tail (H not a multiple of a beat's weights: never at deployment, and the cycle model refuses such
    // H) element-wise after them, uncounted
    for (int q = 0; q < E4F_LMH_IL / E4F_LMH_PORTS; ++q) {
      const int row = (u0 + q) * E;
      for (int j = 0; j < full; ++j) {
#pragma HLS PIPELINE II = E4F_II_LMH_WLOAD
        E4F_TRIPS(LMH_WLOAD, E4F_LANES_LMH_WLOAD);
        for (int k = 0; k < E4F_LANES_LMH_WLOAD; ++k) {
#pragma HLS UNROLL factor = E4F_LANES_LMH_WLOAD
          const int e = j * E4F_LMH_BEAT + k;
          tile_put(wt[q * E4F_LMH_PORTS + 0], e, H, static_cast<WT>(lmw0[row + e]));
          tile_put(wt[q * E4F_LMH_PORTS + 1], e, H, static_cast<WT>(lmw1[row + e]));
          tile_put(wt[q * E4F_LMH_PORTS + 2], e, H, static_cast<WT>(lmw2[row + e]));
          tile_put(wt[q * E4F_LMH_PORTS + 3], e, H, static_cast<WT>(lmw3[row + e]));
        }
      }
      for (int e = full * E4F_LMH_BEAT; e < E; ++e) {
        tile_put(wt[q * E4F_LMH_PORTS + 0], e, H, static_cast<WT>(lmw0[row + e]));
        tile_put(wt[q * E4F_LMH_PORTS + 1], e, H, static_cast<WT>(lmw1[row + e]));
        tile_put(wt[q * E4F_LMH_PORTS + 2], e, H, static_cast<WT>(lmw2[row + e]));
        tile_put(wt[q * E4F_LMH_PORTS + 3], e, H, static_cast<WT>(lmw3[row + e]));
      }
    }
  } else {
    // the last, partial tile (V not a multiple of E4F_LMH_IL: never at deployment), element-wise, uncounted
    for (int i = 0; i < n; ++i) {
      const int row = (u0 + i / E4F_LMH_PORTS) * E, p = i % E4F_LMH_PORTS;
      for (int e = 0; e < E; ++e) {
        const WE w = p == 0 ? lmw0[row + e] : p == 1 ? lmw1[row + e] : p == 2 ? lmw2[row + e] : lmw3[row + e];
        tile_put(wt[i], e, H, static_cast<WT>(w));
      }
    }
  }
}

// One word of the lane trees: E4F_LANES_LMH_RED logits (tile rows i0 .. i0 + 7) of hidden row rr of the
// block, scaled by their rows' scales.
inline void lmh_red_word(const float (&part)[E4F_LMH_IL / E4F_LMH_VP][E4F_LMH_VP][E4F_LMH_RT][E4F_LMH_LANES],
                         const float (&sc)[E4F_LMH_IL], int use_scale, int rr, int i0,
                         float (&out)[E4F_LANES_LMH_RED]) {
#pragma HLS INLINE
  for (int m = 0; m < E4F_LANES_LMH_RED; ++m) {
#pragma HLS UNROLL factor = E4F_LANES_LMH_RED
    const int il = i0 + m;
    const float acc = lm_tree(part[il / E4F_LMH_VP][il % E4F_LMH_VP][rr]);
    out[m] = use_scale ? acc * sc[il] : acc;
  }
}

// The MAC array over one weight tile: for every block of E4F_LMH_RT frontier rows, E4F_LMH_VP x E4F_LMH_RT x
// E4F_LMH_LANES multiply-adds per cycle into per-lane partial sums (the tile's rows VP at a time), then the
// lane trees (E4F_LANES_LMH_RED logits per cycle) and the row scale.
void lmh_mac_tile(const WTile& wt, const float (&sc)[E4F_LMH_IL], Port<float> spill, int use_scale, int code,
                  int R, int H, int V, int v0) {
#pragma HLS INLINE off
  const int words = (H + E4F_LMH_LANES - 1) / E4F_LMH_LANES;
  const int G = E4F_LMH_IL / E4F_LMH_VP;  // MAC cycles per word of the tile
  for (int r0 = 0; r0 < R; r0 += E4F_LMH_RT) {
    float part[E4F_LMH_IL / E4F_LMH_VP][E4F_LMH_VP][E4F_LMH_RT][E4F_LMH_LANES];
#pragma HLS ARRAY_PARTITION variable = part type = complete dim = 2
#pragma HLS ARRAY_PARTITION variable = part type = complete dim = 3
#pragma HLS ARRAY_PARTITION variable = part type = complete dim = 4
    for (int g = 0; g < G; ++g)
      for (int vp = 0; vp < E4F_LMH_VP; ++vp)
        for (int rr = 0; rr < E4F_LMH_RT; ++rr)
          for (int k = 0; k < E4F_LMH_LANES; ++k) part[g][vp][rr][k] = 0.0f;
    for (int j = 0; j < words; ++j) {
      for (int g = 0; g < G; ++g) {
#pragma HLS PIPELINE II = E4F_II_LMH_MAC
        E4F_TRIPS(LMH_MAC, E4F_LANES_LMH_MAC);
        for (int l = 0; l < E4F_LANES_LMH_MAC; ++l) {
#pragma HLS UNROLL factor = E4F_LANES_LMH_MAC
          const int vp = l / (E4F_LMH_RT * E4F_LMH_LANES), rr = (l / E4F_LMH_LANES) % E4F_LMH_RT,
                    k = l % E4F_LMH_LANES;
          const int il = g * E4F_LMH_VP + vp, r = r0 + rr, h = j * E4F_LMH_LANES + k;
          if (r < R && v0 + il < V && h < H) {  // masked lanes of the tails
            const float prod = w_to_f(wt[il][j].b[k]) * hid_word_to_f(hid_bits[r][j].h[k], code);
            part[g][vp][rr][k] = part[g][vp][rr][k] + prod;
          }
        }
      }
    }
    // the lane trees: E4F_LANES_LMH_RED logits of one hidden row per cycle. One loop per destination, chosen
    // outside it (no port access under a test in the pipelined loop): the on-chip tile (rows < E4F_LM_ROWS and
    // the last block's padding rows, which write nothing), the spill port in whole runs of logits (a full
    // tile), or a full tile's worth reduced into registers and its V - v0 logits written in their own loop
    // (the last, partial tile: never at deployment). Every row runs the same trips, as before the split.
    for (int rr = 0; rr < E4F_LMH_RT; ++rr) {
      const int r = r0 + rr;
      const bool keep = r < R;
      float lmh_out[E4F_LANES_LMH_RED];
#pragma HLS ARRAY_PARTITION variable = lmh_out type = complete dim = 1
      if (!keep || r < E4F_LM_ROWS) {
        for (int i0 = 0; i0 < E4F_LMH_IL; i0 += E4F_LANES_LMH_RED) {
#pragma HLS PIPELINE II = E4F_II_LMH_RED
          E4F_TRIPS(LMH_RED, E4F_LANES_LMH_RED);
          lmh_red_word(part, sc, use_scale, rr, i0, lmh_out);
          for (int m = 0; m < E4F_LANES_LMH_RED; m += 2) {
            const int v = v0 + i0 + m;
            if (keep && v < V) tile_set2(r, v >> 1, lmh_out[m], v + 1 < V ? lmh_out[m + 1] : 0.0f);
          }
        }
      } else if (v0 + E4F_LMH_IL <= V) {
        const int base = (r - E4F_LM_ROWS) * V + v0;
        for (int i0 = 0; i0 < E4F_LMH_IL; i0 += E4F_LANES_LMH_RED) {
#pragma HLS PIPELINE II = E4F_II_LMH_RED
          E4F_TRIPS(LMH_RED, E4F_LANES_LMH_RED);
          lmh_red_word(part, sc, use_scale, rr, i0, lmh_out);
          for (int m = 0; m < E4F_LANES_LMH_RED; ++m) {
#pragma HLS UNROLL factor = E4F_LANES_LMH_RED
            spill[base + i0 + m] = lmh_out[m];
          }
        }
      } else {
        float tail[E4F_LMH_IL];  // registers (completely partitioned), not a BRAM
#pragma HLS ARRAY_PARTITION variable = tail type = complete dim = 1
        for (int i0 = 0; i0 < E4F_LMH_IL; i0 += E4F_LANES_LMH_RED) {
#pragma HLS PIPELINE II = E4F_II_LMH_RED
          E4F_TRIPS(LMH_RED, E4F_LANES_LMH_RED);
          lmh_red_word(part, sc, use_scale, rr, i0, lmh_out);
          for (int m = 0; m < E4F_LANES_LMH_RED; ++m) tail[i0 + m] = lmh_out[m];
        }
        const int base = (r - E4F_LM_ROWS) * V;
        for (int v = v0; v < V; ++v) spill[base + v] = tail[v - v0];
      }
    }
  }
}

template <typename HT, typename WT, typename WE>
void stage_lm_head(Port<const HT> hidden, Port<const WE> lmw0, Port<const WE> lmw1, Port<const WE> lmw2, Port<const WE> lmw3,
                   Port<const float> lms, Port<float> spill,
                   const DraftCfg& c, int64_t W) {
  const int R = static_cast<int>(c.B * W), H = static_cast<int>(c.H), V = static_cast<int>(c.Vt);
#pragma HLS AGGREGATE variable = hid_bits compact = bit
#pragma HLS ARRAY_PARTITION variable = hid_bits type = cyclic factor = E4F_LMH_RT dim = 1
#pragma HLS AGGREGATE variable = wping compact = bit
#pragma HLS AGGREGATE variable = wpong compact = bit
#pragma HLS ARRAY_PARTITION variable = wping type = cyclic factor = E4F_LMH_VP dim = 1
#pragma HLS ARRAY_PARTITION variable = wpong type = cyclic factor = E4F_LMH_VP dim = 1
#pragma HLS ARRAY_PARTITION variable = sping type = complete dim = 1
#pragma HLS ARRAY_PARTITION variable = spong type = complete dim = 1
#pragma HLS ARRAY_PARTITION variable = logits2 type = cyclic factor = E4F_LOGITS2_BANKS dim = 2
#pragma HLS BIND_STORAGE variable = logits2 type = ram_s2p impl = uram
#pragma HLS BIND_STORAGE variable = hid_bits type = ram_s2p impl = bram
  const int hfull = H / E4F_LANES_LMH_HLOAD * E4F_LANES_LMH_HLOAD;  // full beats, then the uncounted tail
  for (int r = 0; r < R; ++r) {
    for (int h0 = 0; h0 < hfull; h0 += E4F_LANES_LMH_HLOAD) {
#pragma HLS PIPELINE II = E4F_II_LMH_HLOAD
      E4F_TRIPS(LMH_HLOAD, E4F_LANES_LMH_HLOAD);
      for (int j = 0; j < E4F_LANES_LMH_HLOAD; ++j) {
#pragma HLS UNROLL factor = E4F_LANES_LMH_HLOAD
        hid_put(r, h0 + j, static_cast<HidWord>(static_cast<HT>(hidden[r * H + h0 + j])));
      }
    }
    for (int h = hfull; h < H; ++h) hid_put(r, h, static_cast<HidWord>(static_cast<HT>(hidden[r * H + h])));
  }
  // ping-pong: tile t + 1 is read into one half while the MAC array works on tile t in the other; the two
  // calls of a step touch different buffers (no dependence), so they run side by side
  const int tiles = (V + E4F_LMH_IL - 1) / E4F_LMH_IL;
  E4F_EXPOSED(true);  // the first tile's read: nothing overlaps it
  lmh_load_tile<WT, WE>(lmw0, lmw1, lmw2, lmw3, lms, c.use_scale, H, V, 0, wping, sping);
  E4F_EXPOSED(false);
  for (int t = 0; t < tiles; ++t) {
    const int v0 = t * E4F_LMH_IL, vn = v0 + E4F_LMH_IL;
    if ((t & 1) == 0) {
      if (t + 1 < tiles) lmh_load_tile<WT, WE>(lmw0, lmw1, lmw2, lmw3, lms, c.use_scale, H, V, vn, wpong, spong);
      lmh_mac_tile(wping, sping, spill, c.use_scale, c.hid_code, R, H, V, v0);
    } else {
      if (t + 1 < tiles) lmh_load_tile<WT, WE>(lmw0, lmw1, lmw2, lmw3, lms, c.use_scale, H, V, vn, wping, sping);
      lmh_mac_tile(wpong, spong, spill, c.use_scale, c.hid_code, R, H, V, v0);
    }
  }
}

// testbench mode (bypass_lm_head): only the frontier hidden rows are loaded (K1 gathers from them)
template <typename HT>
void load_hidden(Port<const HT> hidden, const DraftCfg& c, int64_t W) {
  for (int r = 0; r < c.B * W; ++r)
    for (int h = 0; h < c.H; ++h) hid_put(r, h, static_cast<HidWord>(static_cast<HT>(hidden[r * c.H + h])));
}
void stage_candidates_in(Port<const float> cand_p, Port<const int64_t> cand_t, const DraftCfg& c, int64_t W,
                         int64_t b0, int64_t nb, EAGLE4_STREAM(CandRec, 4) & cand_s) {
  for (int bl = 0; bl < nb; ++bl) {
    CandRec rec;
    for (int i = 0; i < W * c.K; ++i) {
      rec.p[i] = cand_p[(b0 + bl) * E4F_MAX_C + i];
      rec.t[i] = cand_t[(b0 + bl) * E4F_MAX_C + i];
    }
    cand_s.write(rec);
  }
}

// ---- stage 1: softmax + top-K per frontier row (requests [b0, b0+nb)) ------------------------
void stage_candidates(Port<float> spill, const DraftCfg& c, int64_t W, int64_t b0, int64_t nb,
                      EAGLE4_STREAM(CandRec, 4) & cand_s) {
  const int V = static_cast<int>(c.Vt);
  static float row[E4F_MAX_VH];
#pragma HLS ARRAY_PARTITION variable = row type = cyclic factor = 16 dim = 1
  for (int bl = 0; bl < nb; ++bl) {
    CandRec rec;
    for (int w = 0; w < W; ++w) {
      const int64_t r = (b0 + bl) * W + w;
      if (r < E4F_LM_ROWS) {
        for (int v0 = 0; v0 < V; v0 += E4F_LANES_ROW_LOAD) {
#pragma HLS PIPELINE II = E4F_II_ROW_LOAD
          E4F_TRIPS(ROW_LOAD, E4F_LANES_ROW_LOAD);
          for (int j = 0; j < E4F_LANES_ROW_LOAD; ++j) {
#pragma HLS UNROLL factor = E4F_LANES_ROW_LOAD
            if (v0 + j < V) row[v0 + j] = tile_get(static_cast<int>(r), v0 + j);  // the row's tail: masked
          }
        }
      } else {
        const int sbase = (static_cast<int>(r) - E4F_LM_ROWS) * V, vfull = V / E4F_LANES_ROW_LOAD * E4F_LANES_ROW_LOAD;
        for (int v0 = 0; v0 < vfull; v0 += E4F_LANES_ROW_LOAD) {  // full 512-bit beats, then the tail
#pragma HLS PIPELINE II = E4F_II_ROW_LOAD
          E4F_TRIPS(ROW_LOAD, E4F_LANES_ROW_LOAD);
          for (int j = 0; j < E4F_LANES_ROW_LOAD; ++j) {
#pragma HLS UNROLL factor = E4F_LANES_ROW_LOAD
            row[v0 + j] = spill[sbase + v0 + j];
          }
        }
        for (int v = vfull; v < V; ++v) row[v] = spill[sbase + v];
      }
      const RowStats rs = row_stats(row, V, 1.0f, false);
      for (int v0 = 0; v0 < V; v0 += E4F_LANES_ROW_PROBA) {
#pragma HLS PIPELINE II = E4F_II_ROW_PROBA
        E4F_TRIPS(ROW_PROBA, E4F_LANES_ROW_PROBA);
        for (int j = 0; j < E4F_LANES_ROW_PROBA; ++j) {
#pragma HLS UNROLL factor = E4F_LANES_ROW_PROBA
          if (v0 + j < V) row[v0 + j] = proba(row[v0 + j], 1.0f, rs);  // in place: the statistics are already taken
        }
      }
      topk_row(row, V, static_cast<int>(c.K), &rec.p[w * c.K], &rec.t[w * c.K]);
    }
    cand_s.write(rec);
  }
}

// ---- stage 2: K1 (score, sort, top-K, hot remap, hidden gather of the next frontier) -------
template <typename HT>
void stage_k1(EAGLE4_STREAM(CandRec, 4) & cand_s, Port<const int64_t> hot, Port<HT> out_hidden, DraftCfg c,
              int64_t W, int64_t Wn, int64_t b0, int64_t nb, int64_t cc, const Frontier& fin,
              EAGLE4_STREAM(K1Out, 4) & k1_s) {
  for (int bl = 0; bl < nb; ++bl) {
    const int64_t b = b0 + bl;
    const CandRec rec = cand_s.read();
    K1Out o;
    for (int i = 0; i < W * c.K; ++i) o.tok[i] = rec.t[i];  // remapped in place on the hot path
    int par_slot[eagle4::MAX_TOP_K];
    eagle4::k1::score_request(rec.p, o.tok, fin.scores[b], hot, c.Vh, c.use_hot != 0, static_cast<int>(c.K),
                              static_cast<int>(W), cc, o.curr, o.sort_s, o.sort_i, o.cache, o.parent,
                              static_cast<int64_t*>(nullptr), false, par_slot);
    // only the W_next rows the next drafter layer consumes leave the chip
    for (int r = 0; r < Wn; ++r) {
      int64_t p = o.parent[r];
      if (p < 0) p = 0;
      if (p > W - 1) p = W - 1;
      for (int h = 0; h < c.H; ++h)
        out_hidden[(b * c.K + r) * c.H + h] = static_cast<HT>(hid_at(static_cast<int>(b * W + p), h));
    }
    k1_s.write(o);
  }
}

// ---- stage 3: K2 on the on-chip state ---------------------------------------------------
// The frontier's node ids and the next layer's input mask are stage_k2's own state (read for request b, then
// replaced by the next layer's): no other task of the region touches them.
void stage_k2(EAGLE4_STREAM(K1Out, 4) & k1_s, DraftCfg c, int64_t W, int64_t Wn, int64_t Vn, int64_t b0, int64_t nb,
              EAGLE4_STREAM(WorkRec, 4) & work_s, EAGLE4_STREAM(FrontRec, 4) & front_s) {
  for (int bl = 0; bl < nb; ++bl) {
    const int64_t b = b0 + bl;
    const K1Out o = k1_s.read();
    const int K = static_cast<int>(c.K), Wi = static_cast<int>(W);
    const eagle4::k2::Sizes z = eagle4::k2::sizes(K, Wi * K, st.cc, Vn, static_cast<int>(c.N), static_cast<int>(c.M));
    FrontRec fr;
    uint8_t mask_out[E4F_MAX_K][E4F_MAX_I + 1];
    eagle4::k2::update_request(o.curr, o.tok, o.sort_s, o.sort_i, o.parent, st.front_idx[b], &st.mask_in[b][0][0],
                               E4F_MAX_I, K, Wi, static_cast<int>(st.Ic), st.cc, st.layer, static_cast<int>(c.N), z,
                               st.ctok[b], st.csc[b], st.cdel[b], st.prev[b], st.next[b], st.side[b], fr.scores,
                               fr.tokens, st.work[b], st.sort[b], &mask_out[0][0], E4F_MAX_I + 1);
    WorkRec wr;
    wr.n0 = z.n0;
    for (int i = 0; i < z.n0 + c.K; ++i) wr.w[i] = st.work[b][i];
    work_s.write(wr);
    for (int w = 0; w < Wn; ++w) {  // the next layer's frontier: node ids and input mask
      st.front_idx[b][w] = static_cast<int32_t>(o.cache[w]);
      for (int j = 0; j < st.Ic - 1; ++j) st.mask_in[b][w][j] = mask_out[w][j];
      for (int w2 = 0; w2 < Wn; ++w2) st.mask_in[b][w][st.Ic - 1 + w2] = (w2 == w) ? 1 : 0;
    }
    for (int r = 0; r < c.K; ++r) fr.parent[r] = o.parent[r];
    front_s.write(fr);
  }
}

// ---- stage 4: K3 (batch reduction in ascending b, carried across request tiles) -----------
void stage_k3(EAGLE4_STREAM(WorkRec, 4) & work_s, DraftCfg c, int64_t Vn, int64_t nb, float* total) {
  for (int bl = 0; bl < nb; ++bl) {
    const WorkRec wr = work_s.read();
    float per[E4F_MAX_K + 1];
    eagle4::k3::work_deltas_request(wr.w, static_cast<int>(wr.n0), static_cast<int>(c.K), static_cast<int>(Vn), per);
    for (int w = 0; w <= c.K; ++w) total[w] = total[w] + per[w];
  }
}

// ---- stage 5: frontier hand-off (on-chip) -------------------------------------------------
void stage_handoff(EAGLE4_STREAM(FrontRec, 4) & front_s, Port<int64_t> out_tokens, DraftCfg c, int64_t Wn,
                   int64_t b0, int64_t nb, Frontier& fout) {
  for (int bl = 0; bl < nb; ++bl) {
    const int64_t b = b0 + bl;
    const FrontRec fr = front_s.read();
    for (int w = 0; w < Wn; ++w) {
      out_tokens[b * c.K + w] = fr.tokens[w];
      fout.scores[b][w] = fr.scores[w];
    }
    for (int r = 0; r < c.K; ++r) fout.parent[b][r] = static_cast<int32_t>(fr.parent[r]);
  }
}

}  // namespace draft

using namespace draft;

// ---------------- the persistent top -------------------------------------------------------
// phase 0: tree init; phase 1: one draft layer (d = st.layer + 1); phase 2: finalize.
// The candidates' source: the LM head's rows (spill / tile), or the testbench's recorded top-K. One task
// whatever the mode (a DATAFLOW region has no conditional tasks; the branch is inside the task).
void stage_cand_source(Port<float> spill, Port<const float> cand_p, Port<const int64_t> cand_t, DraftCfg c,
                       int64_t W, int64_t b0, int64_t nb, EAGLE4_STREAM(CandRec, 4) & cand_s) {
  if (c.bypass_lm_head)
    stage_candidates_in(cand_p, cand_t, c, W, b0, nb, cand_s);
  else
    stage_candidates(spill, c, W, b0, nb, cand_s);
}

// One block of requests [b0, b0 + nb) of a layer: the DATAFLOW region (one producer and one consumer per
// stream, every task unconditional, no static shared by two tasks: the tree state is stage_k2's, the frontier
// hand-off an argument read by stage_k1 and then written by stage_handoff; c and the sizes are scalars).
template <typename HT>
void draft_tile(Port<float> spill, Port<const float> cand_p, Port<const int64_t> cand_t, Port<const int64_t> hot,
                Port<HT> out_hidden, Port<int64_t> out_tokens, DraftCfg c, int64_t W, int64_t Wn, int64_t Vn,
                int64_t b0, int64_t nb, int64_t cc, Frontier& frontier, float* total) {
#pragma HLS DATAFLOW
  EAGLE4_STREAM(CandRec, 4) cand_s;
  EAGLE4_STREAM(K1Out, 4) k1_s;
  EAGLE4_STREAM(WorkRec, 4) work_s;
  EAGLE4_STREAM(FrontRec, 4) front_s;
  stage_cand_source(spill, cand_p, cand_t, c, W, b0, nb, cand_s);
  stage_k1<HT>(cand_s, hot, out_hidden, c, W, Wn, b0, nb, cc, frontier, k1_s);
  stage_k2(k1_s, c, W, Wn, Vn, b0, nb, work_s, front_s);
  stage_k3(work_s, c, Vn, nb, total);
  stage_handoff(front_s, out_tokens, c, Wn, b0, nb, frontier);
}

template <typename HT, typename WT, typename WE>
int draft_pipeline_top(int phase, Port<const int64_t> root, Port<const HT> hidden, Port<const WE> lmw0,
                       Port<const WE> lmw1, Port<const WE> lmw2, Port<const WE> lmw3,
                       Port<const float> lms, Port<float> spill, Port<const int64_t> hot, int64_t W, int64_t Wn, int64_t Vn,
                       Port<const int64_t> seq_lens, Port<const int64_t> pool, Port<const int32_t> r2t,
                       Port<const int64_t> locs, Port<HT> out_hidden, Port<int64_t> out_tokens,
                       Port<float> work_deltas, Port<int32_t> qo, Port<int32_t> kvptr, Port<int32_t> kvidx,
                       Port<int64_t> positions, Port<int32_t> mbits, Port<int32_t> mbytes, Port<uint8_t> packed,
                       Port<int64_t> ctok, Port<float> csc, Port<int64_t> cdel, Port<int64_t> cprev,
                       Port<int64_t> cnext, Port<int64_t> cside, Port<int64_t> vt_cand, Port<int64_t> vt_ridx,
                       Port<int64_t> vt_ntok, Port<int64_t> vt_nsib, Port<int64_t> vt_parent, Port<int64_t> vt_node,
                       Port<int64_t> cc_out, Port<const float> cand_p, Port<const int64_t> cand_t,
                       const DraftCfg& c) {
  // no INTERFACE pragmas here: they belong to the synthesis top (draft_pipeline_synth.cpp)
  if (phase == 0) {  // §8.1 step 0 (D13): node 0 = root, cc = 1, Ic = 1
    for (int b = 0; b < c.B; ++b) {
      st.ctok[b][0] = static_cast<int32_t>(root[b]);  // < 2^31: checked by the C ABI
      st.csc[b][0] = 1.0f;
      st.cdel[b][0] = 0;
      st.prev[b][0] = st.next[b][0] = st.side[b][0] = -1;
      st.sort[b][0] = 1.0f;
      front.scores[b][0] = 1.0f;
      st.front_idx[b][0] = 0;
    }
    st.cc = 1;
    st.Ic = 1;
    st.off_prev = 0;
    st.layer = 0;
    return 0;
  }
  if (phase == 1) {
    st.layer += 1;
    float total[E4F_MAX_K + 1];
    for (int w = 0; w <= c.K; ++w) total[w] = 0.0f;
    const int64_t tile = 16;  // requests per dataflow block of the per-request stages
    const int64_t cc0 = st.cc;
    if (c.bypass_lm_head)
      load_hidden<HT>(hidden, c, W);
    else
      stage_lm_head<HT, WT, WE>(hidden, lmw0, lmw1, lmw2, lmw3, lms, spill, c, W);
    for (int b0 = 0; b0 < c.B; b0 += tile) {
      const int64_t nb = (c.B - b0 < tile) ? c.B - b0 : tile;
      draft_tile<HT>(spill, cand_p, cand_t, hot, out_hidden, out_tokens, c, W, Wn, Vn, b0, nb, cc0, front, total);
    }
    for (int w = 0; w <= c.K; ++w) work_deltas[w] = total[w];
    st.cc = cc0 + W * c.K;
    if (Wn > 0) {
      // K4 (draft use) for the next layer: T = Ic_next - 1 tree tokens, Q = Wn queries
      const int64_t Ic_next = st.Ic + Wn;
      const int64_t T = Ic_next - 1;
      const int64_t off_cur = st.Ic - 1;  // local index of the first token fed at the next layer
      int64_t kv = 0, bits = 0, bytes = 0;
      qo[0] = 0;
      kvptr[0] = 0;
      mbits[0] = 0;
      mbytes[0] = 0;
      for (int b = 0; b < c.B; ++b) {
        for (int w = 0; w < Wn; ++w)
          st.tree_parent[b][off_cur + w] = static_cast<int32_t>((st.layer == 1) ? int64_t(-1) : st.off_prev + front.parent[b][w]);
        const int64_t L = seq_lens[b];
        const int64_t pl = pool[b];
        bytes += eagle4::k4::tree_mask_request(L, pl, r2t, c.S_max, locs + b * c.Tcap, st.tree_parent[b],
                                               static_cast<int>(T), static_cast<int>(Wn), kvidx + kv,
                                               positions + b * Wn, packed + bytes, false,
                                               static_cast<uint8_t*>(nullptr));
        kv += L + T;
        bits += Wn * (L + T);
        qo[b + 1] = static_cast<int32_t>((b + 1) * Wn);
        kvptr[b + 1] = static_cast<int32_t>(kv);
        mbits[b + 1] = static_cast<int32_t>(bits);
        mbytes[b + 1] = static_cast<int32_t>(bytes);
      }
      st.off_prev = off_cur;
      st.Ic = Ic_next;
    }
    return 0;
  }
  // phase 2: finalize: verify-set selection from the on-chip state, then ONE write-back
  const int64_t vnv = c.vn_final < 1 ? 1 : (c.vn_final > c.M ? c.M : c.vn_final);
  const int64_t nn = st.cc < c.N ? st.cc : c.N;
  const int64_t Q = vnv < nn ? vnv : nn;
  for (int b = 0; b < c.B; ++b) {
    for (int g = 0; g < nn; ++g) {
      ctok[b * c.N + g] = st.ctok[b][g];
      csc[b * c.N + g] = st.csc[b][g];
      cdel[b * c.N + g] = st.cdel[b][g];
      cprev[b * c.N + g] = st.prev[b][g];
      cnext[b * c.N + g] = st.next[b][g];
      cside[b * c.N + g] = st.side[b][g];
    }
    VerifyTree vt;
    select_verify(st.csc[b], st.ctok[b], st.prev[b], nn, Q, vt);
    for (int t = 0; t < Q; ++t) {
      vt_cand[b * Q + t] = vt.cand[t];
      vt_ridx[b * Q + t] = b * Q + t;
      vt_ntok[b * Q + t] = vt.next_tok[t];
      vt_nsib[b * Q + t] = vt.next_sib[t];
      vt_parent[b * Q + t] = vt.parent[t];
      vt_node[b * Q + t] = vt.node[t];
    }
  }
  cc_out[0] = st.cc;
  cc_out[1] = Q;
  return 0;
}

// ---------------- testbench-style C ABI: a whole draft step ----------------------------------
namespace {
// slot D_LMW counts the first weight port; the others follow the tensors' slots (D_NSLOTS + p - 1)
const char* kFusedPorts =
    "root_token,draft_hidden,lm_weight0,lm_scale,hot_token_id,widths,verify_nums,seq_lens,req_pool_indices,"
    "req_to_token,draft_cache_locs,out_hidden,out_tokens,work_deltas,qo_indptr,kv_indptr,kv_indices,positions,"
    "mask_indptr_bits,mask_indptr_bytes,packed_mask,cumu_tokens,cumu_scores,cumu_deltas,prev_indexs,next_indexs,"
    "side_indexs,vt_candidates,vt_retrive_index,vt_next_token,vt_next_sibling,vt_tree_parent,vt_node_ids,cc_out,"
    "lm_spill,dbg_topk_p,dbg_topk_t,cand_p,cand_t,lm_weight1,lm_weight2,lm_weight3";
static_assert(E4F_LMH_PORTS == 4, "kFusedPorts names one counter per weight port");

template <typename HT, typename WT>
int run_fused(const eagle4::capi::Ctx& x, const DraftCfg& c, eagle4::PortCounter* cnt) {
#define P_(T, i) PORT_ARG(x.ptr<T>(i), cnt, i)
  Port<const int64_t> widths = P_(const int64_t, D_WIDTHS), vns = P_(const int64_t, D_VNS);
  // The host's layout of the LM head over the E4F_LMH_PORTS weight buffers (done once, at load time; the
  // xrt host does the same, eagle4.backends.fused_csim.split_lm_weight): port p holds the rows
  // v = p (mod PORTS) in order. Each buffer is counted on its own port (lm_weight0 .. lm_weight3).
  const int64_t E = w_row_elems<WT>(c.H);
  std::vector<WElem<WT>> wsplit[E4F_LMH_PORTS];
  Port<const WElem<WT>> lmw[E4F_LMH_PORTS];
  if (x.present(D_LMW)) {
    const WElem<WT>* w = x.ptr<const WElem<WT>>(D_LMW);
    for (int p = 0; p < E4F_LMH_PORTS; ++p) {
      for (int64_t v = p; v < c.Vt; v += E4F_LMH_PORTS) wsplit[p].insert(wsplit[p].end(), w + v * E, w + (v + 1) * E);
      wsplit[p].resize(wsplit[p].size() + 1);  // never read: a non-null buffer when a port holds no row
      lmw[p] = PORT_ARG(static_cast<const WElem<WT>*>(wsplit[p].data()), cnt, p == 0 ? int(D_LMW) : int(D_NSLOTS) + p - 1);
    }
  }
  draft_pipeline_top<HT, WT, WElem<WT>>(0, P_(const int64_t, D_ROOT), Port<const HT>(), Port<const WElem<WT>>(), Port<const WElem<WT>>(),
                             Port<const WElem<WT>>(), Port<const WElem<WT>>(), Port<const float>(),
                             Port<float>(), Port<const int64_t>(), 0, 0, 0, Port<const int64_t>(), Port<const int64_t>(),
                             Port<const int32_t>(), Port<const int64_t>(), Port<HT>(), Port<int64_t>(),
                             Port<float>(), Port<int32_t>(), Port<int32_t>(), Port<int32_t>(), Port<int64_t>(),
                             Port<int32_t>(), Port<int32_t>(), Port<uint8_t>(), Port<int64_t>(), Port<float>(),
                             Port<int64_t>(), Port<int64_t>(), Port<int64_t>(), Port<int64_t>(), Port<int64_t>(),
                             Port<int64_t>(), Port<int64_t>(), Port<int64_t>(), Port<int64_t>(), Port<int64_t>(),
                             Port<int64_t>(), Port<const float>(), Port<const int64_t>(), c);
  const int64_t rowsH = c.B * c.K * c.H;
  for (int d = 0; d < c.D; ++d) {
    const int64_t W = widths[d];
    const int64_t Wn = (d + 1 < c.D) ? static_cast<int64_t>(widths[d + 1]) : 0;
    const int64_t Vn = vns[d];
    if (W < 1 || W * c.K > E4F_MAX_C || (W > c.K && d > 0) || (d == 0 && W != 1))
      return x.fail(eagle4::capi::E_PRECONDITION, "widths[%lld]=%lld invalid", (long long)d, (long long)W);
    if (Wn > 0 && (Wn > c.K || st.Ic - 1 + Wn > c.I))
      return x.fail(eagle4::capi::E_BOUND, "input_count-1 = %lld exceeds max_input_size %lld",
                    (long long)(st.Ic - 1 + Wn), (long long)c.I);
    const int64_t kvoff = d * c.capkv, pkoff = d * c.cappack, b1 = d * (c.B + 1);
    draft_pipeline_top<HT, WT, WElem<WT>>(
        1, Port<const int64_t>(), P_(const HT, D_HIDDEN) + d * rowsH, lmw[0], lmw[1], lmw[2], lmw[3], P_(const float, D_LMS),
        P_(float, D_SPILL), P_(const int64_t, D_HOT), W, Wn, Vn, P_(const int64_t, D_SEQ), P_(const int64_t, D_POOL),
        P_(const int32_t, D_R2T), P_(const int64_t, D_LOCS), P_(HT, D_OUT_HIDDEN) + d * rowsH,
        P_(int64_t, D_OUT_TOKENS) + d * c.B * c.K, P_(float, D_WORK_DELTAS) + d * (c.K + 1), P_(int32_t, D_QO) + b1,
        P_(int32_t, D_KVPTR) + b1, P_(int32_t, D_KVIDX) + kvoff, P_(int64_t, D_POS) + d * c.B * c.K,
        P_(int32_t, D_MBITS) + b1, P_(int32_t, D_MBYTES) + b1, P_(uint8_t, D_PACKED) + pkoff, Port<int64_t>(),
        Port<float>(), Port<int64_t>(), Port<int64_t>(), Port<int64_t>(), Port<int64_t>(), Port<int64_t>(),
        Port<int64_t>(), Port<int64_t>(), Port<int64_t>(), Port<int64_t>(), Port<int64_t>(), Port<int64_t>(),
        P_(const float, D_CAND_P) + d * c.B * E4F_MAX_C, P_(const int64_t, D_CAND_T) + d * c.B * E4F_MAX_C, c);
  }
  draft_pipeline_top<HT, WT, WElem<WT>>(
      2, Port<const int64_t>(), Port<const HT>(), Port<const WElem<WT>>(), Port<const WElem<WT>>(),
                             Port<const WElem<WT>>(), Port<const WElem<WT>>(), Port<const float>(), Port<float>(),
      Port<const int64_t>(), 0, 0,
      0, Port<const int64_t>(), Port<const int64_t>(), Port<const int32_t>(), Port<const int64_t>(), Port<HT>(),
      Port<int64_t>(), Port<float>(), Port<int32_t>(), Port<int32_t>(), Port<int32_t>(), Port<int64_t>(),
      Port<int32_t>(), Port<int32_t>(), Port<uint8_t>(), P_(int64_t, D_CTOK), P_(float, D_CSC), P_(int64_t, D_CDEL),
      P_(int64_t, D_PREV), P_(int64_t, D_NEXT), P_(int64_t, D_SIDE), P_(int64_t, D_VT_CAND), P_(int64_t, D_VT_RIDX),
      P_(int64_t, D_VT_NTOK), P_(int64_t, D_VT_NSIB), P_(int64_t, D_VT_PARENT), P_(int64_t, D_VT_NODE),
      P_(int64_t, D_CC_OUT), Port<const float>(), Port<const int64_t>(), c);
#undef P_
  return 0;
}
}  // namespace

// iscalars: B, K, D, H, Vt, Vh, N, M, I, S_max, Tcap, capkv, cappack, use_hot, hid_code, w_code, vn_final
int parse_draft_cfg(const int64_t* is, DraftCfg& c) {
  c.B = is[0]; c.K = is[1]; c.D = is[2]; c.H = is[3]; c.Vt = is[4]; c.Vh = is[5]; c.N = is[6]; c.M = is[7];
  c.I = is[8]; c.S_max = is[9]; c.Tcap = is[10]; c.capkv = is[11]; c.cappack = is[12];
  c.use_hot = static_cast<int>(is[13]); c.hid_code = static_cast<int>(is[14]); c.w_code = static_cast<int>(is[15]);
  c.vn_final = is[16];
  c.use_scale = (c.w_code == 1 || c.w_code == 3);  // int8, int4: per-row f32 scale
  c.bypass_lm_head = 0;
  if (c.B < 1 || c.B > E4F_MAX_B || c.K < 1 || c.K > E4F_MAX_K || c.D < 1 || c.D > E4F_MAX_D || c.H > E4F_MAX_H ||
      c.Vt > E4F_MAX_VH || c.N > E4F_MAX_N || c.M > E4F_MAX_M || c.I > E4F_MAX_I)
    return -2;
  return 0;
}

// The instance the synthesis top fused_draft_top calls (draft_pipeline_synth.cpp): the contract's
// deployment precisions ([fpga.model] hidden bf16, [fpga.fused] int4 LM head, packed two per byte, with per-row f32 scale).
template int draft_pipeline_top<uint16_t, i4x2, uint8_t>(
    int, Port<const int64_t>, Port<const uint16_t>, Port<const uint8_t>, Port<const uint8_t>, Port<const uint8_t>,
    Port<const uint8_t>, Port<const float>, Port<float>,
    Port<const int64_t>, int64_t, int64_t, int64_t, Port<const int64_t>, Port<const int64_t>, Port<const int32_t>,
    Port<const int64_t>, Port<uint16_t>, Port<int64_t>, Port<float>, Port<int32_t>, Port<int32_t>, Port<int32_t>,
    Port<int64_t>, Port<int32_t>, Port<int32_t>, Port<uint8_t>, Port<int64_t>, Port<float>, Port<int64_t>,
    Port<int64_t>, Port<int64_t>, Port<int64_t>, Port<int64_t>, Port<int64_t>, Port<int64_t>, Port<int64_t>,
    Port<int64_t>, Port<int64_t>, Port<int64_t>, Port<const float>, Port<const int64_t>, const DraftCfg&);

}  // namespace e4f

extern "C" const char* eagle4_fused_draft_ports() { return e4f::kFusedPorts; }

extern "C" int eagle4_fused_draft_step(EAGLE4_CAPI_PARAMS) {
  eagle4::capi::Ctx x{"fused_draft_step", tensors, shapes, elem_bytes, errbuf, errlen};
  e4f::perf::reset();  // the cycle model reads this call's loop trips
  e4f::DraftCfg c;
  if (e4f::parse_draft_cfg(iscalars, c) != 0)
    return x.fail(eagle4::capi::E_BOUND, "a size exceeds a compile-time bound of e4f_bounds.h");
  (void)fscalars;
  c.bypass_lm_head = x.present(e4f::D_CAND_P) && x.present(e4f::D_CAND_T);
  const int64_t max_rows = c.B * c.K;
  if (!c.bypass_lm_head && max_rows > E4F_LM_ROWS && (!x.present(e4f::D_SPILL) || x.numel(e4f::D_SPILL) < (max_rows - E4F_LM_ROWS) * c.Vt))
    return x.fail(eagle4::capi::E_ARG, "lm_spill must hold (B*K - %d) * Vt floats", E4F_LM_ROWS);
  // the on-chip tree state keeps token ids in 32-bit words: refuse any that does not fit
  const int tok_slots[3] = {e4f::D_ROOT, e4f::D_HOT, e4f::D_CAND_T};
  const char* tok_names[3] = {"root_token", "hot_token_id", "cand_t"};
  for (int s = 0; s < 3; ++s) {
    if (!x.present(tok_slots[s])) continue;
    const int64_t* v = x.ptr<const int64_t>(tok_slots[s]);
    for (int64_t i = 0; i < x.numel(tok_slots[s]); ++i)
      if (v[i] > INT32_MAX || v[i] < INT32_MIN)
        return x.fail(eagle4::capi::E_PRECONDITION, "%s[%lld] = %lld does not fit the design's 32-bit token words",
                      tok_names[s], (long long)i, (long long)v[i]);
  }
  const int eh = elem_bytes[e4f::D_HIDDEN];
  if (eh == 2) {
    if (c.w_code == 1) return e4f::run_fused<uint16_t, int8_t>(x, c, counters);
    if (c.w_code == 3) return e4f::run_fused<uint16_t, e4f::i4x2>(x, c, counters);
    if (c.w_code == 2) return e4f::run_fused<uint16_t, uint16_t>(x, c, counters);
    return e4f::run_fused<uint16_t, float>(x, c, counters);
  }
  if (c.w_code == 1) return e4f::run_fused<uint32_t, int8_t>(x, c, counters);
  if (c.w_code == 3) return e4f::run_fused<uint32_t, e4f::i4x2>(x, c, counters);
  if (c.w_code == 2) return e4f::run_fused<uint32_t, uint16_t>(x, c, counters);
  return e4f::run_fused<uint32_t, float>(x, c, counters);
}

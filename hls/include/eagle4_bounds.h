// Compile-time bounds of the EAGLE4 HLS kernels (KERNELS.md §0.4).
//
// Every on-chip array and every loop trip count of the synthesizable tops is sized from these.
// Each bound is a macro that a build may override with -D (e.g. -DEAGLE4_MAX_NODE_COUNT=2048),
// mirrored by a constexpr in namespace eagle4 for use in code. The C-ABI wrappers
// (<key>_capi.cpp) check every run-time size against them and refuse the call (negative return,
// message naming the argument and the bound) instead of overrunning an on-chip buffer.
#ifndef EAGLE4_BOUNDS_H
#define EAGLE4_BOUNDS_H

#include <cstdint>

#ifndef EAGLE4_MAX_BATCH_SIZE
#define EAGLE4_MAX_BATCH_SIZE 128  // B (MAX_BATCH_SIZE, E-PLAN)
#endif
#ifndef EAGLE4_MAX_CANDIDATES
#define EAGLE4_MAX_CANDIDATES 64  // C = W*K per request (E-HLS); also the bitonic network width
#endif
#ifndef EAGLE4_MAX_TOP_K
#define EAGLE4_MAX_TOP_K 10  // K (node_top_k)
#endif
#ifndef EAGLE4_MAX_TREE_WIDTH
#define EAGLE4_MAX_TREE_WIDTH 64  // W (tree_width); W*K <= MAX_CANDIDATES is checked separately
#endif
#ifndef EAGLE4_MAX_HIDDEN
#define EAGLE4_MAX_HIDDEN 4096  // H
#endif
#ifndef EAGLE4_MAX_NODE_COUNT
#define EAGLE4_MAX_NODE_COUNT 4096  // N (max_node_count): HBM state rows; nothing N-sized is on chip
#endif
#ifndef EAGLE4_MAX_VERIFY
#define EAGLE4_MAX_VERIFY 128  // M (max_verify_num), also Q of the verify tree
#endif
#ifndef EAGLE4_MAX_INPUT_SIZE
#define EAGLE4_MAX_INPUT_SIZE 1024  // I (max_input_size, draft mask capacity)
#endif
#ifndef EAGLE4_MAX_TREE_TOKENS
#define EAGLE4_MAX_TREE_TOKENS 1024  // T of K4 (verify: Q <= M; draft: Ic-1 <= I)
#endif
#ifndef EAGLE4_MAX_SEQ_LEN
#define EAGLE4_MAX_SEQ_LEN 262144  // L_b and S_max (req_to_token row stride)
#endif
#ifndef EAGLE4_MAX_ACCEPT_LEN
#define EAGLE4_MAX_ACCEPT_LEN 64  // S = D_max + 1 (accept row length)
#endif
#ifndef EAGLE4_MAX_VOCAB
#define EAGLE4_MAX_VOCAB 262144  // V (K5/K6)
#endif
#ifndef EAGLE4_MAX_HOT_VOCAB
#define EAGLE4_MAX_HOT_VOCAB 262144  // Vh (hot_token_id table length; read by index, never stored on chip)
#endif

namespace eagle4 {
constexpr int MAX_BATCH_SIZE = EAGLE4_MAX_BATCH_SIZE;
constexpr int MAX_CANDIDATES = EAGLE4_MAX_CANDIDATES;
constexpr int MAX_TOP_K = EAGLE4_MAX_TOP_K;
constexpr int MAX_TREE_WIDTH = EAGLE4_MAX_TREE_WIDTH;
constexpr int MAX_HIDDEN = EAGLE4_MAX_HIDDEN;
constexpr int MAX_NODE_COUNT = EAGLE4_MAX_NODE_COUNT;
constexpr int MAX_VERIFY = EAGLE4_MAX_VERIFY;
constexpr int MAX_INPUT_SIZE = EAGLE4_MAX_INPUT_SIZE;
constexpr int MAX_TREE_TOKENS = EAGLE4_MAX_TREE_TOKENS;
constexpr int MAX_SEQ_LEN = EAGLE4_MAX_SEQ_LEN;
constexpr int MAX_ACCEPT_LEN = EAGLE4_MAX_ACCEPT_LEN;
constexpr int MAX_VOCAB = EAGLE4_MAX_VOCAB;
constexpr int MAX_HOT_VOCAB = EAGLE4_MAX_HOT_VOCAB;

// Width of the K1 bitonic network: MAX_CANDIDATES rounded up to a power of two.
constexpr int pow2_ceil(int x) { return x <= 1 ? 1 : 2 * pow2_ceil((x + 1) / 2); }
constexpr int log2_ceil(int x) { return x <= 1 ? 0 : 1 + log2_ceil((x + 1) / 2); }
constexpr int SORT_LANES = pow2_ceil(MAX_CANDIDATES);
constexpr int SORT_LOG2 = log2_ceil(SORT_LANES);

static_assert(MAX_BATCH_SIZE >= 1 && MAX_CANDIDATES >= 1 && MAX_TOP_K >= 1, "bounds must be positive");
static_assert(MAX_TOP_K <= MAX_CANDIDATES, "K <= C");
static_assert((SORT_LANES & (SORT_LANES - 1)) == 0 && SORT_LANES >= MAX_CANDIDATES, "sort lanes");
}  // namespace eagle4

#endif  // EAGLE4_BOUNDS_H

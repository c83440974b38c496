// Compile-time bounds of K7 update_verify (KERNELS.md §0.4, §7), taken from the shared
// hls/include/eagle4_bounds.h (override there with -D).
#ifndef EAGLE4_UPDATE_VERIFY_BOUNDS_H
#define EAGLE4_UPDATE_VERIFY_BOUNDS_H

#include "eagle4_bounds.h"

namespace eagle4 {
namespace k7 {
constexpr int MAX_BATCH = ::eagle4::MAX_BATCH_SIZE;   // B
constexpr int MAX_VERIFY = ::eagle4::MAX_VERIFY;      // Q
constexpr int MAX_ACCEPT = ::eagle4::MAX_ACCEPT_LEN;  // S = D_max + 1
constexpr int MAX_HIDDEN = ::eagle4::MAX_HIDDEN;      // H
constexpr int64_t MAX_SEQ_LEN = ::eagle4::MAX_SEQ_LEN;  // S_max (req_to_token row stride)
// hidden rows are bit-copied as 16-bit words: H * E_h / 2 words per row (E_h = 2 or 4)
constexpr int MAX_HIDDEN_WORDS = 2 * MAX_HIDDEN;
constexpr int HIDDEN_BEAT = 32;  // half-words per 512-bit beat of the hidden-row copy
constexpr int MAX_POSITIONS = MAX_BATCH * MAX_VERIFY;  // B*Q (evict mask kept on chip)
}  // namespace k7
}  // namespace eagle4

#endif  // EAGLE4_UPDATE_VERIFY_BOUNDS_H

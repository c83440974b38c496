// K5 convert_logits_to_probas (KERNELS.md §5): argmax, greedy test, temperature softmax.
#ifndef EAGLE4_LOGITS_TO_PROBAS_HPP
#define EAGLE4_LOGITS_TO_PROBAS_HPP

#include <cstdint>

#include "eagle4_port.h"
#include "logits_to_probas_bounds.h"

// logits [R, V] f32 (R = B*G), temperatures [B] f32 -> probas [R, V] f32 (only when
// write_probas), argmax_ids [R] i64, is_greedy [B] u8.
// Bounds (checked by the caller, e.g. the C-sim wrapper): 1 <= B <= k5::MAX_BATCH,
// 1 <= G <= k5::MAX_ROWS_PER_REQ, 1 <= V <= k5::MAX_VOCAB.
void logits_to_probas_top(PORT(const float) logits, PORT(const float) temperatures, PORT(float) probas,
                          PORT(int64_t) argmax_ids, PORT(uint8_t) is_greedy, int B, int G, int V,
                          bool write_probas);

#endif  // EAGLE4_LOGITS_TO_PROBAS_HPP

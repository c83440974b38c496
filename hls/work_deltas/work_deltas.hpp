// K3 calculate_work_deltas (KERNELS.md §3, decisions D7, D25): synthesizable top.
#ifndef EAGLE4_WORK_DELTAS_HPP
#define EAGLE4_WORK_DELTAS_HPP

#include "eagle4_bounds.h"
#include "eagle4_port.h"

// work_scores [B, row_stride] f32 (read: [0, n0+K) of each row, once);
// work_deltas [K+1] f32 (out); per_req_deltas [B, K+1] f32 (out, only when write_per_req).
void work_deltas_top(PORT(const float) work_scores, int batch_size, int node_count, int node_top_k,
                     int verify_num, int row_stride, PORT(float) work_deltas, PORT(float) per_req_deltas,
                     bool write_per_req);

#endif  // EAGLE4_WORK_DELTAS_HPP

// Compile-time bounds of the fused EAGLE4 dataflow designs (hls/fused/).
// Every on-chip array of the fused designs is sized by these; what they cost in BRAM/URAM of the device
// ([fpga].bram_mb / uram_mb) is measured from the synthesis-mode build by eagle4.budget.onchip
// (reports/onchip_budget.csv, gated by tests/gates/test_onchip_budget.py).
#ifndef E4F_BOUNDS_H
#define E4F_BOUNDS_H

#ifndef E4F_MAX_B
#define E4F_MAX_B 128      // requests per batch (MAX_BATCH_SIZE)
#endif
#ifndef E4F_MAX_K
#define E4F_MAX_K 10       // node_top_k
#endif
#define E4F_MAX_C 64       // W*K candidates per layer
#ifndef E4F_MAX_N
#define E4F_MAX_N 1024     // max_node_count: cumulative draft-tree nodes kept on-chip
#endif
#define E4F_MAX_M 128      // max_verify_num
#ifndef E4F_MAX_I
#define E4F_MAX_I 64       // max_input_size (draft-mask columns)
#endif
#define E4F_MAX_D 16       // draft layers per draft step
#define E4F_MAX_Q 128      // verify tokens per request
#define E4F_MAX_S 17       // accept row length D_max + 1
#ifndef E4F_MAX_H
#define E4F_MAX_H 4096     // hidden size
#endif
#define E4F_MAX_ROWS (E4F_MAX_B * E4F_MAX_K)  // frontier hidden rows held on-chip (one weight pass per layer)
#ifndef E4F_MAX_VH
#define E4F_MAX_VH 32768   // hot vocabulary: one logits tile row kept on-chip
#endif
#ifndef E4F_LM_ROWS
#define E4F_LM_ROWS 256    // LM-head rows per weight pass (B*W tile; larger batches re-stream the weights)
#endif
#define E4F_MAX_ROWS (E4F_MAX_B * E4F_MAX_K)  // frontier hidden rows held on-chip (one weight pass per layer)
#ifndef E4F_MAX_V
#define E4F_MAX_V 262144   // verify vocabulary: one logits row kept on-chip by fused K5
#endif

#endif

// Testbench of K2: tb_update_draft_state <dump.npz> -> exit 0 parity, 1 mismatch, 2 bad file.
#include "tb/tb_driver.hpp"

extern "C" int eagle4_update_draft_state(EAGLE4_CAPI_PARAMS);

static const eagle4::tb::KernelAbi kAbi{
    "update_draft_state",
    {"topk_probas", "topk_tokens", "sorted_scores", "sorted_indexs", "parent_indexs", "topk_indexs",
     "input_tree_mask", "cumu_tokens", "cumu_scores", "cumu_deltas", "prev_indexs", "next_indexs", "side_indexs",
     "output_scores", "output_tokens", "work_scores", "sort_scores", "output_tree_mask"},
    {"batch_size", "node_top_k", "tree_width", "input_count", "cumu_count", "verify_num", "curr_depth",
     "max_input_size", "max_node_count", "max_verify_num"},
    {},
    &eagle4_update_draft_state};

int main(int argc, char** argv) { return eagle4::tb::run_main(kAbi, argc, argv); }

// Testbench of K1: tb_draft_tree_score <dump.npz> -> exit 0 parity, 1 mismatch, 2 bad file.
#include "tb/tb_driver.hpp"

extern "C" int eagle4_draft_tree_score(EAGLE4_CAPI_PARAMS);

static const eagle4::tb::KernelAbi kAbi{
    "draft_tree_score",
    {"topk_probas_sampling", "topk_tokens_sampling", "last_layer_scores", "curr_layer_scores",
     "sort_layer_scores", "sort_layer_indices", "cache_topk_indices", "parent_indices_in_layer",
     "input_hidden_states", "output_hidden_states", "hot_token_id", "output_tokens"},
    {"batch_size", "node_top_k", "tree_width", "cumu_count", "use_hot_token_id"},
    {},
    &eagle4_draft_tree_score};

int main(int argc, char** argv) { return eagle4::tb::run_main(kAbi, argc, argv); }

// Testbench of K4: tb_tree_mask <dump.npz> -> exit 0 parity, 1 mismatch, 2 bad file.
#include "tb/tb_driver.hpp"

extern "C" int eagle4_tree_mask(EAGLE4_CAPI_PARAMS);

static const eagle4::tb::KernelAbi kAbi{
    "tree_mask",
    {"seq_lens", "req_pool_indices", "req_to_token", "tree_cache_locs", "tree_parent", "qo_indptr", "kv_indptr",
     "kv_indices", "positions", "mask_indptr_bits", "mask_indptr_bytes", "packed_mask", "mask_bool"},
    {"S_max", "B", "T", "Q", "write_bool_mask"},
    {},
    &eagle4_tree_mask};

int main(int argc, char** argv) { return eagle4::tb::run_main(kAbi, argc, argv); }

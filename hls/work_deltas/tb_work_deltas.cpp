// Testbench of K3: tb_work_deltas <dump.npz> -> exit 0 parity, 1 mismatch, 2 bad file.
#include "tb/tb_driver.hpp"

extern "C" int eagle4_work_deltas(EAGLE4_CAPI_PARAMS);

static const eagle4::tb::KernelAbi kAbi{
    "work_deltas",
    {"work_scores", "work_deltas", "per_req_deltas"},
    {"batch_size", "node_count", "node_top_k", "verify_num", "row_stride"},
    {},
    &eagle4_work_deltas};

int main(int argc, char** argv) { return eagle4::tb::run_main(kAbi, argc, argv); }

// Testbench of K6: `tb_reject_sample <dump.npz>` (exit 0 parity, 1 mismatch, 2 bad file).
// Build: g++ -std=c++17 -O2 -ffp-contract=off -Ihls/include hls/reject_sample/reject_sample.cpp
//        hls/reject_sample/reject_sample_capi.cpp hls/reject_sample/tb_reject_sample.cpp
// Every output is EXACT (§6.7).
#include "tb/tb_driver.hpp"

extern "C" int eagle4_reject_sample(EAGLE4_CAPI_PARAMS);

int main(int argc, char** argv) {
  static const eagle4::tb::KernelAbi kAbi{
      "reject_sample",
      {"candidates", "retrive_index", "retrive_next_token", "retrive_next_sibling", "target_probs", "target_predict",
       "is_greedy", "coins", "final_coins", "predicts", "accept_index", "accept_length"},
      {"B", "Q", "S", "V"},
      {"threshold_single", "threshold_acc"},
      &eagle4_reject_sample};
  return eagle4::tb::run_main(kAbi, argc, argv);
}

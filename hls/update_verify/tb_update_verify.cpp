// Testbench of K7: `tb_update_verify <dump.npz>` (exit 0 parity, 1 mismatch, 2 bad file).
// Build: g++ -std=c++17 -O2 -ffp-contract=off -Ihls/include hls/update_verify/update_verify.cpp
//        hls/update_verify/update_verify_capi.cpp hls/update_verify/tb_update_verify.cpp
// Every output is EXACT (§7.4); next_hidden is compared on its first N_unf = next_indptr[U] rows
// only (rows past N_unf are neither written nor compared).
#include "tb/tb_driver.hpp"

extern "C" int eagle4_update_verify(EAGLE4_CAPI_PARAMS);

namespace {

int64_t next_hidden_hook(const std::string& name, const eagle4::tb::NpyArray& e, const std::vector<uint8_t>& actual,
                         const std::string& logical, const eagle4::tb::Json& params, const eagle4::tb::Npz& npz) {
  (void)params;
  if (name != "next_hidden") return -1;
  const eagle4::tb::NpyArray& cnt = npz.at("expected_unfinished_count");
  const eagle4::tb::NpyArray& ptr = npz.at("expected_next_indptr");
  int32_t U, n_unf;
  std::memcpy(&U, cnt.data.data(), 4);
  std::memcpy(&n_unf, &ptr.data[size_t(4 * U)], 4);
  const int64_t row = e.shape.size() > 1 ? e.shape[1] : 1;
  return eagle4::tb::compare_bits("next_hidden", e.data.data(), actual.data(), int64_t(n_unf) * row, e.itemsize,
                                  eagle4::tb::float_kind(logical));
}

}  // namespace

int main(int argc, char** argv) {
  static const eagle4::tb::KernelAbi kAbi{
      "update_verify",
      {"accept_index", "accept_length", "predicts", "finish_pos", "seq_lens", "req_pool_indices", "req_to_token",
       "out_cache_loc", "hidden_states", "verify_node_ids", "accept_index_out", "accept_length_out", "accept_indptr",
       "accepted_flat", "verified_id", "evict_mask", "free_slots", "seq_lens_out", "accepted_node_ids",
       "unfinished_count", "unfinished_index", "next_accept_length", "next_indptr", "next_verified_id", "next_hidden",
       "next_positions", "next_seq_lens", "next_req_pool_indices", "next_root_token", "next_last_flat"},
      {"B", "Q", "S", "H", "S_max"},
      {},
      &eagle4_update_verify};
  return eagle4::tb::run_main(kAbi, argc, argv, next_hidden_hook);
}

// Testbench of K5: `tb_logits_to_probas <dump.npz>` (exit 0 parity, 1 mismatch, 2 bad file).
// Build: g++ -std=c++17 -O2 -ffp-contract=off -Ihls/include hls/logits_to_probas/logits_to_probas.cpp
//        hls/logits_to_probas/logits_to_probas_capi.cpp hls/logits_to_probas/tb_logits_to_probas.cpp
//
// probas follows §5.5 (the comparator of src/eagle4/compare.py): greedy rows and an untouched
// buffer (write_probas = false) EXACT; sampling rows TOL (rtol 5e-5, atol 1e-10; NaN meets NaN,
// an infinity meets the same infinity) and each finite sampling row sums to 1 within 1e-4.
// Every other output is bitwise. f16/bf16 logits in the dump are upcast exactly to f32 before the
// call, as the csim backend does.
#include <cmath>
#include <cstring>

#include "tb/tb_driver.hpp"

extern "C" int eagle4_logits_to_probas(EAGLE4_CAPI_PARAMS);

namespace {

std::string g_logit_dtype = "float32";

float half_bits_to_f32(uint16_t h, bool bf16) {
  if (bf16) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const int exp = (h >> 10) & 0x1F;
  const uint32_t man = h & 0x3FF;
  uint32_t u;
  if (exp == 0x1F) {
    u = sign | 0x7F800000u | (man << 13);
  } else if (exp == 0) {
    // zero or subnormal: value = man * 2^-24 (exact in f32)
    float f = std::ldexp(float(man), -24);
    std::memcpy(&u, &f, 4);
    u |= sign;
  } else {
    u = sign | (uint32_t(exp - 15 + 127) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Upcast 2-byte logits to f32, then call the wrapper (logits: slot 0).
int capi_upcast(EAGLE4_CAPI_PARAMS) {
  if (elem_bytes[0] != 2 || !tensors[0]) {
    return eagle4_logits_to_probas(tensors, shapes, elem_bytes, iscalars, fscalars, counters, errbuf, errlen);
  }
  const int64_t n = shapes[0] * shapes[1] * shapes[2] * shapes[3];
  std::vector<float> up(static_cast<size_t>(n));
  const uint16_t* src = static_cast<const uint16_t*>(tensors[0]);
  const bool bf16 = g_logit_dtype == "bfloat16";
  for (int64_t i = 0; i < n; ++i) up[size_t(i)] = half_bits_to_f32(src[i], bf16);
  std::vector<void*> t(tensors, tensors + 5);
  t[0] = up.data();
  std::vector<int32_t> eb(elem_bytes, elem_bytes + 5);
  eb[0] = 4;
  return eagle4_logits_to_probas(t.data(), shapes, eb.data(), iscalars, fscalars, counters, errbuf, errlen);
}

int64_t probas_hook(const std::string& name, const eagle4::tb::NpyArray& e, const std::vector<uint8_t>& actual,
                    const std::string& logical, const eagle4::tb::Json& params, const eagle4::tb::Npz& npz) {
  (void)logical;
  if (name != "probas") return -1;
  if (params.has("write_probas") && params["write_probas"].as_int() == 0) return -1;  // untouched: bitwise
  const eagle4::tb::NpyArray& temps = npz.at("temperatures");
  const int64_t G = params["rows_per_req"].as_int();
  const int64_t R = e.shape[0], V = e.shape[1];
  int64_t bad = 0, reported = 0;
  auto report = [&](const char* what, int64_t r, int64_t v, double ev, double av) {
    if (reported++ < 8) std::printf("  MISMATCH probas[%lld, %lld] (%s): expected %.9g, got %.9g\n",
                                    (long long)r, (long long)v, what, ev, av);
  };
  for (int64_t r = 0; r < R; ++r) {
    float t;
    std::memcpy(&t, &temps.data[size_t(4 * (r / G))], 4);
    const bool greedy = t < 1e-6f;
    const uint8_t* erow = &e.data[size_t(4 * r * V)];
    const uint8_t* arow = &actual[size_t(4 * r * V)];
    if (greedy) {
      bad += eagle4::tb::compare_bits("probas(greedy row " + std::to_string(r) + ")", erow, arow, V, 4,
                                      eagle4::tb::FloatKind::F32);
      continue;
    }
    double sum = 0.0;
    bool finite_row = true;
    for (int64_t v = 0; v < V; ++v) {
      float ef, af;
      std::memcpy(&ef, erow + 4 * v, 4);
      std::memcpy(&af, arow + 4 * v, 4);
      if (std::isfinite(af)) sum += double(af);
      else finite_row = false;
      bool ok;
      if (std::isfinite(ef)) ok = std::isfinite(af) && std::fabs(double(af) - double(ef)) <= 1e-10 + 5e-5 * std::fabs(double(ef));
      else if (std::isnan(ef)) ok = std::isnan(af);
      else ok = ef == af;
      if (!ok) {
        ++bad;
        report("TOL", r, v, ef, af);
      }
    }
    if (finite_row && std::fabs(sum - 1.0) > 1e-4) {
      ++bad;
      std::printf("  MISMATCH probas row %lld sums to %.9g (|sum - 1| > 1e-4)\n", (long long)r, sum);
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2) {
    try {  // learn the logits' logical dtype (the driver reports a bad file itself)
      eagle4::tb::Npz z = eagle4::tb::load_npz(argv[1]);
      eagle4::tb::Json meta = eagle4::tb::parse_json(z.meta_json());
      if (meta.has("dtypes") && meta["dtypes"].has("logits")) g_logit_dtype = meta["dtypes"]["logits"].as_string();
    } catch (const std::exception&) {
    }
  }
  static const eagle4::tb::KernelAbi kAbi{
      "logits_to_probas",
      {"logits", "temperatures", "probas", "argmax_ids", "is_greedy"},
      {"rows_per_req", "write_probas"},
      {},
      &capi_upcast};
  return eagle4::tb::run_main(kAbi, argc, argv, probas_hook);
}

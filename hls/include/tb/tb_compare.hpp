// Testbench-only: bitwise comparison of an output buffer against its expected array, following
// KERNELS.md §0.3 EXACT parity (bit patterns equal, except that any NaN equals any NaN).
// Reports the first mismatches with index, expected and actual bit patterns.
#ifndef EAGLE4_TB_COMPARE_HPP
#define EAGLE4_TB_COMPARE_HPP

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace eagle4 {
namespace tb {

enum class FloatKind { None, F16, BF16, F32, F64 };

// Logical dtype name (numpy / meta_json "dtypes") -> float kind.
inline FloatKind float_kind(const std::string& logical) {
  if (logical == "float32") return FloatKind::F32;
  if (logical == "float16") return FloatKind::F16;
  if (logical == "bfloat16") return FloatKind::BF16;
  if (logical == "float64") return FloatKind::F64;
  return FloatKind::None;
}

inline uint64_t load_bits(const uint8_t* p, int eb) {
  uint64_t v = 0;
  std::memcpy(&v, p, size_t(eb));  // little-endian host
  return v;
}

inline bool is_nan_bits(uint64_t v, FloatKind k) {
  switch (k) {
    case FloatKind::F16: return (v & 0x7C00u) == 0x7C00u && (v & 0x03FFu) != 0;
    case FloatKind::BF16: return (v & 0x7F80u) == 0x7F80u && (v & 0x007Fu) != 0;
    case FloatKind::F32: return (v & 0x7F800000u) == 0x7F800000u && (v & 0x007FFFFFu) != 0;
    case FloatKind::F64:
      return (v & 0x7FF0000000000000ull) == 0x7FF0000000000000ull && (v & 0x000FFFFFFFFFFFFFull) != 0;
    default: return false;
  }
}

inline std::string describe(uint64_t v, int eb, FloatKind k) {
  char buf[96];
  if (k == FloatKind::F32) {
    float f;
    uint32_t u = uint32_t(v);
    std::memcpy(&f, &u, 4);
    std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", double(f), u);
  } else if (k == FloatKind::F64) {
    double d;
    std::memcpy(&d, &v, 8);
    std::snprintf(buf, sizeof buf, "%.17g (0x%016llx)", d, (unsigned long long)v);
  } else if (k != FloatKind::None) {
    std::snprintf(buf, sizeof buf, "0x%04x", unsigned(v));
  } else {
    // signed integer view (bool / uint8 are small and non-negative anyway)
    int64_t s = eb == 8 ? int64_t(v) : eb == 4 ? int64_t(int32_t(v)) : eb == 2 ? int64_t(int16_t(v)) : int64_t(v);
    std::snprintf(buf, sizeof buf, "%lld", (long long)s);
  }
  return buf;
}

// Compare `count` elements of `eb` bytes. Prints up to `max_report` mismatches under `name`;
// returns the number of mismatching elements.
inline int64_t compare_bits(const std::string& name, const void* expected, const void* actual, int64_t count,
                            int eb, FloatKind kind, int max_report = 8, FILE* out = stdout) {
  const uint8_t* e = static_cast<const uint8_t*>(expected);
  const uint8_t* a = static_cast<const uint8_t*>(actual);
  int64_t bad = 0;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t ev = load_bits(e + i * eb, eb), av = load_bits(a + i * eb, eb);
    if (ev == av) continue;
    if (kind != FloatKind::None && is_nan_bits(ev, kind) && is_nan_bits(av, kind)) continue;
    if (bad < max_report)
      std::fprintf(out, "  MISMATCH %s[%lld]: expected %s, got %s\n", name.c_str(), (long long)i,
                   describe(ev, eb, kind).c_str(), describe(av, eb, kind).c_str());
    ++bad;
  }
  if (bad > max_report)
    std::fprintf(out, "  ... %lld more mismatches in %s\n", (long long)(bad - max_report), name.c_str());
  return bad;
}

}  // namespace tb
}  // namespace eagle4

#endif  // EAGLE4_TB_COMPARE_HPP

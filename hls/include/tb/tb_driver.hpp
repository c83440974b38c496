// Testbench-only: the generic `tb_<key> <dump.npz>` driver over the uniform C ABI.
//
// A kernel testbench declares its argument table (tensor names, int/bool scalar names and f32
// scalar names, each in src/eagle4/spec.py order) and its wrapper, then calls run_main:
//
//   static const eagle4::tb::KernelAbi kAbi{"work_deltas", {"work_scores", "work_deltas",
//       "per_req_deltas"}, {"batch_size", "node_count", "node_top_k", "verify_num", "row_stride"},
//       {}, &eagle4_work_deltas};
//   int main(int argc, char** argv) { return eagle4::tb::run_main(kAbi, argc, argv); }
//
// For each tensor: a pure input `<name>` is passed as stored; `initial_<name>` fills the buffer's
// prior contents; a pure output with only `expected_<name>` is allocated with the harness's
// poison value (NaN / -9 / 0xA5 / false, as eagle4.kernels.poison); a tensor without any entry is
// passed as NULL. After the call every `expected_<name>` is compared bitwise (NaN == NaN).
// Exit codes (like `csim_design -argv <dump>`): 0 parity, 1 mismatch (or the wrapper refused the
// call), 2 bad file or usage.
#ifndef EAGLE4_TB_DRIVER_HPP
#define EAGLE4_TB_DRIVER_HPP

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "eagle4_capi.h"
#include "tb/npz.hpp"
#include "tb/tb_compare.hpp"

namespace eagle4 {
namespace tb {

using CapiFn = int (*)(void* const*, const int64_t*, const int32_t*, const int64_t*, const float*,
                       ::eagle4::PortCounter*, char*, int64_t);

struct KernelAbi {
  const char* key;
  std::vector<std::string> tensors;   // every tensor argument, spec order
  std::vector<std::string> iscalars;  // int and bool scalars, spec order
  std::vector<std::string> fscalars;  // f32 scalars, spec order
  CapiFn fn;
};

// Optional per-output comparison override: return -1 to use the default bitwise compare, else
// the number of mismatches found (and print them).
using CompareHook = std::function<int64_t(const std::string& name, const NpyArray& expected,
                                          const std::vector<uint8_t>& actual, const std::string& logical,
                                          const Json& params, const Npz& npz)>;

inline std::string logical_dtype(const Json& meta, const std::string& entry, const NpyArray& a) {
  if (meta.has("dtypes") && meta["dtypes"].is_object() && meta["dtypes"].has(entry))
    return meta["dtypes"][entry].as_string();
  std::string k(1, a.kind);
  if (a.kind == 'f') return a.itemsize == 2 ? "float16" : a.itemsize == 4 ? "float32" : "float64";
  if (a.kind == 'b') return "bool";
  if (a.kind == 'i') return "int" + std::to_string(8 * a.itemsize);
  if (a.kind == 'u') return "uint" + std::to_string(8 * a.itemsize);
  return "?";
}

inline void fill_poison(std::vector<uint8_t>& buf, int eb, const std::string& logical) {
  FloatKind fk = float_kind(logical);
  uint64_t pat;
  if (logical == "bool") pat = 0;
  else if (logical == "uint8") pat = 0xA5;
  else if (fk == FloatKind::F32) pat = 0x7FC00000u;
  else if (fk == FloatKind::F16) pat = 0x7E00u;
  else if (fk == FloatKind::BF16) pat = 0x7FC0u;
  else if (fk == FloatKind::F64) pat = 0x7FF8000000000000ull;
  else pat = uint64_t(int64_t(-9));
  for (size_t i = 0; i + size_t(eb) <= buf.size(); i += size_t(eb)) std::memcpy(&buf[i], &pat, size_t(eb));
}

inline int run_main(const KernelAbi& abi, int argc, char** argv, CompareHook hook = nullptr) {
  const std::string prog = std::string("tb_") + abi.key;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <dump.npz>\n", prog.c_str());
    return 2;
  }
  const std::string path = argv[1];
  Npz npz;
  Json meta, params;
  try {
    npz = load_npz(path);
    meta = parse_json(npz.meta_json());
    if (!meta.is_object() || !meta.has("params") || !meta["params"].is_object())
      throw NpzError(path + ": meta_json must be an object with a 'params' object");
    params = meta["params"];
    if (meta.has("kernel") && meta["kernel"].as_string() != abi.key)
      throw NpzError(path + ": dump is for kernel '" + meta["kernel"].as_string() + "', not '" + abi.key + "'");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: BAD FILE: %s\n", prog.c_str(), e.what());
    return 2;
  }
  const std::string case_id = meta.has("case_id") && meta["case_id"].type == Json::String
                                  ? meta["case_id"].as_string() : path;

  const size_t nt = abi.tensors.size();
  std::vector<std::vector<uint8_t>> bufs(nt);
  std::vector<void*> ptrs(nt, nullptr);
  std::vector<int64_t> shapes(4 * nt, 1);
  std::vector<int32_t> ebytes(nt, 0);
  std::vector<std::string> logical(nt);
  std::vector<int64_t> isc;
  std::vector<float> fsc;
  try {
    int expected_count = 0;
    for (auto& kv : npz.arrays) {
      const std::string& k = kv.first;
      if (k == "meta_json") continue;
      std::string base = k.rfind("expected_", 0) == 0 ? k.substr(9) : k.rfind("initial_", 0) == 0 ? k.substr(8) : k;
      bool known = false;
      for (auto& t : abi.tensors) known |= (t == base);
      if (!known) throw NpzError(path + ": entry '" + k + "' names no tensor argument of " + abi.key);
      if (k.rfind("expected_", 0) == 0) ++expected_count;
    }
    if (!expected_count) throw NpzError(path + ": no expected_* entries to compare");
    for (size_t i = 0; i < nt; ++i) {
      const std::string& n = abi.tensors[i];
      const NpyArray* src = nullptr;
      std::string entry;
      if (npz.has(n)) entry = n;
      else if (npz.has("initial_" + n)) entry = "initial_" + n;
      else if (npz.has("expected_" + n)) entry = "expected_" + n;
      if (entry.empty()) {
        for (int d = 0; d < 4; ++d) shapes[4 * i + d] = 0;
        continue;
      }
      src = &npz.at(entry);
      if (src->shape.size() > 4) throw NpzError(path + ": " + entry + " has more than 4 dimensions");
      if (src->kind == 'U') throw NpzError(path + ": " + entry + " is a string array");
      logical[i] = logical_dtype(meta, entry, *src);
      for (size_t d = 0; d < src->shape.size(); ++d) shapes[4 * i + d] = src->shape[d];
      ebytes[i] = src->itemsize;
      bufs[i].resize(std::max<size_t>(src->data.size(), 1));
      if (entry.rfind("expected_", 0) == 0) fill_poison(bufs[i], src->itemsize, logical[i]);
      else if (!src->data.empty()) std::memcpy(bufs[i].data(), src->data.data(), src->data.size());
      ptrs[i] = bufs[i].data();
    }
    for (auto& s : abi.iscalars) {
      if (!params.has(s)) throw NpzError(path + ": meta_json params has no scalar '" + s + "'");
      isc.push_back(params[s].as_int());
    }
    for (auto& s : abi.fscalars) {
      if (!params.has(s)) throw NpzError(path + ": meta_json params has no scalar '" + s + "'");
      fsc.push_back(float(params[s].as_double()));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: BAD FILE: %s\n", prog.c_str(), e.what());
    return 2;
  }
  isc.push_back(0);  // never pass an empty vector's data()
  fsc.push_back(0.0f);

  std::vector<::eagle4::PortCounter> counters(nt);
  std::memset(counters.data(), 0, sizeof(::eagle4::PortCounter) * nt);
  char err[1024] = {0};
  int rc = abi.fn(ptrs.data(), shapes.data(), ebytes.data(), isc.data(), fsc.data(), counters.data(), err,
                  int64_t(sizeof err));
  if (rc != 0) {
    std::printf("%s: FAIL %s: the wrapper refused the call (code %d): %s\n", prog.c_str(), case_id.c_str(), rc, err);
    return 1;
  }

  int64_t total_bad = 0;
  for (size_t i = 0; i < nt; ++i) {
    const std::string& n = abi.tensors[i];
    if (!npz.has("expected_" + n)) continue;
    const NpyArray& e = npz.at("expected_" + n);
    std::string lg = logical_dtype(meta, "expected_" + n, e);
    if (!ptrs[i] || e.data.size() > bufs[i].size() || e.itemsize != ebytes[i]) {
      std::printf("  MISMATCH %s: expected %s '%s', the buffer does not match\n", n.c_str(), e.shape_str().c_str(),
                  e.descr.c_str());
      ++total_bad;
      continue;
    }
    int64_t bad = -1;
    if (hook) bad = hook(n, e, bufs[i], lg, params, npz);
    if (bad < 0) bad = compare_bits(n, e.data.data(), bufs[i].data(), e.numel(), e.itemsize, float_kind(lg));
    total_bad += bad;
  }
  std::printf("%s: %s %s\n", prog.c_str(), total_bad ? "FAIL" : "PASS", case_id.c_str());
#ifdef EAGLE4_CSIM_COUNTERS
  for (size_t i = 0; i < nt; ++i)
    if (ptrs[i])
      std::printf("  port %-28s read %10llu B  written %10llu B\n", abi.tensors[i].c_str(),
                  (unsigned long long)counters[i].bytes_read, (unsigned long long)counters[i].bytes_written);
#endif
  return total_bad ? 1 : 0;
}

}  // namespace tb
}  // namespace eagle4

#endif  // EAGLE4_TB_DRIVER_HPP

// Helpers for the uniform C-simulation ABI of every kernel wrapper (hls/<key>/<key>_capi.cpp):
//
//   extern "C" int eagle4_<key>(EAGLE4_CAPI_PARAMS);
//
// tensors[i] / shapes[4*i+d] / elem_bytes[i] / counters[i]: the i-th tensor argument in the spec
// order of src/eagle4/spec.py (optional ones included, NULL when absent; ndim <= 4 padded with 1);
// iscalars: the int and bool scalars in spec order; fscalars: the f32 scalars in spec order.
// Returns 0, or a negative code after writing "<key>: <argument> ... <bound>" into errbuf.
// C-simulation / testbench only: never part of the synthesized design.
#ifndef EAGLE4_CAPI_H
#define EAGLE4_CAPI_H

#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "eagle4_bounds.h"
#include "eagle4_port.h"

#ifndef EAGLE4_CSIM_COUNTERS
namespace eagle4 {
struct PortCounter {  // same layout as the counted build's (eagle4_port.h); unused without counters
  uint64_t bytes_read;
  uint64_t bytes_written;
};
}  // namespace eagle4
#endif

#define EAGLE4_CAPI_PARAMS                                                                          \
  void *const *tensors, const int64_t *shapes, const int32_t *elem_bytes, const int64_t *iscalars, \
      const float *fscalars, ::eagle4::PortCounter *counters, char *errbuf, int64_t errlen

namespace eagle4 {
namespace capi {

enum Code : int {
  OK = 0,
  E_PRECONDITION = -1,  // a KERNELS.md precondition is violated
  E_BOUND = -2,         // a run-time size exceeds a compile-time bound of eagle4_bounds.h
  E_SHAPE = -3,         // a buffer's shape/extent does not match the scalars
  E_ARG = -4,           // a required tensor is missing or has the wrong element size
};

struct Ctx {
  const char *kernel;
  void *const *tensors;
  const int64_t *shapes;
  const int32_t *elem_bytes;
  char *errbuf;
  int64_t errlen;

  bool present(int i) const { return tensors && tensors[i] != nullptr; }
  int64_t dim(int i, int d) const { return shapes[4 * i + d]; }
  int64_t numel(int i) const { return dim(i, 0) * dim(i, 1) * dim(i, 2) * dim(i, 3); }
  int esize(int i) const { return elem_bytes[i]; }
  template <typename T>
  T *ptr(int i) const { return static_cast<T *>(tensors[i]); }

  int fail(int code, const char *fmt, ...) const
#if defined(__GNUC__)
      __attribute__((format(printf, 3, 4)))
#endif
  {
    if (errbuf && errlen > 0) {
      int n = std::snprintf(errbuf, static_cast<size_t>(errlen), "%s: ", kernel);
      if (n < 0) n = 0;
      if (n < errlen) {
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(errbuf + n, static_cast<size_t>(errlen - n), fmt, ap);
        va_end(ap);
      }
    }
    return code;
  }

  // The tensor must be present, have element size `eb` (0: any) and exactly the dims d0..d3
  // (trailing dims padded with 1). Returns OK or the failure code.
  int tensor(int i, const char *name, int eb, int64_t d0, int64_t d1 = 1, int64_t d2 = 1,
             int64_t d3 = 1) const {
    if (!present(i)) return fail(E_ARG, "%s is required but was not given", name);
    if (eb && esize(i) != eb)
      return fail(E_ARG, "%s must have %d-byte elements, got %d", name, eb, esize(i));
    const int64_t want[4] = {d0, d1, d2, d3};
    for (int d = 0; d < 4; ++d) {
      if (dim(i, d) != want[d])
        return fail(E_SHAPE,
                    "%s must have shape (%lld, %lld, %lld, %lld) (padded with 1), got (%lld, %lld, "
                    "%lld, %lld)",
                    name, (long long)d0, (long long)d1, (long long)d2, (long long)d3,
                    (long long)dim(i, 0), (long long)dim(i, 1), (long long)dim(i, 2),
                    (long long)dim(i, 3));
    }
    return OK;
  }

  // A flat buffer (data-dependent length): at least `min_elems` elements.
  int flat_at_least(int i, const char *name, int eb, int64_t min_elems) const {
    if (!present(i)) return fail(E_ARG, "%s is required but was not given", name);
    if (eb && esize(i) != eb)
      return fail(E_ARG, "%s must have %d-byte elements, got %d", name, eb, esize(i));
    if (numel(i) < min_elems)
      return fail(E_SHAPE, "%s holds %lld elements, needs at least %lld", name, (long long)numel(i),
                  (long long)min_elems);
    return OK;
  }

  // lo <= v <= hi, else an error naming the argument, the bound and its macro.
  int range(const char *name, int64_t v, int64_t lo, int64_t hi, const char *bound_name,
            int code = E_PRECONDITION) const {
    if (v < lo || v > hi)
      return fail(code, "%s = %lld is outside [%lld, %lld] (%s)", name, (long long)v, (long long)lo,
                  (long long)hi, bound_name);
    return OK;
  }
};

inline Ctx make_ctx(const char *kernel, void *const *tensors, const int64_t *shapes,
                    const int32_t *elem_bytes, char *errbuf, int64_t errlen) {
  if (errbuf && errlen > 0) errbuf[0] = '\0';
  return Ctx{kernel, tensors, shapes, elem_bytes, errbuf, errlen};
}

}  // namespace capi
}  // namespace eagle4

// Evaluate a check; return its code from the enclosing function when it failed.
#define EAGLE4_TRY(expr)                 \
  do {                                   \
    int eagle4_rc_ = (expr);             \
    if (eagle4_rc_ != 0) return eagle4_rc_; \
  } while (0)

#endif  // EAGLE4_CAPI_H

// m_axi port convention of the EAGLE4 HLS kernels.
//
// Kernel tops take every HBM buffer as `PORT(T) name` (T may be const-qualified) and index it
// like a pointer. For synthesis PORT(T) is a plain `T*` (Vitis maps it to an m_axi port through
// the INTERFACE pragma). In C-simulation builds (EAGLE4_CSIM_COUNTERS defined) it is a
// CountedPort<T> that adds sizeof(T) to the port's read or write counter on every element access,
// so one call reports the bytes each port moved (the B_in/B_out of the budget sheet).
#ifndef EAGLE4_PORT_H
#define EAGLE4_PORT_H

#include <cstdint>

// EAGLE4_SYNTHESIS: the code Vitis synthesizes (set by Vitis' __SYNTHESIS__; the on-chip storage
// measurement, eagle4.budget.onchip, sets it directly because the hls4ml ap_types headers used by the
// g++ builds do not compile under __SYNTHESIS__).
#if defined(__SYNTHESIS__) && !defined(EAGLE4_SYNTHESIS)
#define EAGLE4_SYNTHESIS
#endif

// EAGLE4_HW_COUNTERS: a hardware build whose tops count their port bytes with the same counting ports
// as the C-sim (the counters block of eagle4_hw_counters.h is then filled on the board too).
#if defined(EAGLE4_HW_COUNTERS) && !defined(EAGLE4_CSIM_COUNTERS)
#define EAGLE4_CSIM_COUNTERS
#endif

#ifndef EAGLE4_CSIM_COUNTERS

#define PORT(T) T*
#define PORT_ARG(ptr, counters, slot) (ptr)

#else

#include <type_traits>

namespace eagle4 {

// Bytes read and written through one m_axi port during one kernel call.
struct PortCounter {
  uint64_t bytes_read;
  uint64_t bytes_written;
};

template <typename T>
class CountedPort {
 public:
  using Elem = typename std::remove_const<T>::type;

  class Ref {
   public:
    Ref(T* p, PortCounter* c) : p_(p), c_(c) {}
    operator Elem() const {
      if (c_) c_->bytes_read += sizeof(Elem);
      return *p_;
    }
    Ref& operator=(const Elem& v) {
      static_assert(!std::is_const<T>::value, "write through a read-only port");
      if (c_) c_->bytes_written += sizeof(Elem);
      *p_ = v;
      return *this;
    }
    Ref& operator=(const Ref& other) { return *this = static_cast<Elem>(other); }

   private:
    T* p_;
    PortCounter* c_;
  };

  CountedPort() : p_(nullptr), c_(nullptr) {}
  CountedPort(T* p, PortCounter* c) : p_(p), c_(c) {}
  Ref operator[](int64_t i) const { return Ref(p_ + i, c_); }
  CountedPort operator+(int64_t off) const { return CountedPort(p_ + off, c_); }
  explicit operator bool() const { return p_ != nullptr; }  // the fused designs' optional debug ports

 private:
  T* p_;
  PortCounter* c_;
};

template <typename T>
CountedPort<T> make_port(T* p, PortCounter* counters, int slot) {
  return CountedPort<T>(p, counters ? &counters[slot] : nullptr);
}

}  // namespace eagle4

#define PORT(T) ::eagle4::CountedPort<T>
// Used by the C ABI wrappers: wrap a raw pointer as the port counted in counters[slot].
#define PORT_ARG(ptr, counters, slot) ::eagle4::make_port((ptr), (counters), (slot))

#endif  // EAGLE4_CSIM_COUNTERS

// No null tests on ports: an m_axi port is an offset into device memory, not a pointer Vitis can compare
// with NULL. An optional port is advanced to a request's row only under the flag that says it is used
// (e.g. `write_bool_mask ? mask_bool + off : mask_bool`), so the C-sim never offsets an absent NULL port.

#endif  // EAGLE4_PORT_H

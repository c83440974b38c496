// Port helpers of the unfused reference chains (draft_unfused.cpp, verify_unfused.cpp), which call
// the per-kernel tops through counted ports.
#ifndef E4F_UNFUSED_PORTS_HPP
#define E4F_UNFUSED_PORTS_HPP

#include "eagle4_port.h"

namespace e4f {

template <class T>
using P = PORT(T);  // P<T>(): an absent port (NULL) in both build forms

// a read-only counted port (the kernel tops take PORT(const T) inputs)
template <class T>
PORT(const T) cport(const T* p, eagle4::PortCounter* cnt, int slot) {
  return PORT_ARG(p, cnt, slot);
}

}  // namespace e4f

#endif  // E4F_UNFUSED_PORTS_HPP

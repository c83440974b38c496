// hls::stream<T, DEPTH> for C-simulation with the hls4ml copy of Xilinx's hls_stream.h, which
// only has hls::stream<T>. Vitis HLS ships the two-parameter form itself; this shim is used only
// when the real header is absent (EAGLE4_HLS4ML_HEADERS is set by the C-sim build).
#ifndef EAGLE4_STREAM_H
#define EAGLE4_STREAM_H

#include "hls_stream.h"

#ifdef EAGLE4_HLS4ML_HEADERS
namespace eagle4 {
// DEPTH only sizes the FIFO in hardware; in C-sim the queue is unbounded, so depth
// violations are caught by the dataflow checker of a real Vitis csim, not here.
template <typename T, int DEPTH = 2>
class stream : public hls::stream<T> {
 public:
  stream() : hls::stream<T>() {}
  explicit stream(const char* name) : hls::stream<T>(name) {}
  static constexpr int depth = DEPTH;
};
}  // namespace eagle4
#define EAGLE4_STREAM(T, DEPTH) ::eagle4::stream<T, DEPTH>
#else
#define EAGLE4_STREAM(T, DEPTH) hls::stream<T, DEPTH>
#endif

#endif  // EAGLE4_STREAM_H

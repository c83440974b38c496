// The hardware counters block: what a top writes to its `e4_counters` buffer at the end of a run, so
// that C-simulation and hardware fill the same structure and the budget reads either.
//
// Layout (uint64 words; src/eagle4/backends/xrt_abi.py HEADER_WORDS mirrors it, a test checks both):
//   [0] magic      EAGLE4_HWC_MAGIC (a block written by this version)
//   [1] status     the top's return value (0 for void tops)
//   [2] aux        a scalar output of the top (K6 err_info), else 0
//   [3] n_ports    number of m_axi ports that follow
//   [4] cycles     cycles from start to done
//   [5] stall_read cycles a stage waited on an m_axi read
//   [6] stall_write  cycles a stage waited on an m_axi write response
//   [7] stall_stream cycles a stage waited on a full/empty internal stream
//   [8 + 2i], [9 + 2i]  bytes read / bytes written through port i (the top's argument order)
// A word that nothing counted holds EAGLE4_HWC_NOT_COUNTED (all ones), never 0.
//
// Who fills what:
// * C-sim (EAGLE4_CSIM_COUNTERS): the bytes per port come from the counting ports (eagle4_port.h);
//   cycles and stalls are NOT_COUNTED (a C-sim has no clock).
// * Hardware with EAGLE4_HW_COUNTERS: PORT(T) is the same counting port as in C-sim (eagle4_port.h), so
//   the synthesized top counts its own bytes in registers and writes them here. Cycles and stall classes
//   come from the platform's profiling monitors (v++ --profile.data / --profile.stall), which XRT reads;
//   the top leaves them NOT_COUNTED. (Not verified under Vitis here: no Vitis in this environment.)
// * Hardware without EAGLE4_HW_COUNTERS: every counter word is NOT_COUNTED.
// The xrt backend (eagle4.backends.xrt) needs nothing else: call eagle4::hwc::write_block at the end of
// the entry point with the port counters of the run.
#ifndef EAGLE4_HW_COUNTERS_H
#define EAGLE4_HW_COUNTERS_H

#include <cstdint>

#include "eagle4_port.h"

#define EAGLE4_HWC_MAGIC 0xE4C00001ull
#define EAGLE4_HWC_NOT_COUNTED (~0ull)

namespace eagle4 {
namespace hwc {

enum Word : int {
  W_MAGIC = 0,
  W_STATUS = 1,
  W_AUX = 2,
  W_N_PORTS = 3,
  W_CYCLES = 4,
  W_STALL_READ = 5,
  W_STALL_WRITE = 6,
  W_STALL_STREAM = 7,
  HEADER_WORDS = 8,
};

inline int block_words(int n_ports) { return HEADER_WORDS + 2 * n_ports; }

// Time words of one run (NOT_COUNTED where nothing measured them).
struct Times {
  uint64_t cycles = EAGLE4_HWC_NOT_COUNTED;
  uint64_t stall_read = EAGLE4_HWC_NOT_COUNTED;
  uint64_t stall_write = EAGLE4_HWC_NOT_COUNTED;
  uint64_t stall_stream = EAGLE4_HWC_NOT_COUNTED;
};

#ifdef EAGLE4_CSIM_COUNTERS
// Write the block: header, times, then bytes read/written of ports[0..n_ports) (counted builds).
inline void write_block(uint64_t* out, int64_t status, uint64_t aux, const PortCounter* ports, int n_ports,
                        const Times& t = Times()) {
  out[W_MAGIC] = EAGLE4_HWC_MAGIC;
  out[W_STATUS] = static_cast<uint64_t>(status);
  out[W_AUX] = aux;
  out[W_N_PORTS] = static_cast<uint64_t>(n_ports);
  out[W_CYCLES] = t.cycles;
  out[W_STALL_READ] = t.stall_read;
  out[W_STALL_WRITE] = t.stall_write;
  out[W_STALL_STREAM] = t.stall_stream;
  for (int i = 0; i < n_ports; ++i) {
    out[HEADER_WORDS + 2 * i] = ports[i].bytes_read;
    out[HEADER_WORDS + 2 * i + 1] = ports[i].bytes_written;
  }
}
#endif

// The block of a build that counts nothing (synthesis without EAGLE4_HW_COUNTERS).
inline void write_block_uncounted(uint64_t* out, int64_t status, uint64_t aux, int n_ports) {
  out[W_MAGIC] = EAGLE4_HWC_MAGIC;
  out[W_STATUS] = static_cast<uint64_t>(status);
  out[W_AUX] = aux;
  out[W_N_PORTS] = static_cast<uint64_t>(n_ports);
  for (int w = W_CYCLES; w < HEADER_WORDS + 2 * n_ports; ++w) out[w] = EAGLE4_HWC_NOT_COUNTED;
}

}  // namespace hwc
}  // namespace eagle4

#endif  // EAGLE4_HW_COUNTERS_H

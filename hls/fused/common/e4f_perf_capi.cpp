// C-sim only: the loop trip counters of the last fused entry call (hls/fused/common/e4f_perf.h), read by
// the cycle model (eagle4.budget.cycles). Each fused entry resets them when it starts.
#include "e4f_perf.h"

#define E4F_LOOP_NAME(id) #id ","
extern "C" const char* eagle4_fused_loop_names() { return E4F_LOOPS(E4F_LOOP_NAME); }
#undef E4F_LOOP_NAME

// Copies min(n, N_LOOPS) counters into out; returns N_LOOPS.
extern "C" int eagle4_fused_loop_trips(uint64_t* out, int n) {
  for (int i = 0; i < n && i < e4f::perf::N_LOOPS; ++i) out[i] = e4f::perf::trips()[i];
  return e4f::perf::N_LOOPS;
}

// The trips counted with E4F_EXPOSED on (a ping-pong producer's iterations that no consumer overlaps).
extern "C" int eagle4_fused_loop_exposed(uint64_t* out, int n) {
  for (int i = 0; i < n && i < e4f::perf::N_LOOPS; ++i) out[i] = e4f::perf::exposed()[i];
  return e4f::perf::N_LOOPS;
}

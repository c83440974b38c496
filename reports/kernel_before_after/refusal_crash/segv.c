// LD_PRELOAD: on SIGSEGV print the native backtrace (symbols where the dynamic table has them) and die
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
static void h(int s, siginfo_t* si, void* uc) {
  void* f[64]; int n = backtrace(f, 64);
  char m[128]; int k = 0; const char* t = "SIGSEGV, fault address ";
  write(2, t, strlen(t));
  unsigned long a = (unsigned long)si->si_addr; char hx[32]; int i = 0;
  do { hx[i++] = "0123456789abcdef"[a & 15]; a >>= 4; } while (a);
  while (i) m[k++] = hx[--i]; m[k++] = '\n'; write(2, m, k);
  backtrace_symbols_fd(f, n, 2);
  _exit(139);
}
__attribute__((constructor)) static void init(void) {
  struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  static char stk[1 << 16]; stack_t ss = {stk, 0, sizeof stk}; sigaltstack(&ss, 0);
  sigaction(SIGSEGV, &sa, 0);
}

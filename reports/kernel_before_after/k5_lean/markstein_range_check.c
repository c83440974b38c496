// CPU check of k5_div_rcp over the range k5_div_rcp_ok admits (gcc -O2 -ffp-contract=off markstein_range_check.c -lm):
// x / t as q = RN(x RN(1/t)), RN(q + RN(x - q t) RN(1/t)) (two FMAs), against IEEE x / t, for t in [2^-32, 2^32] and
// |x| in [2^-64, 2^64] (and NaN x), bit for bit (NaN against NaN). Temperatures: the range's ends, the floats next to
// them inside it, f32(1e-6) and the float below it, typical ones, and random ones over the range; logits: uniform over
// the range's bit patterns, both signs, its ends and the floats next to them, and uniform in [-64, 64].
// Printed on this machine: see markstein_range_check.txt.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
static float fromb(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t tob(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static uint64_t s = 88172645463325252ull;
static uint32_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (uint32_t)s; }
static long n = 0, bad = 0;
static void check(float a, float b, float y) {
  const float q0 = a * y, q = fmaf(fmaf(-q0, b, a), y, q0), r = a / b;
  ++n;
  if (tob(q) != tob(r) && !(isnan(q) && isnan(r))) {
    if (++bad < 8) printf("mismatch a=%a b=%a: %a against %a\n", a, b, q, r);
  }
}
int main(void) {
  const float tlo = 0x1p-32f, thi = 0x1p32f, xlo = 0x1p-64f, xhi = 0x1p64f;
  const float fixed[] = {tlo, thi, nextafterf(tlo, 1.f), nextafterf(thi, 0.f), 0x1.0c6f7ap-20f /* f32(1e-6) */,
                         0x1.0c6f78p-20f, 0.7f, 0.3f, 1.0f, 0.99999994f, 1.9999999f, 2e7f, 1e-6f * 3};
  const int nfixed = sizeof fixed / sizeof fixed[0];
  const float xends[] = {xlo, xhi, nextafterf(xlo, 1.f), nextafterf(xhi, 0.f)};
  for (int t = 0; t < 20000; ++t) {
    const float b = t < nfixed ? fixed[t] : fromb(tob(tlo) + rnd() % (tob(thi) - tob(tlo) + 1));
    const float y = 1.0f / b;
    for (int k = 0; k < 4; ++k) { check(xends[k], b, y); check(-xends[k], b, y); }
    check(NAN, b, y);
    for (int k = 0; k < 100000; ++k) {
      float a = fromb(tob(xlo) + rnd() % (tob(xhi) - tob(xlo) + 1));
      check(rnd() & 1 ? -a : a, b, y);
    }
    for (int k = 0; k < 100000; ++k) check(((int32_t)rnd()) * 0x1p-25f, b, y);  // [-64, 64]
  }
  printf("n=%ld bad=%ld\n", n, bad);
  return bad != 0;
}

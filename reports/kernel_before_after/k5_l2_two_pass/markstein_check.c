// CPU check of probe4.patch's division (gcc -O2 -ffp-contract=off markstein_check.c -lm): x / t as q = RN(x RN(1/t)),
// RN(q + RN(x - q t) RN(1/t)) (FMA), against IEEE x / t, for |x| in [1e-21, 1e30] and t in [1e-7, 1e7], the fallback
// elsewhere. Printed on this machine: n=798436312 fast=664677221 bad=0.
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
static float fromb(uint32_t u){float f; memcpy(&f,&u,4); return f;}
static uint32_t tob(float f){uint32_t u; memcpy(&u,&f,4); return u;}
static uint64_t s=88172645463325252ull; static uint32_t rnd(){s^=s<<13;s^=s>>7;s^=s<<17;return (uint32_t)s;}
int main(){
  long bad=0,n=0,fastn=0;
  uint32_t lo=tob(1e-21f), span=tob(1e30f)-tob(1e-21f);
  uint32_t tlo=tob(1e-7f), thi=tob(1e7f);
  float ts[]={1e-6f,0.7f,0.3f,1.0f,1e-7f,1e7f,0.99999994f,1.9999999f};
  for(int t=0;t<4000;t++){
    float b = t<8? ts[t] : fromb(tlo + rnd()%(thi-tlo+1));
    volatile float y = 1.0f/b;
    for(int k=0;k<100000;k++){
      float a = fromb(rnd()); if(isnan(a)) continue;
      float q;
      if ((tob(a)&0x7fffffffu) - lo <= span){ float q0=a*y; q=fmaf(fmaf(-q0,b,a),y,q0); fastn++; }
      else q = a/b;
      n++;
      if(q!=a/b && !(isnan(q)&&isnan(a/b))){bad++; if(bad<5) printf("a=%a b=%a\n",a,b);}
    }
    // dense near-typical logits
    for(int k=0;k<100000;k++){
      float a = fromb(tob(1e-21f) + rnd()%(tob(1e30f)-tob(1e-21f))); if(rnd()&1) a=-a;
      float q0=a*y; float q=fmaf(fmaf(-q0,b,a),y,q0); n++; fastn++;
      if(q!=a/b){bad++; if(bad<5) printf("a=%a b=%a\n",a,b);}
    }
  }
  printf("n=%ld fast=%ld bad=%ld\n",n,fastn,bad);
}

# The exact double-precision acceptance test of k6_pass_bound against numpy IEEE float32 division (run on the CPU;
# the reference for the "1.18 million triples, 0 bad" in README.md): python3 dp_test_check.py
import numpy as np
f32=np.float32; f64=np.float64
def div(x,t):
    with np.errstate(all='ignore'): return f32(f32(x)/f32(t))
FLT_MAX=np.finfo(np.float32).max
def prep(c,t):
    c=f32(c); t=f32(t)
    if not (np.isfinite(c) and np.isfinite(t)) or c == -FLT_MAX: return None
    pc=np.nextafter(c,f32(-np.inf))
    b=(f64(c)+f64(pc))*0.5
    bt=b*f64(t)
    even=(np.array(c).view(np.uint32)&1)==0
    return bt, bool(even)
def acc_dp(x,pr):  # the compare in doubles (baadd40)
    bt,even=pr; xd=f64(f32(x))
    return bool(xd>bt or (xd==bt and even))
def acc_p(x,pr):  # the least passing float P from m * t rounded down (the kept form)
    bt,even=pr
    with np.errstate(all='ignore'):
        lo=f32(bt)
        if f64(lo)>bt: lo=np.nextafter(lo,f32(-np.inf))
    P = lo if (f64(lo)==bt and even) else np.nextafter(lo,f32(np.inf))
    return bool(f32(x)>=P)
rng=np.random.default_rng(5)
bad=0;n=0;fb=0
specials=[0.0,-0.0,1.0,1e-45,3e-45,1e-40,1e-9,3e38,0.5,0.3,1-2**-24,2**-126,FLT_MAX/2]
ts=[1.0,0.5,0.3,1e-9,0.7,1.3,3e38,1e30,2**-126,1e-38,0.999999,float(f32(1e-9))]
cs=list(rng.random(2000).astype(np.float32))+specials+[-x for x in specials]+list((rng.random(300)*1e-38).astype(np.float32))+[np.inf,-np.inf,np.nan,FLT_MAX,-FLT_MAX]
def least(c,t):
    x=f32(c*t) if np.isfinite(f32(c*t)) else f32(np.sign(c)*FLT_MAX)
    for _ in range(100000):
        y=np.nextafter(x,f32(-np.inf))
        if y==x or not (c<=div(y,t)): break
        x=y
    for _ in range(100000):
        if c<=div(x,t): break
        x=np.nextafter(x,f32(np.inf))
    return x
with np.errstate(all='ignore'):
  for t in ts+list(rng.random(10).astype(np.float32)):
    t=f32(t)
    for c in cs:
        c=f32(c); pr=prep(c,t)
        if pr is None: fb+=1; continue
        xs=[f32(0),f32(-0.0),f32(np.inf),f32(-np.inf),f32(np.nan),FLT_MAX,-FLT_MAX]
        xs+=list((rng.random(10)*2).astype(np.float32))
        if abs(float(c))<1e30:
            P=least(c,t)
            xs+=[P,np.nextafter(P,f32(-np.inf)),np.nextafter(P,f32(np.inf))]
            ct=f32(c*t); xs+=[ct,np.nextafter(ct,f32(-np.inf)),np.nextafter(ct,f32(np.inf))]
        for x in xs:
            n+=1
            want=bool(c<=div(x,t)); got=acc_dp(x,pr); got_p=acc_p(x,pr)
            if want!=got or want!=got_p: bad+=1; print('BAD c',c,'t',t,'x',x,want,got) if bad<10 else None
print('checked',n,'bad',bad,'fallback',fb)

import itertools, numpy as np, time
from arborist.parser.mst import mst_argmax, mst_marginals

def trees(n, single_root):
    out=[]
    for heads in itertools.product(range(n+1), repeat=n):
        h=(-1,)+heads
        if any(h[m]==m for m in range(1,n+1)): continue
        if single_root and sum(1 for m in range(1,n+1) if h[m]==0)!=1: continue
        ok=True
        for m in range(1,n+1):
            seen=set(); v=m
            while v!=0:
                if v in seen: ok=False; break
                seen.add(v); v=h[v]
            if not ok: break
        if ok: out.append(np.array(h))
    return out

rng=np.random.default_rng(0)
for n in range(1,6):
    for sr in (True, False):
        T=trees(n,sr)
        for trial in range(30):
            S=rng.normal(size=(n+1,n+1))*3
            sc=np.array([S[t[1:],np.arange(1,n+1)].sum() for t in T])
            h,best=mst_argmax(S,sr)
            assert np.isclose(best, sc.max()), (n,sr,best,sc.max(),h)
            assert any((t==h).all() for t in T)
            mu,logz=mst_marginals(S,sr)
            lz=np.logaddexp.reduce(sc)
            assert np.isclose(logz,lz), (n,sr,logz,lz)
            p=np.exp(sc-lz); M=np.zeros((n+1,n+1))
            for t,pp in zip(T,p): M[t[1:],np.arange(1,n+1)]+=pp
            assert np.allclose(mu,M,atol=1e-9), (n,sr,np.abs(mu-M).max())
        print(n, sr, len(T), "ok")
# large scores
S=rng.normal(size=(40,40))*1e4
mu,lz=mst_marginals(S); print("large", np.isfinite(lz), mu[:,1:].sum(axis=0).round(6)[:5])
for n in (20, 50, 150):
    S=rng.normal(size=(n+1,n+1))
    t=time.perf_counter(); 
    for _ in range(20): mst_argmax(S)
    a=(time.perf_counter()-t)/20
    t=time.perf_counter()
    for _ in range(20): mst_marginals(S)
    b=(time.perf_counter()-t)/20
    print(n, f"argmax {a*1e3:.3f} ms marginals {b*1e3:.3f} ms")

import json,glob,sys,statistics as st
def load(d):
    out={}
    for f in glob.glob(d+'/*/validation.json'):
        out[f.split('/')[-2]]=json.load(open(f))
    return out
runs=[load(d) for d in sys.argv[1:]]
cells=sorted(set(runs[0])&set(runs[-1]))
for c in cells:
    s=[]
    for r in runs:
        v=r.get(c)
        if not v: s.append('   -   '); continue
        errs=[row.get('error_pct') for row in v['rows']]
        errs=[e for e in errs if e is not None]
        s.append(f"{v['median_abs_error_pct']:5.2f}/{v['worst_abs_error_pct']:5.2f} sgn{st.median(errs):+5.2f} cov{(v.get('interval_coverage') or 0)*100:3.0f}")
    print(f"{c:>20}  "+"  |  ".join(s))

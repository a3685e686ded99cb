import json,glob,sys
def load(d):
    return {f.split('/')[-2]:json.load(open(f)) for f in glob.glob(d+'/*/validation.json')}
for tag in sys.argv[1:]:
    tot={'base':[], 'wmed':[]}
    for run in ['41','39','35','32']:
        for k in tot:
            for c,v in load(f'{tag}{run}_{k}').items():
                if c.endswith('loopback'): continue
                tot[k].append((run,c,v['median_abs_error_pct'],v['worst_abs_error_pct'],v.get('interval_coverage') or 0))
    for k,rows in tot.items():
        n=len(rows); med=sum(r[2] for r in rows)/n; worst=sum(r[3] for r in rows)/n
        ok=sum(r[2]<3 and r[3]<10 for r in rows); cov=sum(0.75<=r[4]<=0.90 for r in rows)
        better=None
        print(f"{k}: {n} cells, mean median-err {med:.2f}%, mean worst {worst:.2f}%, both error goals {ok}, coverage in band {cov}")
    b={(r[0],r[1]):r for r in tot['base']}; w={(r[0],r[1]):r for r in tot['wmed']}
    print('median err lower with wmed in', sum(w[k][2]<b[k][2] for k in b), 'of', len(b), '; higher in', sum(w[k][2]>b[k][2] for k in b))

#!/bin/bash
# s25 run 2: block size sweep of the small one-shot allreduce (sym_probe, committed kernel), 2 GPUs
export NCCL_NVLS_ENABLE=0
R=$OUT/r2; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > $R/gpus.txt
S=.carry/s25
n=$(nvidia-smi -L | wc -l)
for rep in 1 2 3; do
for cfg in "ar 1024" "ar 2048" "ar 4096" "ar 8192" "ar 16384" "ar12 16384" "ar12 32768" "ar12 65536" "ar128 16384" "ar128 32768" "ar128 65536" "rs 4096" "ag 4096"; do
  set -- $cfg
  for bb in 256 512 1024 2048 4096 8192; do
    t=$(PROBE_BLOCK_BYTES=$bb PROBE_CHECK=2 timeout 20 $S/sp_base $1 $2 $n 20 200 2>&1 | tail -1)
    echo "rep$rep $1 $2 bb$bb :: $t"
  done
done
done > $R/probe.txt 2>&1
tar czf $OUT/r2.tgz -C $OUT r2
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python); "$PY" - <<'PY'
import re,collections,statistics,os
d=collections.defaultdict(list)
for line in open(os.environ['OUT']+'/r2/probe.txt'):
    m=re.match(r'rep\d (\S+) (\d+) (bb\d+) :: .*blocks=(\d+) threads=(\d+).*?: ([\d.]+) us per kernel(.*)',line)
    if m: d[(m[1],m[2])].append((m[3]+'/b'+m[4]+'/t'+m[5],float(m[6]),m[7].strip()))
    else: print('??',line.strip())
for k,v in d.items():
    g=collections.defaultdict(list); bad=set()
    for name,t,extra in v:
        g[name].append(t)
        if extra: bad.add(name+extra)
    print(k[0],k[1],' | '.join('%s %.3f'%(n,statistics.median(ts)) for n,ts in g.items()), bad or '')
PY

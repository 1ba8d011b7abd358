#!/bin/bash
# s25 run 4: the LL forms' barrier before the sequence store (sym_probe: base vs vNB, no barrier; timing only)
export NCCL_NVLS_ENABLE=0
R=$OUT/r4; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > $R/gpus.txt
S=.carry/s25
for rep in 1 2 3; do
for n in 2 4; do
for cfg in "ar 16" "ar 1024" "ar 4096" "ar 16384" "ar12 65536" "ag 4096" "rs 4096"; do
  set -- $cfg
  for v in base vNB; do
    t=$(PROBE_CHECK=2 timeout 20 $S/sp_$v $1 $2 $n 20 200 2>&1 | tail -1)
    echo "rep$rep n$n $1 $2 $v :: $t"
  done
done; done; done > $R/probe.txt 2>&1
tar czf $OUT/r4.tgz -C $OUT r4
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python); "$PY" - <<'PY'
import re,collections,statistics,os
d=collections.OrderedDict()
for line in open(os.environ['OUT']+'/r4/probe.txt'):
    m=re.match(r'rep\d (n\d) (\S+) (\d+) (\S+) :: .*?: ([\d.]+) us per kernel(.*)',line)
    if not m: print('??',line.strip()); continue
    d.setdefault((m[1],m[2],m[3]),collections.OrderedDict()).setdefault(m[4],[]).append(float(m[5]))
    if m[6].strip(): print('!!',line.strip())
for k,g in d.items():
    print(*k,' | '.join('%s %.3f'%(n,statistics.median(v)) for n,v in g.items()))
PY

#!/bin/bash
# s25 run 4: the LL forms' barrier before the sequence store (sym_probe: base vs vNB, no barrier; timing only)
export NCCL_NVLS_ENABLE=0
R=$OUT/r4; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > $R/gpus.txt
S=.carry/s25 # the probes of variants.sh (run 4: and sp_vNB, see README)
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
# The summary (run as a copy of this code here; gathered in medians.py since):
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
"$PY" bench/results/s25/scripts/medians.py $R/probe.txt 1

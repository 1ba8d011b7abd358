#!/bin/bash
# s25 run 1: LL lines several per thread (sym_probe variants), 2 GPUs
export NCCL_NVLS_ENABLE=0
R=$OUT/r1; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > $R/gpus.txt
S=.carry/s25 # the probes of variants.sh (run 4: and sp_vNB, see README)
n=$(nvidia-smi -L | wc -l)
for rep in 1 2 3; do
for cfg in "ar 4096" "ar 8192" "ar 16384" "ar12 16384" "ar12 32768" "ar12 65536" "ag 8192" "ag12 32768" "rs12 65536" "ar 1024"; do
  set -- $cfg
  for v in "base 1" "base 2" "vM 1" "vM 2" "vM4 2" "vM4 4"; do
    set -- $cfg $v
    t=$(PROBE_LPT=$4 PROBE_CHECK=2 timeout 20 $S/sp_$3 $1 $2 $n 20 200 2>&1 | tail -1)
    echo "rep$rep $1 $2 $3 lpt$4 :: $t"
  done
done
done > $R/probe.txt 2>&1
tar czf $OUT/r1.tgz -C $OUT r1
# The summary (run as a copy of this code here; gathered in medians.py since):
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
"$PY" bench/results/s25/scripts/medians.py $R/probe.txt 2

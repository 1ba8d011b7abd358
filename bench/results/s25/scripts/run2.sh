#!/bin/bash
# s25 run 2: block size sweep of the small one-shot allreduce (sym_probe, committed kernel), 2 GPUs
export NCCL_NVLS_ENABLE=0
R=$OUT/r2; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > $R/gpus.txt
S=.carry/s25 # the probes of variants.sh (run 4: and sp_vNB, see README)
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
# The summary (run as a copy of this code here; gathered in medians.py since):
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
"$PY" bench/results/s25/scripts/medians.py $R/probe.txt 1

# Run 2: what the copy-engine reducescatter's time is made of (scripts/ce_rs_probe.cu modes: 1 the
# copies alone, 2 with the memop writes, 3 with waits that pass at once, 0 the memop protocol, 4
# a one-warp kernel per chunk signalling and waiting instead of the memops), 4 GPUs.
set -u
OUT=${OUT:-/tmp/kiln-out}; R=$OUT/r2; mkdir -p $R
export NCCL_NVLS_ENABLE=0
nvcc -O2 -arch=sm_90 -o $R/ce_rs_probe scripts/ce_rs_probe.cu -lcuda > $R/nvcc.txt 2>&1 || { cat $R/nvcc.txt; exit 1; }
P=$R/ce_rs_probe
M=1048576
for ch in 4 16; do for mode in 1 2 3 0 4; do timeout 60 $P 4 268435456 $((ch * M)) 1 32 10 $mode; done; done > $R/probe.txt 2>&1
for ch in 8 16 32; do timeout 60 $P 4 1073741824 $((ch * M)) 1 32 10 4; done >> $R/probe.txt 2>&1
for ch in 4 8; do timeout 60 $P 4 268435456 $((ch * M)) 1 64 10 4; done >> $R/probe.txt 2>&1
for ch in 4 8; do timeout 60 $P 4 134217728 $((ch * M)) 1 32 10 4; done >> $R/probe.txt 2>&1
timeout 60 $P 4 268435456 $((8 * M)) 0 32 10 4 >> $R/probe.txt 2>&1
cat $R/probe.txt

# Run 3: the copy engine's cost per copy (scripts/ce_rs_probe.cu, copies alone, 4 GPUs, 256 MiB):
# mode 1 one stream, 5 a stream per peer, 6 cudaMemcpyBatchAsync per chunk, 7 two streams per peer;
# chunks of 4, 16 and 64 MiB (one copy per peer), graphs, and eager for modes 1 and 5.
set -u
OUT=${OUT:-/tmp/kiln-out}; R=$OUT/r3; mkdir -p $R
export NCCL_NVLS_ENABLE=0
nvcc -O2 -arch=sm_90 -o $R/ce_rs_probe scripts/ce_rs_probe.cu -lcuda > $R/nvcc.txt 2>&1 || { cat $R/nvcc.txt; exit 1; }
P=$R/ce_rs_probe
M=1048576
for ch in 4 16 64; do for mode in 1 5 6 7; do timeout 60 $P 4 268435456 $((ch * M)) 1 32 10 $mode; done; done > $R/probe.txt 2>&1
for ch in 4 16; do for mode in 1 5; do timeout 60 $P 4 268435456 $((ch * M)) 0 32 10 $mode; done; done >> $R/probe.txt 2>&1
cat $R/probe.txt

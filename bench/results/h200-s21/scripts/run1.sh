# Run 1: scripts/ce_rs_probe.cu (reducescatter through the copy engine, pipelined; no library) on
# 4 and 2 GPUs at 256 MiB and 1 GiB, chunks of 2-16 MiB per peer, graphs and eager; then the
# committed library's reducescatter and allgather (coll_bench, graphs) in the same call.
RUN=r1 . scripts/device-pre.sh
nvcc -O2 -arch=sm_90 -o $R/ce_rs_probe scripts/ce_rs_probe.cu -lcuda > $R/nvcc.txt 2>&1 || { cat $R/nvcc.txt; exit 1; }
P=$R/ce_rs_probe
M=1048576
for sz in 268435456 1073741824; do
  for ch in 2 4 8 16; do timeout 60 $P 4 $sz $((ch * M)) 1 32 >> $R/probe4.txt 2>&1; done
done
tail -n 20 $R/probe4.txt; pack
for b in 16 64; do timeout 60 $P 4 268435456 $((4 * M)) 1 $b >> $R/probe4.txt 2>&1; done
for ch in 4 16; do timeout 60 $P 4 268435456 $((ch * M)) 0 32 >> $R/probe4.txt 2>&1; done
timeout 60 $P 4 134217728 $((4 * M)) 1 32 >> $R/probe4.txt 2>&1
tail -n 5 $R/probe4.txt; pack
for sz in 268435456 1073741824; do
  for ch in 4 16; do CUDA_VISIBLE_DEVICES=0,1 timeout 60 $P 2 $sz $((ch * M)) 1 32 >> $R/probe2.txt 2>&1; done
done
cat $R/probe2.txt; pack
timeout 200 $B/coll_bench --ranks 4 --colls reducescatter,allgather,alltoall --min 64M --max 1G --graph 10 --iters 5 \
  --warmup 2 --factor 4 --csv $R/lib4.csv > $R/lib4.txt 2>&1
rows $R/lib4.csv; pack

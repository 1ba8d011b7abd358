#!/bin/bash
# session 10, device call 3 (4 GPUs), run 2's build: more A/B sweeps, each against the defaults in
# the same call, NCCL in every file. 4 ranks: copies in growing rounds with the default 64 blocks
# and with 96; staging of 256 and 512 MiB and 256 or 1024 threads per block for the reductions,
# 64 MiB-1 GiB. 2 ranks: block bytes 2 KiB vs 4 KiB at 8 B-256 KiB.
. bench/results/h200x4-s10/scripts/pre.sh
G="--ranks 4 --iters 5 --warmup 2 --graph 3 --min 16M --max 1G --factor 2"
timeout 40 $B $G --colls allgather,alltoall --csv $L/l_def.csv > /dev/null 2>&1
timeout 40 env KILN_SYM_COPY_ROUND_MAX_BYTES=33554432 $B $G --colls allgather,alltoall --csv $L/l_grow32.csv > /dev/null 2>&1
timeout 40 env KILN_SYM_COPY_ROUND_MAX_BYTES=67108864 $B $G --colls allgather,alltoall --csv $L/l_grow64.csv > /dev/null 2>&1
timeout 40 env KILN_SYM_COPY_ROUND_MAX_BYTES=33554432 KILN_SYM_COPY_BLOCKS=96 $B $G --colls allgather,alltoall --csv $L/l_grow32b96.csv > /dev/null 2>&1
R="--ranks 4 --iters 5 --warmup 2 --graph 3 --min 64M --max 1G --factor 2 --colls reducescatter,allreduce"
timeout 50 $B $R --csv $L/r_def.csv > /dev/null 2>&1
timeout 50 $B $R --sym-bytes 256M --csv $L/r_sb256.csv > /dev/null 2>&1
timeout 50 $B $R --sym-bytes 512M --csv $L/r_sb512.csv > /dev/null 2>&1
timeout 50 $B $R --threads 256 --csv $L/r_t256.csv > /dev/null 2>&1
timeout 50 $B $R --threads 384 --csv $L/r_t384.csv > /dev/null 2>&1
S="--ranks 2 --iters 10 --warmup 3 --graph 10 --min 8 --max 256K --factor 2"
for w in plain win; do W=; [ $w = win ] && W=--window
  timeout 40 $B $S $W --csv $L/s2_${w}_bb4k.csv > /dev/null 2>&1
  timeout 40 env KILN_SYM_BLOCK_BYTES=2048 $B $S $W --csv $L/s2_${w}_bb2k.csv > /dev/null 2>&1
done
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
cmp logs/l_def.csv logs/l_grow32.csv logs/l_grow64.csv logs/l_grow32b96.csv
cmp logs/r_def.csv logs/r_sb256.csv logs/r_sb512.csv logs/r_t256.csv logs/r_t384.csv
for w in plain win; do cmp logs/s2_${w}_bb4k.csv logs/s2_${w}_bb2k.csv | awk '$2>=4096 || NR==1'; done
rm -rf logs

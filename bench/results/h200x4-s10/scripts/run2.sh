#!/bin/bash
# session 10, device call 2 (4 GPUs): LL lines that overflow a region go as flags (the 4-GPU
# zero-copy suites' failure in call 1). Suites on 4 GPUs; then A/B sweeps of settings measured on
# 2 GPUs only, each against the defaults in the same call, NCCL in every file: block bytes at
# 8 B-256 KiB, zero copy vs staged on windows 256 KiB-64 MiB, the copy engine 64-512 MiB, copies
# in growing rounds, alltoall as a copy, reducescatter rounds, reduction blocks, 16 MiB-1 GiB.
. bench/results/h200x4-s10/scripts/pre.sh
timeout 150 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_direct_copy_engine|sym_choice|sym_direct_choice|sym_rounds)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
S="--ranks 4 --iters 10 --warmup 3 --graph 10 --min 8 --max 256K --factor 2"
for w in plain win; do W=; [ $w = win ] && W=--window
  timeout 40 $B $S $W --csv $L/s_${w}_bb4k.csv > /dev/null 2>&1
  timeout 40 env KILN_SYM_BLOCK_BYTES=2048 $B $S $W --csv $L/s_${w}_bb2k.csv > /dev/null 2>&1
  timeout 40 env KILN_SYM_BLOCK_BYTES=1024 $B $S $W --csv $L/s_${w}_bb1k.csv > /dev/null 2>&1
done
D="--ranks 4 --iters 10 --warmup 3 --graph 5 --min 256K --max 64M --factor 2 --window --colls allgather,alltoall,allreduce"
timeout 40 $B $D --csv $L/d_staged.csv > /dev/null 2>&1
timeout 40 env KILN_SYM_DIRECT_BYTES=0 $B $D --csv $L/d_direct.csv > /dev/null 2>&1
C="--ranks 4 --iters 5 --warmup 2 --graph 3 --min 64M --max 512M --factor 2 --window --colls allgather,alltoall"
timeout 40 env KILN_SYM_DIRECT_BYTES=0 $B $C --csv $L/c_sm.csv > /dev/null 2>&1
timeout 40 env KILN_SYM_DIRECT_BYTES=0 KILN_SYM_CE_BYTES=0 $B $C --csv $L/c_ce.csv > /dev/null 2>&1
G="--ranks 4 --iters 5 --warmup 2 --graph 3 --min 16M --max 1G --factor 2"
timeout 60 $B $G --csv $L/l_def.csv > /dev/null 2>&1
timeout 40 env KILN_SYM_COPY_ROUND_MAX_BYTES=33554432 KILN_SYM_COPY_BLOCKS=128 $B $G --colls allgather,alltoall --csv $L/l_grow32.csv > /dev/null 2>&1
timeout 40 env KILN_SYM_COPY_ROUND_MAX_BYTES=67108864 KILN_SYM_COPY_BLOCKS=128 $B $G --colls allgather,alltoall --csv $L/l_grow64.csv > /dev/null 2>&1
timeout 40 env KILN_SYM_COPY_BLOCKS=128 $B $G --colls allgather,alltoall --csv $L/l_cb128.csv > /dev/null 2>&1
timeout 40 env KILN_SYM_COPY_ROUND_MAX_BYTES=33554432 KILN_SYM_COPY_BLOCKS=128 KILN_SYM_A2A_BIG_BYTES=4294967296 $B $G --colls alltoall --csv $L/l_a2acopy.csv > /dev/null 2>&1
timeout 40 env KILN_SYM_RS_ROUND_BYTES=8388608 $B $G --colls reducescatter --csv $L/l_rs8.csv > /dev/null 2>&1
timeout 40 env KILN_SYM_RS_ROUND_BYTES=16777216 $B $G --colls reducescatter --csv $L/l_rs16.csv > /dev/null 2>&1
timeout 50 env KILN_SYM_REDUCE_BLOCKS=96 $B $G --colls reducescatter,allreduce --csv $L/l_rb96.csv > /dev/null 2>&1
timeout 50 env KILN_SYM_MIN_ROUNDS=8 $B $G --colls allreduce --csv $L/l_mr8.csv > /dev/null 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |checked|Assert|diff|rank' logs/tests.txt | head -20
for w in plain win; do cmp logs/s_${w}_bb4k.csv logs/s_${w}_bb2k.csv logs/s_${w}_bb1k.csv | awk '$2>=512 || NR==1'; done
cmp logs/d_staged.csv logs/d_direct.csv
cmp logs/c_sm.csv logs/c_ce.csv
cmp logs/l_def.csv logs/l_grow32.csv logs/l_grow64.csv logs/l_cb128.csv logs/l_a2acopy.csv logs/l_rs8.csv logs/l_rs16.csv logs/l_rb96.csv logs/l_mr8.csv
rm -rf logs

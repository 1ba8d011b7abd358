#!/bin/bash
# session 6, device call 2 (4 GPUs): first measurement of the symmetric-memory kernels
# (kernels/sym.cuh, kilnSymRun; candidate build: plans/baked float only, coll_bench only).
# CUDA graphs, the "sym" column next to NCCL and the plans, every row's output compared with
# NCCL's; blocks per call capped at 16, 32, 64 (KILN_SYM_BLOCKS), 4 and 2 GPUs.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
G="--iters 10 --warmup 3 --graph 10 --factor 2"
for nb in 32 16 64; do
  KILN_SYM_BLOCKS=$nb timeout 60 $B --ranks 4 $G --min 4K --max 16M --colls allreduce,reducescatter --csv $L/n4_red_b$nb.csv > $L/n4_red_b$nb.txt 2>&1
done
KILN_SYM_BLOCKS=32 timeout 60 $B --ranks 4 $G --min 4K --max 16M --colls allreduce --sym oneshot --csv $L/n4_ar1_b32.csv > $L/n4_ar1_b32.txt 2>&1
KILN_SYM_BLOCKS=32 timeout 60 $B --ranks 4 $G --min 4K --max 16M --colls allreduce --inplace --csv $L/n4_ip_b32.csv > $L/n4_ip_b32.txt 2>&1
for nb in 32 64; do
  KILN_SYM_BLOCKS=$nb timeout 60 $B --ranks 4 $G --min 4K --max 16M --colls allgather,alltoall --csv $L/n4_cp_b$nb.csv > $L/n4_cp_b$nb.txt 2>&1
done
KILN_SYM_BLOCKS=32 timeout 90 $B --ranks 2 $G --min 4K --max 16M --csv $L/n2_b32.csv > $L/n2_b32.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for f in $(tar tzf logs.tgz | grep csv$); do echo "== $f"; tar xzf logs.tgz -O $f | awk -F, 'NR>1 {k=$14; if (k=="" || ($18!="" && $18<k)) k=$18; printf "%s %s n%s p%s s%s e%s%s%s; ",substr($1,1,5),$7,$10,k,$22,$17,$21,$25}'; echo; done

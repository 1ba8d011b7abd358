#!/bin/bash
# session 9, device call 11: run 10's torchrun table had reduce_scatter bfloat16 1 KiB (graph)
# and 1 MiB (eager) far slower than every other row; bfloat16 reducescatter and allreduce
# 8 B-4 MiB, graphs and eager, final build vs session 8's binary, same call.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
mkdir -p .carry/old && tar xJf .carry/old.tar.xz -C .carry/old
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench; O=.carry/old/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
S="--ranks 2 --iters 10 --warmup 3 --min 8 --max 4M --factor 8 --colls reducescatter,allreduce --dtype bfloat16"
timeout 40 $B $S --graph 10 --csv $L/g_new.csv > /dev/null 2>&1
timeout 40 $O $S --graph 10 --csv $L/g_old.csv > /dev/null 2>&1
timeout 40 $B $S --csv $L/e_new.csv > /dev/null 2>&1
timeout 40 $O $S --csv $L/e_old.csv > /dev/null 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
for t in g e; do paste -d, logs/${t}_new.csv logs/${t}_old.csv | awk -F, -v t=$t 'NR>1 {printf "%s %s %s new %.2f old %.2f nccl %.2f err %s%s\n", t, $1, $7, $22, $49, $10, $25, $52}'; done
rm -rf logs

#!/bin/bash
# session 9, device call 7: reducescatter 256 MiB-1 GiB on plain buffers (busbw 344-353 GB/s,
# 4-7% under the 368 copy limit): round size and blocks swept by environment, final build.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
G="--ranks 2 --iters 5 --warmup 2 --graph 5 --min 256M --max 1G --factor 2 --colls reducescatter"
timeout 60 $B $G --csv $L/rs_def.csv > /dev/null 2>&1
for r in 8388608 16777216; do for b in 64 128; do
  KILN_SYM_ROUND_BYTES=$r KILN_SYM_REDUCE_BLOCKS=$b timeout 60 $B $G --csv $L/rs_r${r}_b$b.csv > /dev/null 2>&1
done; done
KILN_SYM_REDUCE_BLOCKS=96 timeout 60 $B $G --csv $L/rs_b96.csv > /dev/null 2>&1
KILN_SYM_MIN_ROUNDS=16 timeout 60 $B $G --csv $L/rs_m16.csv > /dev/null 2>&1
timeout 60 $B $G --csv $L/rs_def2.csv > /dev/null 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
for f in logs/rs_*.csv; do awk -F, -v f=$(basename $f .csv) 'NR>1 {printf "%s %s sym %.1f nccl %.1f busbw %.1f err %s\n", f, $7, $22, $10, $24, $25}' $f; done
rm -rf logs

#!/bin/bash
# session 9, device call 8: reductions in rounds of at most 8 or 16 MiB per region
# (KILN_SYM_ROUND_BYTES) against the default, reducescatter and allreduce 16 MiB-1 GiB, plain
# buffers, graphs, twice, alternating; final build.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
G="--ranks 2 --iters 5 --warmup 2 --graph 5 --min 16M --max 1G --factor 2 --colls reducescatter,allreduce"
for k in 1 2; do
  timeout 60 $B $G --csv $L/def$k.csv > /dev/null 2>&1
  KILN_SYM_ROUND_BYTES=8388608 timeout 60 $B $G --csv $L/r8_$k.csv > /dev/null 2>&1
  KILN_SYM_ROUND_BYTES=16777216 timeout 60 $B $G --csv $L/r16_$k.csv > /dev/null 2>&1
done
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
for k in 1 2; do paste -d, logs/def$k.csv logs/r8_$k.csv logs/r16_$k.csv | awk -F, -v k=$k 'NR>1 {printf "%s %s %s def %.1f r8 %.1f r16 %.1f nccl %.1f err %s%s%s\n", k, $1, $7, $22, $49, $76, $10, $25, $52, $79}'; done
rm -rf logs

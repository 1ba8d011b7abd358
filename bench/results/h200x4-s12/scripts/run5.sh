#!/bin/bash
# session 12, device call 5: the one-shot LL allreduce among 4 and 2 GPUs again (nvl_bench llx, each
# round into areas of its own), with blocks that each store to one peer beside blocks that receive
# (V 2); kiln's allreduce 1-64 KiB one-shot against two-shot (--sym), plain and windows, graphs.
. bench/results/h200x4-s12/scripts/pre.sh
timeout 100 .carry/bin/nvl_bench --gpus 4 --iters 3 --only llx > $L/llx4.txt 2>&1; echo "rc $?" >> $L/llx4.txt
timeout 60 .carry/bin/nvl_bench --gpus 2 --iters 3 --only llx > $L/llx2.txt 2>&1; echo "rc $?" >> $L/llx2.txt
G="--ranks 4 --colls allreduce --iters 20 --warmup 5 --graph 10 --min 1K --max 64K --factor 2"
for s in oneshot twoshot; do
  timeout 20 $B $G --sym $s --csv $L/ar_$s.csv > $L/ar_$s.txt 2>&1
  timeout 20 $B $G --sym $s --window --csv $L/arw_$s.csv > $L/arw_$s.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
cat logs/llx4.txt logs/llx2.txt
cmp logs/ar_oneshot.csv logs/ar_twoshot.csv logs/arw_oneshot.csv logs/arw_twoshot.csv
rm -rf logs

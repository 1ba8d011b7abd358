#!/bin/bash
# session 12, device call 6: the one-shot LL allreduce one call per kernel launch, replayed from
# CUDA graphs (nvl_bench llg): a thread per line against blocks by role, 4 and 2 GPUs.
. bench/results/h200x4-s12/scripts/pre.sh
timeout 100 .carry/bin/nvl_bench --gpus 4 --iters 5 --only llg > $L/llg4.txt 2>&1; echo "rc $?" >> $L/llg4.txt
timeout 60 .carry/bin/nvl_bench --gpus 2 --iters 5 --only llg > $L/llg2.txt 2>&1; echo "rc $?" >> $L/llg2.txt
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
cat logs/llg4.txt logs/llg2.txt
rm -rf logs

#!/bin/bash
# session 12, device call 4: a one-shot allreduce of LL lines among 4 and 2 GPUs (nvl_bench llx):
# a thread per line looping over the peers (as bodyLL) against a lane per line and peer.
. bench/results/h200x4-s12/scripts/pre.sh
timeout 100 .carry/bin/nvl_bench --gpus 4 --iters 3 --only llx > $L/llx4.txt 2>&1; echo "rc $?" >> $L/llx4.txt
timeout 60 .carry/bin/nvl_bench --gpus 2 --iters 3 --only llx > $L/llx2.txt 2>&1; echo "rc $?" >> $L/llx2.txt
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
cat logs/llx4.txt logs/llx2.txt
rm -rf logs

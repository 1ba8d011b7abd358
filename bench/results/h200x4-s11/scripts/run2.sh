#!/bin/bash
# session 11, device call 2: nvl_bench, every GPU pushing 256 MiB to each peer at once: SM stores
# (kiln's copy1) vs the Hopper bulk copies (TMA) vs the copy engine, on 4 and 2 GPUs.
. bench/results/h200x4-s11/scripts/pre.sh
timeout 120 .carry/bin/nvl_bench --gpus 4 > $L/nvl4.txt 2>&1; echo "rc $?" >> $L/nvl4.txt
timeout 60 .carry/bin/nvl_bench --gpus 2 > $L/nvl2.txt 2>&1; echo "rc $?" >> $L/nvl2.txt
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt; cat logs/nvl4.txt logs/nvl2.txt
rm -rf logs

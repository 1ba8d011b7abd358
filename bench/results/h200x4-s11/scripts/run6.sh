#!/bin/bash
# session 11, device call 6: sym_group_peers with its capture fixed (every stream synchronized
# before the first capture begins), on 4 and 2 GPUs, and the suites around it once more.
. bench/results/h200x4-s11/scripts/pre.sh
timeout 150 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_group_peers|sym_direct_copy_engine|groups|several_streams|graph_replays)' > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 60 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_group_peers|sym_direct_copy_engine)' > $L/tests2.txt 2>&1; echo "rc $?" >> $L/tests2.txt
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|PASS|rc |Synthesis|grouped calls|Assert|calls checked' -A0 logs/tests4.txt logs/tests2.txt | head -30
rm -rf logs

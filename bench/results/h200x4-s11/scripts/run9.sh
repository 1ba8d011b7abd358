#!/bin/bash
# session 11, device call 9: the final library (run 8's build) through the GPU suites once more on
# 4 GPUs and the drop-in suite.
. bench/results/h200x4-s11/scripts/pre.sh
T='sym_group_peers|sym_group_peers_choice|sym_direct|sym_direct_copy_engine|sym_direct_choice|sym_kernels_4gpus|sym_rounds|sym_graph_replays|sym_empty_blocks|sym_choice|groups|several_streams|two_communicators|graph_replays|one_process_per_gpu|missing_peer_times_out|supports_and_load_errors|baked_plans_4gpus'
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@($T)" > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 50 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |Synthesis|grouped calls|calls checked|Assert' logs/tests4.txt logs/shim.txt | head -30
rm -rf logs

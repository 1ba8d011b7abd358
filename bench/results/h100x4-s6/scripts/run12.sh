#!/bin/bash
# session 6, device call 12 (4 GPUs): the cleanup commit (sym.cuh helpers for the block range, staging
# regions, LL receive and line reduction; one launch path shared by kilnRun and kilnSymRun):
# the sym suites and the new sym_empty_blocks regression test, the suites around them, the drop-in
# suite; a short graph check that the defaults still perform as in run 9.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks|baked_plans_2gpus|baked_plans_4gpus|groups|graph_replays|several_streams|two_communicators|one_process_per_gpu)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 60 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
timeout 40 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 8 --max 8M --factor 8 --csv $L/graph_n4.csv > $L/graph_n4.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for f in tests shim; do tar xzf logs.tgz -O logs/$f.txt | grep -E 'PASS|FAIL|Synthesis|rc |checked' | head -14; done
tar xzf logs.tgz -O logs/graph_n4.csv | awk -F, 'NR>1 {printf "%s %s x%s e%s%s%s; ",substr($1,1,5),$7,$26,$17,$21,$25}'; echo

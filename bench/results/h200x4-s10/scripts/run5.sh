#!/bin/bash
# session 10, device call 5: the engine-staged form (plain allgather and alltoall: the copy engine
# into the peers' staging, stream memory operations as signals). Its suite on 4 and 2 GPUs and
# the suites run 4 did not reach; plain allgather/alltoall 16 MiB-1 GiB, kernels (default) vs the
# engine-staged form (KILN_SYM_CE_STAGED_BYTES=0), and with 128 blocks per copy out, on 4 and 2 GPUs.
. bench/results/h200x4-s10/scripts/pre.sh
timeout 120 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_staged_copy_engine|sym_direct_choice)' > $L/tests_ce4.txt 2>&1; echo "rc $?" >> $L/tests_ce4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 90 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/sym_staged_copy_engine' > $L/tests_ce2.txt 2>&1; echo "rc $?" >> $L/tests_ce2.txt
G="--iters 5 --warmup 2 --graph 3 --min 16M --max 1G --factor 2 --colls allgather,alltoall --timeout-ms 20000"
for n in 4 2; do
  timeout 40 $B --ranks $n $G --csv $L/k${n}.csv > $L/k${n}.txt 2>&1
  KILN_SYM_CE_STAGED_BYTES=0 timeout 40 $B --ranks $n $G --csv $L/e${n}.csv > $L/e${n}.txt 2>&1
done
KILN_SYM_CE_STAGED_BYTES=0 KILN_SYM_CE_STAGED_BLOCKS=128 timeout 40 $B --ranks 4 $G --csv $L/e4b128.csv > $L/e4b128.txt 2>&1
timeout 150 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_graph_replays|sym_kernels_4gpus|sym_rounds|two_communicators)' > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |checked|Assert|diff|rank' logs/tests_ce4.txt logs/tests_ce2.txt logs/tests4.txt | head -30
cmp logs/k4.csv logs/e4.csv logs/e4b128.csv
cmp logs/k2.csv logs/e2.csv
tail -3 logs/e4.txt
rm -rf logs

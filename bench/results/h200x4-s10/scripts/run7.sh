#!/bin/bash
# session 10, device call 7: the engine-staged form with its signals and waits in one-block
# kernels on both streams instead of the driver's stream memory operations (run 6: as slow as
# copy engine and copy-out one after the other, eager and graphs alike). Its suite on 4 and 2
# GPUs; plain allgather/alltoall 16 MiB-1 GiB, kernels vs engine-staged, 4 and 2 GPUs.
. bench/results/h200x4-s10/scripts/pre.sh
timeout 100 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/sym_staged_copy_engine' > $L/tests_ce4.txt 2>&1; echo "rc $?" >> $L/tests_ce4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 60 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/sym_staged_copy_engine' > $L/tests_ce2.txt 2>&1; echo "rc $?" >> $L/tests_ce2.txt
G="--iters 5 --warmup 2 --graph 3 --min 16M --max 1G --factor 4 --colls allgather,alltoall --timeout-ms 20000"
for n in 4 2; do
  timeout 30 $B --ranks $n $G --csv $L/k${n}.csv > $L/k${n}.txt 2>&1
  KILN_SYM_CE_STAGED_BYTES=0 timeout 30 $B --ranks $n $G --csv $L/e${n}.csv > $L/e${n}.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |checked|Assert|diff|rank' logs/tests_ce4.txt logs/tests_ce2.txt | head -20
cmp logs/k4.csv logs/e4.csv
cmp logs/k2.csv logs/e2.csv
rm -rf logs

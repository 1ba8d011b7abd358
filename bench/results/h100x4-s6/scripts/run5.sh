#!/bin/bash
# session 6, device call 5 (4 GPUs): the symmetric-memory kernels with small calls as LL lines
# (kilnSymArgs.ll: up to 32 KiB of segment by default, KILN_SYM_LL_BYTES): the sym GPU tests
# (LL and flag forms, graph replays of both), the drop-in suite; then the sym column against the
# plans and NCCL at 8 B-256 KiB with LL up to 32 KiB and up to 128 KiB, graphs and eager batched,
# 4 and 2 GPUs.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 120 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 60 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
for n in 4 2; do
  timeout 40 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 8 --max 256K --factor 2 --csv $L/graph_n$n.csv > $L/graph_n$n.txt 2>&1
  KILN_SYM_LL_BYTES=131072 timeout 40 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 8K --max 512K --factor 2 --csv $L/ll128k_n$n.csv > $L/ll128k_n$n.txt 2>&1
  timeout 40 $B --ranks $n --iters 50 --warmup 10 --batch --min 8 --max 256K --factor 2 --csv $L/batch_n$n.csv > $L/batch_n$n.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for f in tests shim; do tar xzf logs.tgz -O logs/$f.txt | grep -E 'PASS|FAIL|Synthesis|rc |checked' | head -10; done
for x in graph_n4 ll128k_n4 batch_n4 graph_n2 ll128k_n2 batch_n2; do echo "== $x"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {p=$14; if (p=="" || ($18!="" && $18<p)) p=$18; printf "%s %s n%.2f p%.2f s%.2f e%s%s%s; ",substr($1,1,5),$7,$10,p,$22,$17,$21,$25}'; echo; done

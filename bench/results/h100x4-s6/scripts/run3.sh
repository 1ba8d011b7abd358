#!/bin/bash
# session 6, device call 3 (4 GPUs): the build with the symmetric-memory kernels as defaults in
# their measured ranges (host/sym.c; plans/baked baked for float only, tests on): the new GPU
# tests (sym_kernels_2gpus / _4gpus: every algorithm, dtype and op, in and out of place, against
# the CPU reference; sym_graph_replays) and the suites the change touches (baked plans 2/4 GPUs,
# groups, graph replays, several streams, one process per GPU), the drop-in suite; then graphs
# 8 B-64 MiB and eager batched 8 B-4 MiB on 4 and 2 GPUs; blocks of 4 KiB vs 16 KiB.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 240 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays|baked_plans_2gpus|baked_plans_4gpus|groups|graph_replays|several_streams|one_process_per_gpu)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 60 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
for n in 4 2; do
  timeout 50 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 8 --max 64M --factor 2 --csv $L/graph_n$n.csv > $L/graph_n$n.txt 2>&1
  timeout 25 $B --ranks $n --iters 10 --warmup 3 --graph 10 --inplace --colls allreduce --min 8 --max 64M --factor 2 --csv $L/graph_ip_n$n.csv > $L/graph_ip_n$n.txt 2>&1
  timeout 45 $B --ranks $n --iters 50 --warmup 10 --batch --min 8 --max 16M --factor 2 --csv $L/batch_n$n.csv > $L/batch_n$n.txt 2>&1
  timeout 25 $B --ranks $n --iters 50 --warmup 10 --batch --inplace --colls allreduce --min 8 --max 16M --factor 2 --csv $L/batch_ip_n$n.csv > $L/batch_ip_n$n.txt 2>&1
done
KILN_SYM_BLOCK_BYTES=4096 timeout 40 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 16K --max 4M --factor 2 --csv $L/bb4k_n4.csv > $L/bb4k_n4.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for f in tests shim; do tar xzf logs.tgz -O logs/$f.txt | grep -E 'PASS|FAIL|Synthesis|rc |want|checked' | head -16; done
for x in graph_n4 graph_ip_n4 graph_n2 graph_ip_n2 batch_n4 batch_ip_n4 batch_n2 batch_ip_n2 bb4k_n4; do echo "== $x"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 && $7>=32768 {printf "%s %s x%s s%s%s e%s%s%s; ",substr($1,1,5),$7,$26,$22,$27,$17,$21,$25}'; echo; done

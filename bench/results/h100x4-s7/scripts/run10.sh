#!/bin/bash
# session 7, device call 10 (4 GPUs): the final build (the compile-time sum only for types of 4
# bytes or more: run 9 found bfloat16 slower with it). sym suites, drop-in suite; graphs 8 B-1 GiB
# on 4 GPUs (float), bfloat16 reducescatter / allreduce 1-256 MiB.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 120 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_rounds|sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks|sym_choice|graph_replays|one_process_per_gpu)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 60 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
timeout 50 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 8 --max 64M --factor 4 --csv $L/graph_n4.csv > $L/graph_n4.txt 2>&1
timeout 45 $B --ranks 4 --iters 5 --warmup 2 --graph 3 --min 128M --max 1G --factor 2 --csv $L/graphL_n4.csv > $L/graphL_n4.txt 2>&1
timeout 40 $B --ranks 4 --iters 5 --warmup 2 --graph 5 --dtype bfloat16 --colls reducescatter,allreduce --min 1M --max 256M --factor 4 --csv $L/bf16_n4.csv > $L/bf16_n4.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for f in tests shim; do tar xzf logs.tgz -O logs/$f.txt | grep -E 'FAIL|Synthesis|rc |checked' | head -8; done
for x in graph_n4 graphL_n4 bf16_n4; do echo "== $x (slower or errors: coll bytes nccl sym speedup err)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 && ($26<1.0 || $17+$21+$25>0) {printf "%s %s %s %s %s e%s%s%s; ",substr($1,1,5),$7,$10,$22,$26,$17,$21,$25}'; echo; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {n++; if($26>=1.0) k++} END {print k"/"n" rows >= 1.0x"}'; done

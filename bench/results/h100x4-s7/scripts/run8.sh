#!/bin/bash
# session 7, device call 8 (4 GPUs): reductions larger than a copy round in at least 4 rounds
# (run 6's one 64 MiB round lost reducescatter's lead at 32-64 MiB). sym suites; graphs 16 MiB-1 GiB
# on 4 and 2 GPUs (float); bfloat16 reducescatter and allreduce 1-256 MiB; one process per GPU
# reducescatter and allreduce 16-256 MiB.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 100 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_rounds|sym_kernels_4gpus|sym_graph_replays|sym_choice)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 60 $B --ranks 4 --iters 5 --warmup 2 --graph 3 --min 16M --max 1G --factor 2 --csv $L/graphL_n4.csv > $L/graphL_n4.txt 2>&1
timeout 40 $B --ranks 4 --iters 5 --warmup 2 --graph 5 --dtype bfloat16 --colls reducescatter,allreduce --min 1M --max 256M --factor 4 --csv $L/bf16_n4.csv > $L/bf16_n4.txt 2>&1
timeout 50 $B --ranks 4 --mp --iters 10 --warmup 3 --colls reducescatter,allreduce --min 16M --max 256M --factor 2 --csv $L/mp_n4.csv > $L/mp_n4.txt 2>&1
timeout 40 $B --ranks 2 --iters 5 --warmup 2 --graph 3 --min 16M --max 1G --factor 4 --csv $L/graphL_n2.csv > $L/graphL_n2.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|rc |checked|Synthesis' | head -8
for x in graphL_n4 bf16_n4 mp_n4 graphL_n2; do echo "== $x (coll MiB nccl interp sym speedup err)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s %s %s %s %s e%s%s%s; ",substr($1,1,5),$7/1048576,$10,$18,$22,$26,$17,$21,$25}'; echo; done

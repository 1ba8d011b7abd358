#!/bin/bash
# session 9, device call 6: alltoall as a copy at every size on 2 GPUs (the default now; run 5
# measured it with KILN_SYM_A2A_BIG_BYTES): suites that cover rounds, plain alltoall graphs and
# eager 1 MiB-1 GiB against NCCL.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_rounds|sym_kernels_2gpus|sym_choice|sym_graph_replays|large_buffers)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 90 $B --ranks 2 --iters 5 --warmup 2 --graph 5 --min 1M --max 1G --factor 2 --colls alltoall --csv $L/a2a_graph.csv > /dev/null 2>&1
timeout 90 $B --ranks 2 --iters 5 --warmup 2 --min 1M --max 1G --factor 4 --colls alltoall --csv $L/a2a_eager.csv > /dev/null 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt; grep -E 'FAIL|rc |checked|Synthesis' logs/tests.txt | head
for f in a2a_graph a2a_eager; do awk -F, -v f=$f 'NR>1 {printf "%s %s sym %.1f nccl %.1f x%.2f busbw %.1f err %s\n", f, $7, $22, $10, $26, $24, $25}' logs/$f.csv; done
rm -rf logs

#!/bin/bash
# session 7, device call 14 (2 GPUs: no 4-GPU kind was lent then): the review's cleanup (one copy-into-place for allgather,
# alltoall and two-shot's second phase; graph replays of the sym tests through one helper; no
# behaviour change meant): the sym suites, and a short float graph sweep 8 B-1 GiB.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 150 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_rounds|sym_kernels_2gpus|sym_graph_replays|sym_empty_blocks|sym_choice)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 60 $B --ranks 2 --iters 5 --warmup 2 --graph 5 --min 8 --max 1G --factor 8 --csv $L/graph_n2.csv > $L/graph_n2.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|Synthesis|rc |checked' | head -8
echo "== graph_n2 (slower or errors)"; tar xzf logs.tgz -O logs/graph_n2.csv | awk -F, 'NR>1 && ($26<1.0 || $17+$21+$25>0) {printf "%s %s %s %s %s e%s%s%s; ",substr($1,1,5),$7,$10,$22,$26,$17,$21,$25}'; echo
tar xzf logs.tgz -O logs/graph_n2.csv | awk -F, 'NR>1 {n++; if($26>=1.0) k++} END {print k"/"n" rows >= 1.0x"}'

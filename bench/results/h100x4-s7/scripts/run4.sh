#!/bin/bash
# session 7, device call 4 (4 GPUs): staggered pushes (run 2's kernel), up to 128 blocks for
# reductions in rounds, the symmetric kernels as the default at every size on 2 and 4 GPUs. Tests:
# sym suites and large_buffers (1 GiB per rank, plans and sym kernels). Graphs: 128 KiB-16 MiB
# (as session 6 run 9), 16 MiB-1 GiB with 32 and 64 MiB of staging; 2 GPUs 16 MiB-1 GiB.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 300 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_rounds|sym_kernels_4gpus|sym_choice|large_buffers)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 40 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 128K --max 16M --factor 2 --csv $L/mid_n4.csv > $L/mid_n4.txt 2>&1
timeout 90 $B --ranks 4 --iters 5 --warmup 2 --graph 5 --min 16M --max 1G --factor 4 --csv $L/graph_n4.csv > $L/graph_n4.txt 2>&1
timeout 60 $B --ranks 4 --iters 5 --warmup 2 --graph 5 --sym-bytes 64M --min 16M --max 1G --factor 4 --csv $L/sb64_n4.csv > $L/sb64_n4.txt 2>&1
timeout 60 $B --ranks 2 --iters 5 --warmup 2 --graph 5 --min 16M --max 1G --factor 4 --csv $L/graph_n2.csv > $L/graph_n2.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|rc |checked|Tested|Synthesis' | head -12
for x in mid_n4 graph_n4 sb64_n4 graph_n2; do echo "== $x (coll MiB nccl interp sym speedup)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s %s %s %s %s e%s%s%s; ",substr($1,1,5),$7/1048576,$10,$18,$22,$26,$17,$21,$25}'; echo; done

#!/bin/bash
# session 10, device call 1 (4 GPUs): HEAD 742dd8d's build. GPU suites on 4 GPUs (the zero-copy
# forms had run on 2 only); graphs 8 B-1 GiB plain and windows with the defaults; from 16 MiB the
# settings measured on 2 GPUs only, tried on 4: zero copy (KILN_SYM_DIRECT_BYTES), the copy engine
# (KILN_SYM_CE_BYTES), copies in growing rounds with 128 blocks, alltoall as a copy, reducescatter
# rounds of 8 MiB.
. bench/results/h200x4-s10/scripts/pre.sh
timeout 170 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_direct_copy_engine|sym_kernels_4gpus|sym_rounds|sym_graph_replays)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 90 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 8 --max 1G --factor 4 --csv $L/graph_plain.csv > $L/graph_plain.txt 2>&1
timeout 90 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 8 --max 1G --factor 4 --window --csv $L/graph_win.csv > $L/graph_win.txt 2>&1
G="--ranks 4 --iters 5 --warmup 2 --graph 3 --min 16M --max 1G --factor 4"
timeout 50 env KILN_SYM_DIRECT_BYTES=0 $B $G --window --colls allgather,alltoall,allreduce --csv $L/win_direct.csv > /dev/null 2>&1
timeout 50 env KILN_SYM_DIRECT_BYTES=0 KILN_SYM_CE_BYTES=0 $B $G --window --colls allgather,alltoall --csv $L/win_ce.csv > /dev/null 2>&1
timeout 50 env KILN_SYM_COPY_ROUND_MAX_BYTES=33554432 KILN_SYM_COPY_BLOCKS=128 $B $G --colls allgather,alltoall --csv $L/plain_grow.csv > /dev/null 2>&1
timeout 50 env KILN_SYM_COPY_ROUND_MAX_BYTES=33554432 KILN_SYM_COPY_BLOCKS=128 KILN_SYM_A2A_BIG_BYTES=4294967296 $B $G --colls alltoall --csv $L/plain_a2acopy.csv > /dev/null 2>&1
timeout 50 env KILN_SYM_RS_ROUND_BYTES=8388608 $B $G --colls reducescatter,allreduce --csv $L/plain_rs8.csv > /dev/null 2>&1
cd $OUT && tar czf logs.tgz logs
head -2 logs/gpus.txt
grep -E 'FAIL|rc |checked' logs/tests.txt | head -20
behind logs/graph_plain.csv logs/graph_win.csv
big logs/graph_plain.csv logs/graph_win.csv logs/win_direct.csv logs/win_ce.csv logs/plain_grow.csv logs/plain_a2acopy.csv logs/plain_rs8.csv
rm -rf logs

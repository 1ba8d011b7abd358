#!/bin/bash
# session 10, device call 6: why the engine-staged form was slower in run 5 (its copies and the
# copies out of the staging look serialized). Run 5's build, 4 GPUs, allgather 64 MiB-1 GiB:
# graphs vs eager (no graph), and with CUDA_DEVICE_MAX_CONNECTIONS=32 (more hardware queues).
. bench/results/h200x4-s10/scripts/pre.sh
G="--ranks 4 --iters 5 --warmup 2 --min 64M --max 1G --factor 4 --colls allgather --timeout-ms 20000"
timeout 30 $B $G --graph 3 --csv $L/k_graph.csv > /dev/null 2>&1
KILN_SYM_CE_STAGED_BYTES=0 timeout 30 $B $G --graph 3 --csv $L/e_graph.csv > /dev/null 2>&1
timeout 30 $B $G --csv $L/k_eager.csv > /dev/null 2>&1
KILN_SYM_CE_STAGED_BYTES=0 timeout 30 $B $G --csv $L/e_eager.csv > /dev/null 2>&1
CUDA_DEVICE_MAX_CONNECTIONS=32 KILN_SYM_CE_STAGED_BYTES=0 timeout 30 $B $G --graph 3 --csv $L/e_graph_c32.csv > /dev/null 2>&1
CUDA_DEVICE_MAX_CONNECTIONS=32 KILN_SYM_CE_STAGED_BYTES=0 timeout 30 $B $G --csv $L/e_eager_c32.csv > /dev/null 2>&1
KILN_SYM_CE_STAGED_BYTES=0 KILN_SYM_CE_STAGED_BLOCKS=16 timeout 30 $B $G --graph 3 --csv $L/e_graph_b16.csv > /dev/null 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
cmp logs/k_graph.csv logs/e_graph.csv logs/k_eager.csv logs/e_eager.csv logs/e_graph_c32.csv logs/e_eager_c32.csv logs/e_graph_b16.csv
rm -rf logs

#!/bin/bash
# session 11, device call 4: allreduce as reduce-then-copy (a staged reducescatter of this rank's
# share, then the copy engine into the peers' outputs) for direct calls; alltoall direct from
# 4 MiB on 4 GPUs. GPU suites on 4 and 2 GPUs; graphs, plain buffers of one process: allreduce
# 64 MiB-1 GiB with the new form from 512 MiB (default), from 64 MiB, and off; 4 and 2 GPUs.
. bench/results/h200x4-s11/scripts/pre.sh
T='sym_group_peers|sym_group_peers_choice|sym_direct|sym_direct_copy_engine|sym_direct_choice|sym_kernels_4gpus|sym_rounds|groups'
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@($T)" > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 80 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_group_peers|sym_direct_copy_engine)' > $L/tests2.txt 2>&1; echo "rc $?" >> $L/tests2.txt
A="--colls allreduce --iters 10 --warmup 3 --graph 10 --min 64M --max 1G --factor 2"
timeout 30 $B --ranks 4 $A --csv $L/ar4_def.csv > $L/ar4_def.txt 2>&1
KILN_SYM_AR_CE_BYTES=67108864 timeout 30 $B --ranks 4 $A --csv $L/ar4_64m.csv > $L/ar4_64m.txt 2>&1
KILN_SYM_AR_CE=0 timeout 30 $B --ranks 4 $A --csv $L/ar4_off.csv > $L/ar4_off.txt 2>&1
KILN_SYM_AR_CE_BYTES=67108864 timeout 30 $B --ranks 2 $A --csv $L/ar2_64m.csv > $L/ar2_64m.txt 2>&1
timeout 30 $B --ranks 2 $A --csv $L/ar2_off.csv > $L/ar2_off.txt 2>&1
timeout 30 $B --ranks 4 --colls alltoall --iters 10 --warmup 3 --graph 10 --min 1M --max 16M --factor 2 --csv $L/a2a4.csv > $L/a2a4.txt 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |Synthesis|grouped calls|Assert' logs/tests4.txt logs/tests2.txt | head -30
cmp logs/ar4_off.csv logs/ar4_def.csv logs/ar4_64m.csv
cmp logs/ar2_off.csv logs/ar2_64m.csv
cmp logs/a2a4.csv
rm -rf logs

#!/bin/bash
# session 10, device call 4: the new defaults (2 KiB of segment per block; 4 GPUs: zero copy from
# 1 MiB on windows, the copy engine from 128 MiB; copies in rounds growing to 32 MiB on every
# count, 128 blocks only where they grew). GPU suites on 4 GPUs and the sym ones on 2, the drop-in
# suite; graphs 16 B-1 GiB plain and windows on 4 and 2 GPUs; eager batched 8 B-64 KiB on 4;
# 2 GPUs copies 16 MiB-1 GiB against run 2's binary (128 blocks there in any copy of 2+ rounds).
. bench/results/h200x4-s10/scripts/pre.sh
mkdir -p .carry/old && tar xJf .carry/old.tar.xz -C .carry/old
T='sym_direct|sym_direct_copy_engine|sym_direct_choice|sym_rounds|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks|sym_choice|groups|several_streams|two_communicators|graph_replays|one_process_per_gpu|missing_peer_times_out|supports_and_load_errors|large_buffers|baked_plans_4gpus'
timeout 240 .carry/bin/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@($T)" > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 90 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_direct_copy_engine|sym_kernels_2gpus|sym_rounds)' > $L/tests2.txt 2>&1; echo "rc $?" >> $L/tests2.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 120 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
for n in 4 2; do
  timeout 60 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 16 --max 1G --factor 4 --csv $L/g${n}_plain.csv > $L/g${n}_plain.txt 2>&1
  timeout 60 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 16 --max 1G --factor 4 --window --csv $L/g${n}_win.csv > $L/g${n}_win.txt 2>&1
done
timeout 60 $B --ranks 4 --iters 50 --warmup 10 --batch --min 8 --max 64K --factor 2 --csv $L/e4.csv > $L/e4.txt 2>&1
G="--ranks 2 --iters 5 --warmup 2 --graph 3 --min 16M --max 1G --factor 2 --colls allgather,alltoall"
timeout 40 .carry/old/bin/coll_bench $G --csv $L/c2_old.csv > /dev/null 2>&1
timeout 40 $B $G --csv $L/c2_new.csv > /dev/null 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |checked|Synthesis' logs/tests4.txt logs/tests2.txt | head -30; grep -E 'FAIL|rc |Synthesis' logs/shim.txt | head -4
behind logs/g4_plain.csv logs/g4_win.csv logs/g2_plain.csv logs/g2_win.csv logs/e4.csv
big logs/g4_plain.csv logs/g4_win.csv | grep -E ' (268435456|1073741824) '
cmp logs/c2_old.csv logs/c2_new.csv
rm -rf logs

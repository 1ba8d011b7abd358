#!/bin/bash
# session 10, device call 8: the final build (run 4's defaults; 128 copy blocks on 2 GPUs for any
# copy in rounds again; the engine-staged form taken out). GPU suites on 4 GPUs (large_buffers ran
# in run 4) and the sym ones on 2, the drop-in suite; graphs 16 B-1 GiB plain and windows on 4 and
# 2 GPUs; eager batched 8 B-64 KiB on 4.
. bench/results/h200x4-s10/scripts/pre.sh
T='sym_direct|sym_direct_copy_engine|sym_direct_choice|sym_rounds|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks|sym_choice|groups|several_streams|two_communicators|graph_replays|one_process_per_gpu|missing_peer_times_out|supports_and_load_errors|baked_plans_4gpus'
timeout 170 .carry/bin/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@($T)" > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 70 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_kernels_2gpus|sym_rounds)' > $L/tests2.txt 2>&1; echo "rc $?" >> $L/tests2.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 60 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
for n in 4 2; do
  timeout 45 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 16 --max 1G --factor 4 --csv $L/g${n}_plain.csv > $L/g${n}_plain.txt 2>&1
  timeout 45 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 16 --max 1G --factor 4 --window --csv $L/g${n}_win.csv > $L/g${n}_win.txt 2>&1
done
timeout 40 $B --ranks 4 --iters 50 --warmup 10 --batch --min 8 --max 64K --factor 2 --csv $L/e4.csv > $L/e4.txt 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |checked|Synthesis' logs/tests4.txt logs/tests2.txt | head -30; grep -E 'FAIL|rc |Synthesis' logs/shim.txt | head -4
behind logs/g4_plain.csv logs/g4_win.csv logs/g2_plain.csv logs/g2_win.csv logs/e4.csv
big logs/g4_plain.csv logs/g4_win.csv logs/g2_plain.csv logs/g2_win.csv | grep -E ' (268435456|1073741824) '
rm -rf logs

#!/bin/bash
# session 12, device call 1: session 11's last library (c902bdb: changed after its last device run)
# on GPUs: the grouped zero-copy suites on 4 and 2 GPUs, the drop-in suite; plain 4-GPU graphs
# 256 KiB-1 GiB against session 11's figures; nvl_bench: the copy engine pulling, and a
# reducescatter of engine pulls + local reductions (rsce); small allreduce on windows with 1, 2, 8
# and 32 KiB of segment per block and 256 threads.
. bench/results/h200x4-s12/scripts/pre.sh
T='sym_group_peers|sym_group_peers_choice|sym_direct|sym_direct_copy_engine|sym_direct_choice|sym_kernels_4gpus|sym_graph_replays|groups|graph_replays'
timeout 150 .carry/bin/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@($T)" > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 60 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_group_peers|sym_direct_copy_engine|sym_kernels_2gpus)' > $L/tests2.txt 2>&1; echo "rc $?" >> $L/tests2.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 50 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
timeout 40 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 256K --max 1G --factor 4 --csv $L/g4_plain.csv > $L/g4_plain.txt 2>&1
timeout 60 .carry/bin/nvl_bench --gpus 4 --iters 5 --only ce,pull,rsce > $L/nvl4.txt 2>&1; echo "rc $?" >> $L/nvl4.txt
timeout 30 .carry/bin/nvl_bench --gpus 2 --iters 5 --only ce,pull,rsce > $L/nvl2.txt 2>&1; echo "rc $?" >> $L/nvl2.txt
for bb in 1024 2048 8192 32768; do
  KILN_SYM_BLOCK_BYTES=$bb timeout 20 $B --ranks 4 --colls allreduce --iters 20 --warmup 5 --graph 10 --min 1K --max 64K --factor 2 --window --csv $L/arw_$bb.csv > $L/arw_$bb.txt 2>&1
done
timeout 20 $B --ranks 4 --colls allreduce --iters 20 --warmup 5 --graph 10 --min 1K --max 64K --factor 2 --window --threads 256 --csv $L/arw_t256.csv > $L/arw_t256.txt 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |Synthesis|Assert' logs/tests4.txt logs/tests2.txt | head -30; grep -E 'FAIL|rc |Synthesis' logs/shim.txt | head -4
behind logs/g4_plain.csv
big logs/g4_plain.csv
cat logs/nvl4.txt logs/nvl2.txt
cmp logs/arw_2048.csv logs/arw_1024.csv logs/arw_8192.csv logs/arw_32768.csv logs/arw_t256.csv
rm -rf logs

#!/bin/bash
# session 11, device call 3: grouped calls of every rank of one process go direct into each
# other's plain buffers (kilnSymGroupPeers). GPU suites on 4 GPUs (the new sym_group_peers and
# those whose grouped calls now take it) and on 2; the drop-in suite; graphs, plain buffers, kiln
# with the clique (default) and without (KILN_SYM_PEERS=0), NCCL in each, 4 and 2 GPUs.
. bench/results/h200x4-s11/scripts/pre.sh
T='sym_group_peers|sym_group_peers_choice|sym_direct|sym_direct_copy_engine|sym_kernels_4gpus|sym_rounds|sym_graph_replays|groups|several_streams|two_communicators|graph_replays|one_process_per_gpu'
timeout 230 .carry/bin/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@($T)" > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 80 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_group_peers|sym_kernels_2gpus|groups)' > $L/tests2.txt 2>&1; echo "rc $?" >> $L/tests2.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 60 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
timeout 50 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 16 --max 1G --factor 4 --csv $L/g4_plain.csv > $L/g4_plain.txt 2>&1
KILN_SYM_PEERS=0 timeout 40 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 256K --max 1G --factor 4 --csv $L/g4_nopeers.csv > $L/g4_nopeers.txt 2>&1
timeout 40 $B --ranks 2 --iters 10 --warmup 3 --graph 10 --min 256K --max 1G --factor 4 --csv $L/g2_plain.csv > $L/g2_plain.txt 2>&1
KILN_SYM_PEERS=0 timeout 40 $B --ranks 2 --iters 10 --warmup 3 --graph 10 --min 256K --max 1G --factor 4 --csv $L/g2_nopeers.csv > $L/g2_nopeers.txt 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |Synthesis|grouped calls|direct \(zero' logs/tests4.txt logs/tests2.txt | head -30; grep -E 'FAIL|rc |Synthesis' logs/shim.txt | head -4
behind logs/g4_plain.csv logs/g4_nopeers.csv logs/g2_plain.csv logs/g2_nopeers.csv
cmp logs/g4_nopeers.csv logs/g4_plain.csv | awk '$2>=1048576 || NR==1 || /errors/'
cmp logs/g2_nopeers.csv logs/g2_plain.csv | awk '$2>=1048576 || NR==1 || /errors/'
big logs/g4_plain.csv logs/g2_plain.csv | grep -E ' (268435456|1073741824) '
rm -rf logs

#!/bin/bash
# session 11, device call 8: the access verdicts kept per GPU and allocation (one driver query
# per buffer and group once known): sym_group_peers (pool memory still refused, graphs) and the
# suites around it on 4 and 2 GPUs; eager batched as run 7, with and without the clique; graphs,
# plain buffers, 4 GPUs, 256 KiB-1 GiB.
. bench/results/h200x4-s11/scripts/pre.sh
timeout 120 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_group_peers|sym_group_peers_choice|sym_direct_copy_engine|groups|several_streams)' > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 40 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_group_peers)' > $L/tests2.txt 2>&1; echo "rc $?" >> $L/tests2.txt
timeout 60 $B --ranks 4 --iters 30 --warmup 5 --batch --host-time --min 256K --max 64M --factor 4 --csv $L/e4_peers.csv > $L/e4_peers.txt 2>&1
KILN_SYM_PEERS=0 timeout 60 $B --ranks 4 --iters 30 --warmup 5 --batch --host-time --min 256K --max 64M --factor 4 --csv $L/e4_nopeers.csv > $L/e4_nopeers.txt 2>&1
timeout 40 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 256K --max 1G --factor 4 --csv $L/g4_plain.csv > $L/g4_plain.txt 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |Synthesis|grouped calls|Assert' logs/tests4.txt logs/tests2.txt | head -20
cmp logs/e4_nopeers.csv logs/e4_peers.csv
behind logs/g4_plain.csv logs/e4_peers.csv
big logs/g4_plain.csv | grep -E ' (268435456|1073741824) '
rm -rf logs

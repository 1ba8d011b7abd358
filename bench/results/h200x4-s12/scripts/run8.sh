#!/bin/bash
# session 12, device call 8: the session's library as committed (PDL on; blocks by role taken out
# again). GPU suites on 4 and 2 GPUs, the drop-in suite, PyTorch's symmetric memory (torchrun, 4
# processes); the tables: graphs 16 B-1 GiB on 4 GPUs plain and windows and on 2 GPUs plain;
# eager batched 8 B-64 KiB on 4 and 2 GPUs.
. bench/results/h200x4-s12/scripts/pre.sh
T='sym_kernels_4gpus|sym_pdl|sym_rounds|sym_direct|sym_direct_copy_engine|sym_group_peers|sym_graph_replays|graph_replays|groups|several_streams|two_communicators|sym_choice|sym_direct_choice|sym_group_peers_choice|one_process_per_gpu|baked_plans_4gpus'
timeout 280 .carry/bin/test_gpu_runtime --verbose -j1 --filter "gpu_runtime/@($T)" > $L/tests4.txt 2>&1; echo "rc $?" >> $L/tests4.txt
CUDA_VISIBLE_DEVICES=0,1 timeout 100 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_kernels_2gpus|sym_pdl|sym_group_peers|sym_direct_copy_engine)' > $L/tests2.txt 2>&1; echo "rc $?" >> $L/tests2.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 50 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
rm -f .carry/shim/test_gpu_shim
S="LD_LIBRARY_PATH=$PWD/.carry/shim/cudart:$LD_LIBRARY_PATH LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 KILN_NCCL_PATH=$REAL KILN_DEBUG=INFO TORCH_SYMMMEM=NCCL OMP_NUM_THREADS=1"
env $S timeout -k 5 50 $P -m torch.distributed.run --nproc-per-node 4 bench/torch_symm_mem.py > $L/symm.txt 2>&1; echo "rc $?" >> $L/symm.txt
timeout 45 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 16 --max 1G --factor 4 --csv $L/g4_plain.csv > $L/g4_plain.txt 2>&1
timeout 45 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 16 --max 1G --factor 4 --window --csv $L/g4_win.csv > $L/g4_win.txt 2>&1
timeout 40 $B --ranks 2 --iters 10 --warmup 3 --graph 10 --min 16 --max 1G --factor 4 --csv $L/g2_plain.csv > $L/g2_plain.txt 2>&1
timeout 35 $B --ranks 4 --iters 50 --warmup 10 --batch --min 8 --max 64K --factor 2 --csv $L/e4.csv > $L/e4.txt 2>&1
timeout 35 $B --ranks 2 --iters 50 --warmup 10 --batch --min 8 --max 64K --factor 2 --csv $L/e2.csv > $L/e2.txt 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |Synthesis|Assert' logs/tests4.txt logs/tests2.txt | head -30; grep -E 'FAIL|rc |Synthesis' logs/shim.txt | head -4
grep -E "exact|differ|rc " logs/symm.txt | sort | uniq -c
behind logs/g4_plain.csv logs/g4_win.csv logs/g2_plain.csv logs/e4.csv logs/e2.csv
big logs/g4_plain.csv logs/g4_win.csv logs/g2_plain.csv | grep -E ' (134217728|268435456|1073741824) '
rm -rf logs

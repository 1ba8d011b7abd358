#!/bin/bash
# session 12, device call 10: the final library (run 9's) through the drop-in (its suite, PyTorch's
# symmetric memory under torchrun) and the tables run 9 lacked: graphs 16 B-1 GiB on 4-GPU windows
# and on 2 GPUs plain.
. bench/results/h200x4-s12/scripts/pre.sh
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 50 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
rm -f .carry/shim/test_gpu_shim
S="LD_LIBRARY_PATH=$PWD/.carry/shim/cudart:$LD_LIBRARY_PATH LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 KILN_NCCL_PATH=$REAL KILN_DEBUG=INFO TORCH_SYMMMEM=NCCL OMP_NUM_THREADS=1"
env $S timeout -k 5 50 $P -m torch.distributed.run --nproc-per-node 4 bench/torch_symm_mem.py > $L/symm.txt 2>&1; echo "rc $?" >> $L/symm.txt
timeout 45 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 16 --max 1G --factor 4 --window --csv $L/g4_win.csv > $L/g4_win.txt 2>&1
timeout 40 $B --ranks 2 --iters 10 --warmup 3 --graph 10 --min 16 --max 1G --factor 4 --csv $L/g2_plain.csv > $L/g2_plain.txt 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |Synthesis' logs/shim.txt | head -4
grep -E "exact|differ|rc " logs/symm.txt | sort | uniq -c
behind logs/g4_win.csv logs/g2_plain.csv
big logs/g4_win.csv logs/g2_plain.csv | grep -E ' (1073741824) '
rm -rf logs

#!/bin/bash
# session 12, device call 3: LL lines between two GPUs (nvl_bench llhop: one hop's time per size,
# blocks, store and poll instruction); the drop-in with PDL: its suite and PyTorch's symmetric
# memory under torchrun (4 processes).
. bench/results/h200x4-s12/scripts/pre.sh
timeout 120 .carry/bin/nvl_bench --iters 3 --only llhop > $L/llhop.txt 2>&1; echo "rc $?" >> $L/llhop.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 50 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
rm -f .carry/shim/test_gpu_shim
S="LD_LIBRARY_PATH=$PWD/.carry/shim/cudart:$LD_LIBRARY_PATH LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 KILN_NCCL_PATH=$REAL KILN_DEBUG=INFO TORCH_SYMMMEM=NCCL OMP_NUM_THREADS=1"
env $S timeout -k 5 50 $P -m torch.distributed.run --nproc-per-node 4 bench/torch_symm_mem.py > $L/symm.txt 2>&1; echo "rc $?" >> $L/symm.txt
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
grep -E 'FAIL|rc |Synthesis' logs/shim.txt | head -4
grep -E "exact|differ|rc " logs/symm.txt | sort | uniq -c
cat logs/llhop.txt
rm -rf logs

#!/bin/bash
# session 10, device call 9: the final build as the drop-in under PyTorch on 4 GPUs (torchrun,
# one process per GPU): PyTorch's symmetric memory through kiln (zero copy from 1 MiB on 4 GPUs;
# then the copy engine at every zero-copy size, KILN_SYM_CE_BYTES=0), and torch_collectives.py
# (float32, bfloat16, 1 KiB-64 MiB) under NCCL, the shim switched off, and kiln.
. bench/results/h200x4-s10/scripts/pre.sh
rm -f .carry/shim/test_gpu_shim
export OMP_NUM_THREADS=1
S="LD_LIBRARY_PATH=$PWD/.carry/shim/cudart:$LD_LIBRARY_PATH LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 KILN_NCCL_PATH=$REAL KILN_DEBUG=INFO TORCH_SYMMMEM=NCCL"
env $S timeout -k 5 60 $P -m torch.distributed.run --nproc-per-node 4 bench/torch_symm_mem.py > $L/symm.txt 2>&1; echo "rc $?" >> $L/symm.txt
env $S KILN_SYM_CE_BYTES=0 timeout -k 5 60 $P -m torch.distributed.run --nproc-per-node 4 bench/torch_symm_mem.py > $L/symm_ce.txt 2>&1; echo "rc $?" >> $L/symm_ce.txt
OUT=$L/shim GPUS=4 SIZES=1K,64K,1M,16M,64M ITERS=20 timeout 170 scripts/device-shim.sh > $L/shim_run.txt 2>&1; echo "rc $?" >> $L/shim_run.txt
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
for f in symm symm_ce; do echo "== $f"; grep -E "exact|differ|rc |Error|sym-|zero copy" logs/$f.txt | sed 's/pid [0-9]*: //' | sort | uniq -c | head -12; done
tail -3 logs/shim_run.txt; grep -ciE "mismatch|wrong|FAIL" logs/shim/table.txt; head -40 logs/shim/table.txt
rm -rf logs

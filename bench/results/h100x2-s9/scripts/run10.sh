#!/bin/bash
# session 9, device call 10: the final build's drop-in under PyTorch on 2 GPUs (plain buffers,
# scripts/device-shim.sh: NCCL alone, the shim off, kiln; every result checked), including
# 256 MiB (alltoall as a copy, reducescatter in 8 MiB rounds).
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
mkdir -p .carry/shim/cudart && cp -L .carry/lib/libcudart.so* .carry/shim/cudart/
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=1
nvidia-smi -L > $L/gpus.txt
OUT=$L/shim GPUS=2 SIZES=1K,1M,256M ITERS=5 timeout 280 scripts/device-shim.sh > $L/device_shim.txt 2>&1; echo "rc $?" >> $L/device_shim.txt
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt; tail -4 logs/device_shim.txt; cat logs/shim/table.txt 2>/dev/null | head -40
rm -rf logs

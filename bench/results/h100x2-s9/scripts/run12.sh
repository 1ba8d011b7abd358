#!/bin/bash
# session 9, device call 12: run 10's two slow rows (reduce_scatter bfloat16 1 KiB graph, 1 MiB
# eager) again under torchrun, alone and with 20 calls per timing instead of 5.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
mkdir -p .carry/shim/cudart && cp -L .carry/lib/libcudart.so* .carry/shim/cudart/
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=1
nvidia-smi -L > $L/gpus.txt
rm -f .carry/shim/test_gpu_shim
OUT=$L/shim GPUS=2 SIZES=1K,1M COLLS=reduce_scatter,all_reduce DTYPES=bfloat16 ITERS=20 timeout 200 scripts/device-shim.sh > $L/device_shim.txt 2>&1; echo "rc $?" >> $L/device_shim.txt
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt; tail -2 logs/device_shim.txt; cat logs/shim/table.txt 2>/dev/null | head -20
rm -rf logs

#!/bin/bash
# session 8, device call 7: the drop-in under PyTorch on 2 GPUs, final build: symmetric memory
# (TORCH_SYMMMEM=NCCL, bench/torch_symm_mem.py) on the real NCCL and through kiln, then the usual
# torchrun table (scripts/device-shim.sh).
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
mkdir -p .carry/shim/cudart && cp -L .carry/lib/libcudart.so* .carry/shim/cudart/
P=/opt/torch/.venv/bin/python
REAL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=1
nvidia-smi -L > $L/gpus.txt
TORCH_SYMMMEM=NCCL timeout -k 5 120 $P -m torch.distributed.run --nproc-per-node 2 bench/torch_symm_mem.py > $L/symm_nccl.txt 2>&1; echo "rc $?" >> $L/symm_nccl.txt
LD_LIBRARY_PATH=$PWD/.carry/shim/cudart:$LD_LIBRARY_PATH LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 KILN_NCCL_PATH=$REAL KILN_DEBUG=INFO TORCH_SYMMMEM=NCCL timeout -k 5 120 $P -m torch.distributed.run --nproc-per-node 2 bench/torch_symm_mem.py > $L/symm_kiln.txt 2>&1; echo "rc $?" >> $L/symm_kiln.txt
OUT=$L/shim GPUS=2 SIZES=1K,1M,64M ITERS=10 timeout 400 scripts/device-shim.sh > $L/device_shim.txt 2>&1; echo "rc $?" >> $L/device_shim.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
echo "== symm nccl"; tar xzf logs.tgz -O logs/symm_nccl.txt | grep -E "exact|differ|rc |Error|error" | head -8
echo "== symm kiln"; tar xzf logs.tgz -O logs/symm_kiln.txt | grep -E "exact|differ|rc |Error|error|window|zero copy|sym-" | sort | uniq -c | head -20
echo "== device-shim"; tar xzf logs.tgz -O logs/device_shim.txt | tail -6

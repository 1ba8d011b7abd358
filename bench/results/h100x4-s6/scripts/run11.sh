#!/bin/bash
# session 6, device call 11 (4 GPUs): the drop-in libnccl.so.2 under an unchanged PyTorch with the
# symmetric-memory kernels as defaults (build of run 10): scripts/device-shim.sh on 4 GPUs,
# torchrun, float32 and bfloat16, 1 KiB-4 MiB (the sym ranges), eager and CUDA graphs, every
# result checked exactly; NCCL alone, the shim with KILN_DISABLE=1, and kiln.
tar xJf .carry/pack.tar.xz -C .carry
mkdir -p .carry/shim/cudart && cp -L .carry/lib/libcudart.so* .carry/shim/cudart/
GPUS=4 SIZES=1K,64K,1M,4M DTYPES=float32,bfloat16 COLLS=all_reduce,all_gather,reduce_scatter,all_to_all ITERS=10 \
  timeout 380 scripts/device-shim.sh
echo "rc $?"

#!/bin/bash
# session 8, device call 10: the cleanup after the whole-diff review (direct() sets the geometry in place, the drop-in looks up zero copy only for its INFO lines, one window struct in the shim; no behaviour change meant): sym suites, drop-in suite, PyTorch symmetric memory
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
mkdir -p .carry/shim/cudart && cp -L .carry/lib/libcudart.so* .carry/shim/cudart/
P=/opt/torch/.venv/bin/python
REAL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
nvidia-smi -L > $L/gpus.txt
( . scripts/carry-libs.sh; device_env $PWD/.carry/lib
  timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_direct|sym_direct_choice|sym_kernels_2gpus|sym_rounds|sym_graph_replays|sym_choice)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
  KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 120 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt )
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=1
LD_LIBRARY_PATH=$PWD/.carry/shim/cudart:$LD_LIBRARY_PATH LD_PRELOAD=$PWD/.carry/shim/libnccl.so.2 KILN_NCCL_PATH=$REAL KILN_DEBUG=INFO TORCH_SYMMMEM=NCCL timeout -k 5 120 $P -m torch.distributed.run --nproc-per-node 2 bench/torch_symm_mem.py > $L/symm_kiln.txt 2>&1; echo "rc $?" >> $L/symm_kiln.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|rc |checked|Synthesis' | head -8
tar xzf logs.tgz -O logs/shim.txt | grep -E 'FAIL|rc |Synthesis' | head -4
echo "== symm kiln"; tar xzf logs.tgz -O logs/symm_kiln.txt | grep -E "exact|differ|rc |Error|WARN|windows added|sym-|zero copy" | sed 's/pid [0-9]*: //' | sort | uniq -c | head -20

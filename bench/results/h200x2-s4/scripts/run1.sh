#!/bin/bash
# session 4, device call 1: validate the session-3 refactors (kernels beginStep/waitStep, groups
# issueAll, exec freeRetired, shim group end) on 2 GPUs; quick benchmarks; drop-in under torchrun
export NCCL_NVLS_ENABLE=0 KILN_TEST_REQUIRE_GPUS=1
NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
B=.carry/bin/coll_bench
(
export LD_LIBRARY_PATH=$NL:$PWD/.carry/lib
nvidia-smi -L > $L/gpus.txt; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> $L/gpus.txt
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/!(*4gpus|*8gpus)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NL/libnccl.so.2 timeout 100 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
timeout 90 $B --ranks 2 --iters 20 --warmup 5 --min 8 --max 1G --csv $L/coll_n2.csv --svg $L/coll_n2.svg > $L/coll_n2.txt 2>&1
timeout 40 $B --ranks 2 --iters 10 --warmup 3 --graph 10 --min 8 --max 4M --csv $L/graph_n2.csv > $L/graph_n2.txt 2>&1
timeout 60 $B --ranks 2 --mp --iters 20 --warmup 5 --min 8 --max 64M --factor 16 --csv $L/mp_n2.csv > $L/mp_n2.txt 2>&1
)
mkdir -p $OUT/shim
GPUS="2" SIZES=8,1K,64K,1M,16M DTYPES=float32,bfloat16 OUT=$OUT/shim timeout 150 bash scripts/device-shim.sh > $L/device_shim.txt 2>&1; echo "rc $?" >> $L/device_shim.txt
cd $OUT && tar czf logs.tgz logs shim && rm -rf logs shim
tar xzf logs.tgz -O logs/gpus.txt
tar xzf logs.tgz -O logs/tests.txt | grep -E 'PASS|FAIL|Synthesis|rc '
tar xzf logs.tgz -O logs/shim.txt | grep -E 'FAIL|Synthesis|rc '
tar xzf logs.tgz -O logs/device_shim.txt | grep -E 'suite|exit|rc |FAIL'
for f in coll_n2 graph_n2 mp_n2; do echo "== $f"; tar xzf logs.tgz -O logs/$f.csv | awk -F, 'NR>1{printf "%s %s %s %s %s\n",$1,$7,$10,$14,$NF}' | awk '{print}' | tr '\n' ';' ; echo; done

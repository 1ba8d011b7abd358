#!/bin/bash
# session 4, device call 7: the final build (LL128 in the kernels, 34 baked plans: 2-rank LL i8/i16
# added) - every 2-GPU suite, shim suite, drop-in under torchrun, benchmarks (eager, graphs, in
# place, one process per GPU), the replaced plans forced at the sizes they served, hop latency
export NCCL_NVLS_ENABLE=0 KILN_TEST_REQUIRE_GPUS=1
NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
B=.carry/bin/coll_bench
(
export LD_LIBRARY_PATH=$NL:$PWD/.carry/lib
nvidia-smi -L > $L/gpus.txt; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> $L/gpus.txt
timeout 240 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/!(*4gpus|*8gpus)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NL/libnccl.so.2 timeout 100 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
timeout 60 .carry/bin/prim_bench --iters 10 --max 32M --csv $L/prim.csv > $L/prim.txt 2>&1; echo "rc $?" >> $L/prim.txt
timeout 90 $B --ranks 2 --iters 20 --warmup 5 --min 8 --max 1G --csv $L/coll_n2.csv --svg $L/coll_n2.svg > $L/coll_n2.txt 2>&1
timeout 60 $B --ranks 2 --iters 10 --warmup 3 --graph 10 --min 8 --max 4M --factor 2 --csv $L/graph_n2.csv --svg $L/graph_n2.svg > $L/graph_n2.txt 2>&1
timeout 30 $B --ranks 2 --iters 10 --warmup 3 --graph 10 --inplace --colls allreduce --min 8 --max 4M --factor 2 --csv $L/graph_inplace_n2.csv > $L/graph_inplace_n2.txt 2>&1
timeout 60 $B --ranks 2 --mp --iters 20 --warmup 5 --min 8 --max 64M --factor 4 --csv $L/mp_n2.csv > $L/mp_n2.txt 2>&1
f() { c=$1; p=$2; lo=$3; hi=$4; shift 4; timeout 30 $B --ranks 2 --graph 10 --iters 10 --warmup 3 --colls $c --plan $p --min $lo --max $hi --factor 2 --csv $L/old_${p}.csv "$@" > $L/old_${p}.txt 2>&1; }
f allgather direct-allgather-n2-c1-i4-LL 64K 256K
f allgather ring-allgather-n2-c1-i32 512K 1M
f alltoall direct-alltoall-n2-c1-i4-LL 16K 256K
f alltoall direct-alltoall-n2-c1-i32 512K 1M
f reducescatter oneshot-reducescatter-n2-i4-gather-LL 128K 256K
f allreduce oneshot-allreduce-n2-i4-inplace-LL 32K 256K --inplace
)
mkdir -p $OUT/shim
GPUS="2" SIZES=8,1K,64K,256K,1M,16M DTYPES=float32,bfloat16,int32 OUT=$OUT/shim timeout 150 bash scripts/device-shim.sh > $L/device_shim.txt 2>&1; echo "rc $?" >> $L/device_shim.txt
cd $OUT && tar czf logs.tgz logs shim && rm -rf logs shim
tar xzf logs.tgz -O logs/gpus.txt | head -2
tar xzf logs.tgz -O logs/tests.txt | grep -E 'PASS|FAIL|Synthesis|rc |ssert'
tar xzf logs.tgz -O logs/shim.txt | grep -E 'FAIL|Synthesis|rc '
tar xzf logs.tgz -O logs/device_shim.txt | grep -E 'suite|exit|rc |FAIL'
tar xzf logs.tgz -O logs/prim.txt | grep -E "^hop|^flag|rc " | awk '$3==1 || /rc/'
for x in graph_n2 graph_inplace_n2; do echo "== $x"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 && $7>=8192 {printf "%s %s %s %s %.2f x%s e%s%s\n",$1,$7,$9,$10,$10/$22,$22,$17,$21}'; done
for x in $(tar tzf logs.tgz | grep 'old_.*csv'); do tar xzf logs.tgz -O $x | awk -F, 'NR>1{printf "OLD %s %s %s nccl %s kiln %.2f\n",$1,$7,$9,$10,$10/$22}'; done

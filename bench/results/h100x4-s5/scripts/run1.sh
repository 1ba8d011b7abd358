#!/bin/bash
# session 5, device call 1: the final build of session 4 (never run on a GPU) - both GPU suites on
# every GPU count present, the drop-in under torchrun, LL128 with its second load (KILN_LL128=1,
# classic_plans_2gpus with 3 seeds), prim_bench checks, and a short graph/eager bench on all GPUs.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
N=$(nvidia-smi -L | wc -l)
nvidia-smi -L > $L/gpus.txt; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1 >> $L/gpus.txt
F='gpu_runtime/!(*8gpus)'; [ $N -lt 4 ] && F='gpu_runtime/!(*4gpus|*8gpus)'
timeout 240 .carry/bin/test_gpu_runtime --verbose -j1 --filter "$F" > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 90 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
for s in 11 12 13; do KILN_LL128=1 KILN_TEST_SEED=$s timeout 90 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/classic_plans_2gpus' > $L/ll128_$s.txt 2>&1; echo "rc $?" >> $L/ll128_$s.txt; done
timeout 60 .carry/bin/prim_bench --iters 5 --max 4M > $L/prim.txt 2>&1; echo "rc $?" >> $L/prim.txt
timeout 40 $B --ranks $N --iters 10 --warmup 3 --graph 10 --min 8 --max 4M --factor 4 --csv $L/graph.csv > $L/graph.txt 2>&1
timeout 40 $B --ranks $N --iters 20 --warmup 5 --min 8 --max 4M --factor 4 --csv $L/eager.csv > $L/eager.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt
for f in tests shim ll128_11 ll128_12 ll128_13 prim; do echo "== $f"; tar xzf logs.tgz -O logs/$f.txt | grep -E 'Synthesis|rc |want|FAIL|error' | head -8; done
for x in graph eager; do echo "== $x"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s %s %.2f x%s e%s%s\n",$1,$7,$10,$10/$22,$22,$17,$21}' | tr '\n' ';'; echo; done

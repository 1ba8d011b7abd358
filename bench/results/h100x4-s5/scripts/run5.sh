#!/bin/bash
# session 5, device call 5 (4 GPUs): the final build (44 baked plans, copy-first direct plans,
# quiet kilnPlanSupports, group wake only for close groups): the suites that cover what changed,
# the drop-in suite, then the benchmark with the default plan set on 4 and 2 GPUs (graphs to
# 64 MiB, eager to 1 GiB, one process per GPU to 4 MiB), and 4-rank LL128 candidates forced with
# KILN_LL128=1 (loaded at run time, interpreter).
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 150 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(baked_plans_2gpus|baked_plans_4gpus|classic_plans_2gpus|groups|graph_replays|one_process_per_gpu|supports_and_load_errors)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 90 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
for n in 4 2; do
  timeout 50 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 8 --max 64M --factor 2 --csv $L/graph_n$n.csv --svg $L/graph_n$n.svg > $L/graph_n$n.txt 2>&1
  timeout 25 $B --ranks $n --iters 10 --warmup 3 --graph 10 --inplace --colls allreduce --min 8 --max 64M --factor 2 --csv $L/graph_ip_n$n.csv > $L/graph_ip_n$n.txt 2>&1
  timeout 70 $B --ranks $n --iters 10 --warmup 3 --min 8 --max 1G --factor 4 --csv $L/eager_n$n.csv --svg $L/eager_n$n.svg > $L/eager_n$n.txt 2>&1
done
timeout 40 $B --ranks 4 --mp --iters 20 --warmup 5 --min 8 --max 4M --factor 4 --csv $L/mp_n4.csv > $L/mp_n4.txt 2>&1
for p in direct-allreduce-n4-c1-i4-LL128 direct-allreduce-n4-c1-i8-LL128 oneshot-allreduce-n4-i4-gather-LL128 oneshot-allreduce-n4-i8-gather-LL128; do
  KILN_LL128=1 timeout 20 $B --ranks 4 --colls allreduce --plan $p --plans $PWD/.carry/plans128 --graph 10 --iters 10 --warmup 3 --min 256K --max 4M --factor 2 --csv $L/ll128_$p.csv > $L/ll128_$p.txt 2>&1
done
for p in oneshot-reducescatter-n4-i4-gather-LL128 oneshot-reducescatter-n4-i8-gather-LL128; do
  KILN_LL128=1 timeout 20 $B --ranks 4 --colls reducescatter --plan $p --plans $PWD/.carry/plans128 --graph 10 --iters 10 --warmup 3 --min 256K --max 4M --factor 2 --csv $L/ll128_$p.csv > $L/ll128_$p.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for f in tests shim; do tar xzf logs.tgz -O logs/$f.txt | grep -E 'FAIL|Synthesis|rc |want' | head -6; done

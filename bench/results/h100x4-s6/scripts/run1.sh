#!/bin/bash
# session 6, device call 1 (4 GPUs): first, the suites on the final build of session 5 (its 7 new
# 2-rank one-shot chain plans had never run in the baked suite): baked plans on 2 and 4 GPUs
# (every baked plan, every dtype and op against a CPU reference on fresh random data), classic
# plans on 2 GPUs, groups, graph replays; the drop-in suite. Then the final set's figures: CUDA
# graphs 8 B-64 MiB and eager batched 8 B-4 MiB, 4 and 2 GPUs, in and out of place.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 170 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(baked_plans_2gpus|baked_plans_4gpus|classic_plans_2gpus|groups|graph_replays)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 60 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
for n in 4 2; do
  timeout 45 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 8 --max 64M --factor 2 --csv $L/graph_n$n.csv > $L/graph_n$n.txt 2>&1
  timeout 25 $B --ranks $n --iters 10 --warmup 3 --graph 10 --inplace --colls allreduce --min 8 --max 64M --factor 2 --csv $L/graph_ip_n$n.csv > $L/graph_ip_n$n.txt 2>&1
  timeout 45 $B --ranks $n --iters 50 --warmup 10 --batch --min 8 --max 4M --factor 2 --csv $L/batch_n$n.csv > $L/batch_n$n.txt 2>&1
  timeout 25 $B --ranks $n --iters 50 --warmup 10 --batch --inplace --colls allreduce --min 8 --max 4M --factor 2 --csv $L/batch_ip_n$n.csv > $L/batch_ip_n$n.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for f in tests shim; do tar xzf logs.tgz -O logs/$f.txt | grep -E 'FAIL|Synthesis|rc |want' | head -8; done
for x in graph_n4 graph_ip_n4 graph_n2 graph_ip_n2 batch_n4 batch_ip_n4 batch_n2 batch_ip_n2; do echo "== $x"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 && $7<=4194304 {printf "%s %s k%.2f x%s e%s%s; ",substr($1,1,5),$7,$14,$22,$13,$17}'; echo; done

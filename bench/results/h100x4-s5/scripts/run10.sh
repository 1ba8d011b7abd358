#!/bin/bash
# session 5, device call 10 (4 GPUs): the send side's `tail` loaded in blockBegin by another warp
# (one round trip less before a block's first send). Suites on the new kernels, prim_bench, then
# the same graph benchmark with the build before the change (.carry/old/coll_bench) and after,
# alternating, in one call: 2 and 4 GPUs, 8 B-1 MiB.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry; tar xJf .carry/old.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
nvidia-smi -L > $L/gpus.txt
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(baked_plans_2gpus|baked_plans_4gpus|classic_plans_2gpus|groups|graph_replays|several_streams|two_communicators|one_process_per_gpu|missing_peer_times_out)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 40 .carry/bin/prim_bench --iters 5 --max 1M > $L/prim.txt 2>&1; echo "rc $?" >> $L/prim.txt
G="--graph 10 --iters 10 --warmup 3 --min 8 --max 1M --factor 4"
for n in 2 4; do for k in old new new2 old2; do
  B=.carry/bin/coll_bench; case $k in old*) B=.carry/old/coll_bench;; esac
  timeout 30 $B --ranks $n $G --csv $L/g_${k}_n$n.csv > $L/g_${k}_n$n.txt 2>&1
done; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'PASS|FAIL|Synthesis|rc |want' | head -12
tar xzf logs.tgz -O logs/prim.txt | grep -E 'hop|rc ' | head -12

#!/bin/bash
# session 6, device call 9 (4 GPUs): the final build (symmetric-memory kernels with LL lines up to
# 128 KiB of segment or two-shot share, the final ranges of host/sym.c; plans/baked baked for float, tests on): the
# GPU suites the change touches and the drop-in suite, then the figures of the closing note:
# graphs 8 B-64 MiB and eager batched 8 B-16 MiB on 4 and 2 GPUs, in and out of place; one
# process per GPU on 4 GPUs.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays|baked_plans_2gpus|baked_plans_4gpus|groups|graph_replays|several_streams|two_communicators|one_process_per_gpu|supports_and_load_errors|missing_peer_times_out)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 60 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
for n in 4 2; do
  timeout 50 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 8 --max 64M --factor 2 --csv $L/graph_n$n.csv > $L/graph_n$n.txt 2>&1
  timeout 25 $B --ranks $n --iters 10 --warmup 3 --graph 10 --inplace --colls allreduce --min 8 --max 64M --factor 2 --csv $L/graph_ip_n$n.csv > $L/graph_ip_n$n.txt 2>&1
  timeout 45 $B --ranks $n --iters 50 --warmup 10 --batch --host-time --min 8 --max 16M --factor 2 --csv $L/batch_n$n.csv > $L/batch_n$n.txt 2>&1
  timeout 25 $B --ranks $n --iters 50 --warmup 10 --batch --inplace --colls allreduce --min 8 --max 16M --factor 2 --csv $L/batch_ip_n$n.csv > $L/batch_ip_n$n.txt 2>&1
done
timeout 60 $B --ranks 4 --mp --iters 20 --warmup 5 --min 8 --max 16M --factor 4 --csv $L/mp_n4.csv > $L/mp_n4.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for f in tests shim; do tar xzf logs.tgz -O logs/$f.txt | grep -E 'FAIL|Synthesis|rc |checked' | head -10; done
for x in batch_n4; do echo "== $x"; tar xzf logs.tgz -O logs/$x.txt | grep "host:" | grep allreduce | head -12; done
for x in graph_n4 graph_n2 mp_n4; do echo "== $x"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 && $7<=16777216 {printf "%s %s x%s e%s%s%s; ",substr($1,1,5),$7,$26,$17,$21,$25}'; echo; done

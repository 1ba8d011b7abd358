#!/bin/bash
# session 7, device call 6 (4 GPUs): the final build (symmetric kernels at every size on 2 and 4
# GPUs, 128 MiB of staging, copies in rounds of 16 MiB, reductions and large alltoall pieces in
# rounds of a half with 128 blocks): the GPU suites, the drop-in suite, then CUDA graphs 8 B-1 GiB
# on 4 and 2 GPUs (in and out of place).
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 240 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_rounds|sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks|sym_choice|baked_plans_4gpus|groups|graph_replays|several_streams|two_communicators|one_process_per_gpu|supports_and_load_errors|missing_peer_times_out)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 KILN_TEST_REAL_NCCL=$NCCL_LIB/libnccl.so.2 timeout 60 .carry/shim/test_gpu_shim --verbose -j1 > $L/shim.txt 2>&1; echo "rc $?" >> $L/shim.txt
for n in 4 2; do
  f=2; [ $n = 2 ] && f=4
  timeout 50 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 8 --max 64M --factor $f --csv $L/graph_n$n.csv > $L/graph_n$n.txt 2>&1
  timeout 45 $B --ranks $n --iters 5 --warmup 2 --graph 3 --min 128M --max 1G --factor 2 --csv $L/graphL_n$n.csv > $L/graphL_n$n.txt 2>&1
  timeout 40 $B --ranks $n --iters 10 --warmup 3 --graph 10 --inplace --colls allreduce --min 8 --max 1G --factor 4 --csv $L/graph_ip_n$n.csv > $L/graph_ip_n$n.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for f in tests shim; do tar xzf logs.tgz -O logs/$f.txt | grep -E 'FAIL|Synthesis|rc |checked' | head -10; done
for x in graph_n4 graphL_n4 graph_ip_n4 graph_n2 graphL_n2 graph_ip_n2; do echo "== $x (slower or errors: coll bytes nccl sym speedup err)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 && ($26<1.0 || $17+$21+$25>0) {printf "%s %s %s %s %s e%s%s%s; ",substr($1,1,5),$7,$10,$22,$26,$17,$21,$25}'; echo; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {n++; if($26>=1.0) k++} END {print k"/"n" rows >= 1.0x"}'; done

#!/bin/bash
# session 7, device call 3 (4 GPUs): every copy to or from several peers in one pass (copyK: the loads of
# all pieces in flight together, stores to all peers interleaved). sym suites, then CUDA graphs on
# 4 GPUs (default and 128 blocks) and 2 GPUs.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 160 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_rounds|sym_kernels_4gpus|sym_kernels_2gpus|sym_graph_replays)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 100 $B --ranks 4 --iters 5 --warmup 2 --graph 5 --min 1M --max 512M --factor 4 --csv $L/graph_n4.csv > $L/graph_n4.txt 2>&1
KILN_SYM_BLOCKS=128 timeout 60 $B --ranks 4 --iters 5 --warmup 2 --graph 5 --colls allreduce,reducescatter,alltoall,allgather --min 16M --max 256M --factor 4 --csv $L/nb128_n4.csv > $L/nb128_n4.txt 2>&1
timeout 60 $B --ranks 2 --iters 5 --warmup 2 --graph 5 --min 1M --max 256M --factor 4 --csv $L/graph_n2.csv > $L/graph_n2.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|rc |checked|Tested|Synthesis' | head -12
for x in graph_n4 nb128_n4 graph_n2; do echo "== $x (coll MiB nccl baked interp sym err)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s %s %s %s %s e%s%s%s; ",substr($1,1,5),$7/1048576,$10,$14,$18,$22,$17,$21,$25}'; echo; done

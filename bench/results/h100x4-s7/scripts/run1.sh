#!/bin/bash
# session 7, device call 1 (4 GPUs): the flag-form symmetric kernels in rounds (any size; round
# r + 1 stored while round r is combined). The sym suites (sym_rounds new), then large sizes in
# CUDA graphs: sym vs the plans vs NCCL, 4 and 2 GPUs, and a sweep of round bytes and blocks.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 150 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_rounds|sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays|sym_empty_blocks)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 120 $B --ranks 4 --iters 5 --warmup 2 --graph 5 --min 4M --max 512M --factor 2 --csv $L/graph_n4.csv > $L/graph_n4.txt 2>&1
timeout 70 $B --ranks 2 --iters 5 --warmup 2 --graph 5 --min 8M --max 512M --factor 4 --csv $L/graph_n2.csv > $L/graph_n2.txt 2>&1
for rb in 262144 1048576; do
  KILN_SYM_ROUND_BYTES=$rb timeout 30 $B --ranks 4 --iters 5 --warmup 2 --graph 5 --colls allreduce,reducescatter --min 32M --max 128M --factor 4 --csv $L/rb${rb}_n4.csv > $L/rb${rb}_n4.txt 2>&1
done
for nb in 32 128; do
  KILN_SYM_BLOCKS=$nb timeout 30 $B --ranks 4 --iters 5 --warmup 2 --graph 5 --colls allreduce,reducescatter --min 32M --max 128M --factor 4 --csv $L/nb${nb}_n4.csv > $L/nb${nb}_n4.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'FAIL|rc |checked|Tested|Synthesis' | head -12
for x in graph_n4 graph_n2 rb262144_n4 rb1048576_n4 nb32_n4 nb128_n4; do echo "== $x (coll MiB nccl baked interp sym err)"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s %s %s %s %s e%s%s%s; ",substr($1,1,5),$7/1048576,$10,$14,$18,$22,$17,$21,$25}'; echo; done

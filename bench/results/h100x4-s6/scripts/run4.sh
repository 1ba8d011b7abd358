#!/bin/bash
# session 6, device call 4 (4 GPUs): the symmetric-memory kernels with 4 KiB of a segment per block
# and room for 128 flags per peer (KILN_SYM_MAX_BLOCKS), the new default ranges (host/sym.c):
# the sym GPU tests again (the flag layout changed), then graphs and eager batched with the
# defaults (at most 64 blocks) and graphs with at most 128 blocks (KILN_SYM_BLOCKS=128), 4 and 2
# GPUs, in and out of place; one process per GPU (4 GPUs, each call timed alone).
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 120 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
for n in 4 2; do
  timeout 50 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 8 --max 64M --factor 2 --csv $L/graph_n$n.csv > $L/graph_n$n.txt 2>&1
  timeout 25 $B --ranks $n --iters 10 --warmup 3 --graph 10 --inplace --colls allreduce --min 8 --max 64M --factor 2 --csv $L/graph_ip_n$n.csv > $L/graph_ip_n$n.txt 2>&1
  KILN_SYM_BLOCKS=128 timeout 40 $B --ranks $n --iters 10 --warmup 3 --graph 10 --min 64K --max 16M --factor 2 --csv $L/b128_n$n.csv > $L/b128_n$n.txt 2>&1
  timeout 45 $B --ranks $n --iters 50 --warmup 10 --batch --min 8 --max 16M --factor 2 --csv $L/batch_n$n.csv > $L/batch_n$n.txt 2>&1
  timeout 25 $B --ranks $n --iters 50 --warmup 10 --batch --inplace --colls allreduce --min 8 --max 16M --factor 2 --csv $L/batch_ip_n$n.csv > $L/batch_ip_n$n.txt 2>&1
done
timeout 60 $B --ranks 4 --mp --iters 20 --warmup 5 --min 64K --max 16M --factor 4 --csv $L/mp_n4.csv > $L/mp_n4.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'PASS|FAIL|Synthesis|rc |checked' | head -10
for x in mp_n4 graph_n4 b128_n4 graph_ip_n4 graph_n2 b128_n2 graph_ip_n2; do echo "== $x"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 && $7>=16384 && $7<=16777216 {p=$14; if (p=="" || ($18!="" && $18<p)) p=$18; printf "%s %s n%.2f p%.2f s%.2f%s e%s%s%s; ",substr($1,1,5),$7,$10,p,$22,$27,$17,$21,$25}'; echo; done

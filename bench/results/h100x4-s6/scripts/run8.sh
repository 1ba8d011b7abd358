#!/bin/bash
# session 6, device call 8 (4 GPUs): two-shot allreduce as LL lines (bodyLL2; KILN_SYM_LL2_BYTES:
# shares up to that size go as lines, default 0 = staged data with flags): the sym GPU tests with
# LL2 on for every share up to 1 MiB (correctness of the new path, every dtype and op), then the
# 4- and 2-GPU allreduce 64 KiB-8 MiB in graphs with two-shot forced, flags vs LL lines, and
# one-shot for reference.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
KILN_SYM_LL2_BYTES=1048576 timeout 120 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(sym_kernels_2gpus|sym_kernels_4gpus|sym_graph_replays)' > $L/tests_ll2.txt 2>&1; echo "rc $?" >> $L/tests_ll2.txt
S="--iters 10 --warmup 3 --graph 10 --colls allreduce --min 64K --max 8M --factor 2"
for n in 4 2; do
  timeout 30 $B --ranks $n $S --sym twoshot --csv $L/flag_n$n.csv > $L/flag_n$n.txt 2>&1
  KILN_SYM_LL2_BYTES=2097152 timeout 30 $B --ranks $n $S --sym twoshot --csv $L/ll2_n$n.csv > $L/ll2_n$n.txt 2>&1
  timeout 30 $B --ranks $n $S --sym oneshot --csv $L/one_n$n.csv > $L/one_n$n.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests_ll2.txt | grep -E 'FAIL|Synthesis|rc |checked' | head -10
for x in flag_n4 ll2_n4 one_n4 flag_n2 ll2_n2 one_n2; do echo "== $x"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {p=$14; if (p=="" || ($18!="" && $18<p)) p=$18; printf "%s n%.2f p%.2f s%.2f e%s; ",$7,$10,p,$22,$25}'; echo; done

#!/bin/bash
# session 5, device call 7 (4 GPUs): the final build (the 4-rank allreduce of run 6 baked: direct
# Simple i32 out of place for 512 KiB-4 MiB, direct Simple i16 in place for 512 KiB-1 MiB): the
# baked suites (every baked plan, every dtype and op, CPU reference), groups, then the 4-rank
# allreduce graphs in and out of place, 8 B-64 MiB.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 90 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(baked_plans_2gpus|baked_plans_4gpus|groups)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 30 $B --ranks 4 --colls allreduce --iters 10 --warmup 3 --graph 10 --min 8 --max 64M --factor 2 --csv $L/graph_ar_n4.csv > $L/graph_ar_n4.txt 2>&1
timeout 30 $B --ranks 4 --colls allreduce --inplace --iters 10 --warmup 3 --graph 10 --min 8 --max 64M --factor 2 --csv $L/graph_ip_n4.csv > $L/graph_ip_n4.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'PASS|FAIL|Synthesis|rc |want' | head
for x in graph_ar_n4 graph_ip_n4; do echo "== $x"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 && $7>=131072 {printf "%s %s n%s k%.2f x%s e%s%s\n",$7,$9,$10,$10/$22,$22,$17,$21}'; done

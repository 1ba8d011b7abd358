#!/bin/bash
# session 4, device call 10 (4 GPUs lent again at the end): LL128 plans back on Simple by default;
# 2- and 4-GPU suites on the final build, 4-GPU benchmarks against the session-3 set (same plans)
export NCCL_NVLS_ENABLE=0 KILN_TEST_REQUIRE_GPUS=1
NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
B=.carry/bin/coll_bench
export LD_LIBRARY_PATH=$NL:$PWD/.carry/lib
nvidia-smi -L > $L/gpus.txt
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(classic_plans_2gpus|baked_plans_2gpus|baked_plans_4gpus|synthesized_plans_4gpus|groups|graph_replays|one_process_per_gpu|two_communicators)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 45 $B --ranks 4 --iters 10 --warmup 3 --graph 10 --min 8 --max 64M --csv $L/graph_n4.csv > $L/graph_n4.txt 2>&1
timeout 45 $B --ranks 4 --iters 20 --warmup 5 --min 8 --max 16M --csv $L/coll_n4.csv > $L/coll_n4.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt
tar xzf logs.tgz -O logs/tests.txt | grep -E 'PASS|FAIL|Synthesis|rc |want'
for x in graph_n4 coll_n4; do echo "== $x"; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 {printf "%s %s %s %.2f x%s e%s%s\n",$1,$7,$10,$10/$22,$22,$17,$21}' | tr '\n' ';'; echo; done

#!/bin/bash
# session 4, device call 5: LL128 with 8 warp stores per round (hop latency for 4 / 8 / 16), the
# 2-rank LL i8/i16 and LL128 i8/i16 candidates: baked suite, sweep (CUDA graphs, in and out of place)
export NCCL_NVLS_ENABLE=0 KILN_TEST_REQUIRE_GPUS=1
NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
B=.carry/bin/coll_bench
export LD_LIBRARY_PATH=$NL:$PWD/.carry/lib
timeout 90 .carry/bin/prim_bench --iters 10 --max 32M --csv $L/prim.csv > $L/prim.txt 2>&1; echo "rc $?" >> $L/prim.txt
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(classic_plans_2gpus|baked_plans_2gpus)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 150 $B --ranks 2 --sweep --graph 10 --iters 10 --warmup 3 --min 16K --max 4M --factor 2 --csv $L/sweep_n2.csv > $L/sweep_n2.txt 2>&1; echo "rc $?" >> $L/sweep_n2.txt
timeout 60 $B --ranks 2 --sweep --graph 10 --iters 10 --warmup 3 --inplace --colls allreduce --min 16K --max 4M --factor 2 --csv $L/sweep_inplace_n2.csv > $L/sweep_inplace_n2.txt 2>&1; echo "rc $?" >> $L/sweep_inplace_n2.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/prim.txt | grep -E "^hop-ll128|rc |prim_bench" | awk '$3==1 || $3==16 || /rc|prim/'
tar xzf logs.tgz -O logs/prim.txt | grep -E "^ll" | awk '$3==64'
tar xzf logs.tgz -O logs/tests.txt | grep -E 'PASS|FAIL|Synthesis|rc |ssert' | head -20
for f in sweep_n2 sweep_inplace_n2; do tar xzf logs.tgz -O logs/$f.txt | grep "rc "; done

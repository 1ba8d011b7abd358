#!/bin/bash
# session 4, device call 2: the LL128 protocol - the primitive pipe (checked), the GPU suites with
# LL128 (classic plans on the interpreter, synthesized, the baked LL128 candidates), sweep of every
# 2-rank baked plan (CUDA graphs) to choose ranges, memcheck of two LL128 plans
export NCCL_NVLS_ENABLE=0 KILN_TEST_REQUIRE_GPUS=1
NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
B=.carry/bin/coll_bench
export LD_LIBRARY_PATH=$NL:$PWD/.carry/lib
nvidia-smi -L > $L/gpus.txt
timeout 60 .carry/bin/prim_bench --iters 10 --max 64M --csv $L/prim.csv > $L/prim.txt 2>&1; echo "rc $?" >> $L/prim.txt
timeout 240 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(classic_plans_2gpus|baked_plans_2gpus|synthesized_plans_2gpus|graph_replays|supports_and_load_errors)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 150 $B --ranks 2 --sweep --graph 10 --iters 10 --warmup 3 --min 16K --max 4M --factor 2 --csv $L/sweep_n2.csv > $L/sweep_n2.txt 2>&1; echo "rc $?" >> $L/sweep_n2.txt
timeout 40 $B --ranks 2 --sweep --graph 10 --iters 10 --warmup 3 --inplace --colls allreduce --min 16K --max 4M --factor 2 --csv $L/sweep_inplace_n2.csv > $L/sweep_inplace_n2.txt 2>&1; echo "rc $?" >> $L/sweep_inplace_n2.txt
for p in direct-allgather-n2-c1-i8-LL128 oneshot-reducescatter-n2-i8-gather-LL128; do
  timeout 60 compute-sanitizer --tool memcheck $B --ranks 2 --plan $p --min 1000 --max 2M --factor 16 --iters 1 --warmup 1 > $L/memcheck_$p.txt 2>&1; echo "rc $?" >> $L/memcheck_$p.txt
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt
tar xzf logs.tgz -O logs/prim.txt | grep -E "^ll|rc |prim_bench" | awk '$3==16 || $3==64 || /rc|prim/'
tar xzf logs.tgz -O logs/tests.txt | grep -E 'PASS|FAIL|Synthesis|rc |ssert' | head -30
for p in direct-allgather-n2-c1-i8-LL128 oneshot-reducescatter-n2-i8-gather-LL128; do tar xzf logs.tgz -O logs/memcheck_$p.txt | grep -E "ERROR SUMMARY|rc "; done
for f in sweep_n2 sweep_inplace_n2; do echo "== $f"; tar xzf logs.tgz -O logs/$f.csv | awk -F, 'NR>1{printf "%s %s %s nccl %s baked %s err %s\n",$1,$7,$9,$10,$14,$17}'; tar xzf logs.tgz -O logs/$f.txt | grep "rc "; done

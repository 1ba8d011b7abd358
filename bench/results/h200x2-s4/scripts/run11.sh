#!/bin/bash
# session 4, device call 11 (4x H200): 4-rank direct LL allgather/alltoall with 4, 6, 8 instances -
# baked suite on 4 GPUs, baked sweep 16 KiB-2 MiB (graphs), the Simple i4 plans forced (interpreter)
export NCCL_NVLS_ENABLE=0 KILN_TEST_REQUIRE_GPUS=1
NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
B=.carry/bin/coll_bench
export LD_LIBRARY_PATH=$NL:$PWD/.carry/lib
timeout 60 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/baked_plans_4gpus' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
timeout 80 $B --ranks 4 --sweep --graph 10 --iters 10 --warmup 3 --colls allgather,alltoall --min 16K --max 2M --factor 2 --csv $L/sweep_n4.csv > $L/sweep_n4.txt 2>&1; echo "rc $?" >> $L/sweep_n4.txt
timeout 25 $B --ranks 4 --graph 10 --iters 10 --warmup 3 --colls allgather --plan direct-allgather-n4-c1-i4 --min 64K --max 2M --factor 2 --csv $L/f_ag.csv > $L/f_ag.txt 2>&1
timeout 25 $B --ranks 4 --graph 10 --iters 10 --warmup 3 --colls alltoall --plan direct-alltoall-n4-c1-i4 --min 64K --max 4M --factor 2 --csv $L/f_a2a.csv > $L/f_a2a.txt 2>&1
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/tests.txt | grep -E 'PASS|FAIL|rc |want'
tar xzf logs.tgz -O logs/sweep_n4.txt | grep "rc "
for x in f_ag f_a2a; do tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1{printf "F %s %s %s nccl %s interp %s\n",$1,$7,$9,$10,$18}'; done
tar xzf logs.tgz -O logs/sweep_n4.csv | awk -F, 'NR>1{printf "S %s %s %s nccl %s baked %s e%s\n",$1,$7,$9,$10,$14,$17}'

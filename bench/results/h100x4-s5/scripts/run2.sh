#!/bin/bash
# session 5, device call 2 (4 GPUs): the runtime tests run 1 did not reach (its 240 s ran out
# inside classic_plans_4gpus, every plan so far passing), then the candidate sweep: every plan of
# the candidate build (plans/baked + 28 candidates, float only) at 16 KiB-4 MiB, CUDA graphs of
# 10 calls, 4 and 2 ranks, out of place and in place; every result compared with NCCL's.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry; tar xJf .carry/cand.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
nvidia-smi -L > $L/gpus.txt
timeout 200 .carry/bin/test_gpu_runtime --verbose -j1 --filter 'gpu_runtime/@(synthesized_plans_verified_at_runtime_fifo_depth|synthesized_plans_2gpus|synthesized_plans_4gpus|large_buffers|graph_replays|several_streams|two_communicators|groups|missing_peer_times_out|supports_and_load_errors|one_process_per_gpu)' > $L/tests.txt 2>&1; echo "rc $?" >> $L/tests.txt
B=.carry/cand/coll_bench
S="--sweep --graph 10 --iters 10 --warmup 3 --min 16K --max 4M --factor 2"
timeout 110 $B --ranks 4 $S --csv $L/sw_n4.csv > $L/sw_n4.txt 2>&1; echo "rc $?" >> $L/sw_n4.txt
timeout 40 $B --ranks 4 $S --inplace --colls allreduce --csv $L/sw_n4_ip.csv > $L/sw_n4_ip.txt 2>&1; echo "rc $?" >> $L/sw_n4_ip.txt
timeout 80 $B --ranks 2 $S --csv $L/sw_n2.csv > $L/sw_n2.txt 2>&1; echo "rc $?" >> $L/sw_n2.txt
timeout 30 $B --ranks 2 $S --inplace --colls allreduce --csv $L/sw_n2_ip.csv > $L/sw_n2_ip.txt 2>&1; echo "rc $?" >> $L/sw_n2_ip.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/tests.txt | grep -E 'PASS|FAIL|Synthesis|rc |want'
for x in sw_n4 sw_n4_ip sw_n2 sw_n2_ip; do tar xzf logs.tgz -O logs/$x.txt | grep "rc "; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 && $17!="" && $17!="0" {print "ERR",$0}'; done

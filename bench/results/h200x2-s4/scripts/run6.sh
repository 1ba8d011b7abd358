#!/bin/bash
# session 4, device call 6: boundaries between the LL i8/i16 candidates and the Simple plans on
# their default kernel (interpreter when not inlined), forced plans, CUDA graphs, 2 GPUs
export NCCL_NVLS_ENABLE=0
NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
B=.carry/bin/coll_bench
export LD_LIBRARY_PATH=$NL:$PWD/.carry/lib
f() { c=$1; p=$2; lo=$3; hi=$4; shift 4; timeout 30 $B --ranks 2 --graph 10 --iters 10 --warmup 3 --colls $c --plan $p --min $lo --max $hi --factor 2 --csv $L/b_${p}$*.csv "$@" > $L/b_${p}$*.txt 2>&1; }
f allgather ring-allgather-n2-c1-i32 256K 4M
f allgather direct-allgather-n2-c1-i16-LL 256K 4M
f alltoall direct-alltoall-n2-c1-i32 256K 4M
f alltoall direct-alltoall-n2-c1-i16-LL 256K 4M
f reducescatter ring-reducescatter-n2-c1-i32 128K 4M
f reducescatter oneshot-reducescatter-n2-i16-gather-LL 128K 4M
f reducescatter oneshot-reducescatter-n2-i8-gather-LL 128K 1M
f allreduce ring-allreduce-n2-c1-i32 256K 4M
f allreduce oneshot-allreduce-n2-i16-gather-LL 256K 4M
f allreduce oneshot-allreduce-n2-i4 256K 2M
f allreduce ring-allreduce-n2-c1-i32-inplace 64K 4M --inplace
f allreduce oneshot-allreduce-n2-i16-inplace-LL 64K 4M --inplace
cd $OUT && tar czf logs.tgz logs && rm -rf logs
for x in $(tar tzf logs.tgz | grep 'b_.*csv'); do tar xzf logs.tgz -O $x | awk -F, 'NR>1{printf "%s %s %s nccl %s baked %s interp %s x%s errs %s%s\n",$1,$7,$9,$10,$14,$18,$22,$17,$21}'; done

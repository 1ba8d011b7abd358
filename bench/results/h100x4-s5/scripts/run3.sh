#!/bin/bash
# session 5, device call 3 (4 GPUs): plans whose baked kernel is not what runs by default (Simple
# plans and LL plans past gen's inline bound run on the interpreter), forced with --plan (baked
# and interpreter columns), CUDA graphs of 10 calls, 64 KiB-4 MiB; candidate build, plus Simple
# direct/one-shot plans loaded at run time from .carry/plans5.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry; tar xJf .carry/cand.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
nvidia-smi -L > $L/gpus.txt
B=.carry/cand/coll_bench
S="--graph 10 --iters 10 --warmup 3 --min 64K --max 4M --factor 2 --plans $PWD/.carry/plans5"
while read n c ip p; do
  [ -z "$n" ] && continue
  x=""; [ "$ip" = 1 ] && x="--inplace"
  timeout 25 $B --ranks $n --colls $c $x --plan $p $S --csv $L/f_${n}_${ip}_$p.csv > $L/f_${n}_${ip}_$p.txt 2>&1 || echo "rc $? $n $c $p"
done <<'LIST'
4 allreduce 0 oneshot-allreduce-n4-i16-gather
4 allreduce 0 ring-allreduce-n4-c1-i32
4 allreduce 0 direct-allreduce-n4-c1-i8-LL
4 allreduce 0 oneshot-allreduce-n4-i8-gather-LL
4 allreduce 0 direct-allreduce-n4-c1-i16
4 allreduce 0 direct-allreduce-n4-c1-i8
4 allreduce 1 ring-allreduce-n4-c1-i32-inplace
4 allreduce 1 direct-allreduce-n4-c1-i8-inplace-LL
4 allreduce 1 oneshot-allreduce-n4-i8-inplace-LL
4 reducescatter 0 ring-reducescatter-n4-c1-i32
4 reducescatter 0 oneshot-reducescatter-n4-i8-gather-LL
4 reducescatter 0 direct-reducescatter-n4-c1-i8-LL
4 reducescatter 0 oneshot-reducescatter-n4-i16-gather
4 reducescatter 0 direct-reducescatter-n4-c1-i16
4 allgather 0 direct-allgather-n4-c1-i16-LL
4 allgather 0 ring-allgather-n4-c1-i32
4 alltoall 0 direct-alltoall-n4-c1-i16-LL
4 alltoall 0 direct-alltoall-n4-c1-i4
2 allreduce 0 oneshot-allreduce-n2-i4
2 allreduce 0 oneshot-allreduce-n2-i32-gather-LL
2 allreduce 0 oneshot-allreduce-n2-i16-gather
2 allreduce 0 oneshot-allreduce-n2-i8-gather
2 allreduce 0 ring-allreduce-n2-c1-i32
2 allreduce 1 ring-allreduce-n2-c1-i32-inplace
2 reducescatter 0 oneshot-reducescatter-n2-i32-gather-LL
2 reducescatter 0 oneshot-reducescatter-n2-i16-gather
2 reducescatter 0 ring-reducescatter-n2-c1-i32
2 allgather 0 ring-allgather-n2-c1-i32
2 alltoall 0 direct-alltoall-n2-c1-i32
LIST
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1

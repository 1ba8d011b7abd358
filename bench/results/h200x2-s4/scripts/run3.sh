#!/bin/bash
# session 4, device call 3: every 2-rank LL128 candidate on the baked kernel and the interpreter
# (CUDA graphs, 64 KiB - 4 MiB), and the current defaults at the same sizes, same call
export NCCL_NVLS_ENABLE=0
NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
B=.carry/bin/coll_bench
export LD_LIBRARY_PATH=$NL:$PWD/.carry/lib
nvidia-smi -L > $L/gpus.txt
timeout 60 $B --ranks 2 --graph 10 --iters 10 --warmup 3 --min 64K --max 4M --factor 2 --csv $L/default.csv > $L/default.txt 2>&1
timeout 30 $B --ranks 2 --graph 10 --iters 10 --warmup 3 --inplace --colls allreduce --min 64K --max 4M --factor 2 --csv $L/default_inplace.csv > $L/default_inplace.txt 2>&1
for p in direct-allgather-n2-c1-i4-LL128 direct-allgather-n2-c1-i8-LL128 direct-allgather-n2-c1-i16-LL128; do
  timeout 30 $B --ranks 2 --graph 10 --iters 10 --warmup 3 --colls allgather --plan $p --min 64K --max 4M --factor 2 --csv $L/c_$p.csv > $L/c_$p.txt 2>&1; done
for p in direct-alltoall-n2-c1-i4-LL128 direct-alltoall-n2-c1-i8-LL128 direct-alltoall-n2-c1-i16-LL128; do
  timeout 30 $B --ranks 2 --graph 10 --iters 10 --warmup 3 --colls alltoall --plan $p --min 64K --max 4M --factor 2 --csv $L/c_$p.csv > $L/c_$p.txt 2>&1; done
for p in oneshot-reducescatter-n2-i4-gather-LL128 oneshot-reducescatter-n2-i8-gather-LL128 oneshot-reducescatter-n2-i16-gather-LL128; do
  timeout 30 $B --ranks 2 --graph 10 --iters 10 --warmup 3 --colls reducescatter --plan $p --min 64K --max 4M --factor 2 --csv $L/c_$p.csv > $L/c_$p.txt 2>&1; done
for p in oneshot-allreduce-n2-i4-gather-LL128 oneshot-allreduce-n2-i8-gather-LL128 oneshot-allreduce-n2-i16-gather-LL128; do
  timeout 30 $B --ranks 2 --graph 10 --iters 10 --warmup 3 --colls allreduce --plan $p --min 64K --max 4M --factor 2 --csv $L/c_$p.csv > $L/c_$p.txt 2>&1; done
for p in oneshot-allreduce-n2-i4-inplace-LL128 oneshot-allreduce-n2-i8-inplace-LL128; do
  timeout 30 $B --ranks 2 --graph 10 --iters 10 --warmup 3 --inplace --colls allreduce --plan $p --min 64K --max 4M --factor 2 --csv $L/c_$p.csv > $L/c_$p.txt 2>&1; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
for f in $(tar tzf logs.tgz | grep csv); do tar xzf logs.tgz -O $f | awk -F, 'NR>1{printf "%s %s %s nccl %s baked %s interp %s errs %s%s\n",$1,$7,$9,$10,$14,$18,$17,$21}'; done

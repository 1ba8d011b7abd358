#!/bin/bash
# session 5, device call 4 (4 GPUs, pack of run 1): 4-rank LL128 allreduce/reducescatter candidates
# (direct two-shot and one-shot gather, 4 and 8 instances), loaded at run time and forced with
# KILN_LL128=1 (LL128 interpreter), CUDA graphs of 10 calls, 64 KiB-4 MiB, NCCL in the same run.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
S="--graph 10 --iters 10 --warmup 3 --min 64K --max 4M --factor 2 --plans $PWD/.carry/plans128"
for p in direct-allreduce-n4-c1-i4-LL128 direct-allreduce-n4-c1-i8-LL128 oneshot-allreduce-n4-i4-gather-LL128 oneshot-allreduce-n4-i8-gather-LL128; do
  KILN_LL128=1 timeout 20 $B --ranks 4 --colls allreduce --plan $p $S --csv $L/ll128_$p.csv > $L/ll128_$p.txt 2>&1 || echo "rc $? $p"
done
for p in oneshot-reducescatter-n4-i4-gather-LL128 oneshot-reducescatter-n4-i8-gather-LL128; do
  KILN_LL128=1 timeout 20 $B --ranks 4 --colls reducescatter --plan $p $S --csv $L/ll128_$p.csv > $L/ll128_$p.txt 2>&1 || echo "rc $? $p"
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for f in $(tar tzf logs.tgz | grep csv); do tar xzf logs.tgz -O $f | awk -F, -v f=$f 'NR>1{printf "%s %s nccl %s i %s e%s\n", substr(f,12,40), $7, $10, $18, $21}'; done

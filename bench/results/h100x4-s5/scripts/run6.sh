#!/bin/bash
# session 5, device call 6 (4 GPUs, final build of run 5): 2-rank direct LL allgather/alltoall
# with 1 and 2 instances against the baked i4 (interpreter against interpreter, 8 B-64 KiB), and
# 4-rank direct Simple in-place allreduce i8/i16 and out-of-place i32 (256 KiB-4 MiB); plans
# loaded at run time (.carry/plans6) and forced; CUDA graphs of 10 calls, NCCL in the same run.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
G="--graph 10 --iters 10 --warmup 3 --factor 4 --plans $PWD/.carry/plans6"
while read n c ip mn mx p; do
  [ -z "$n" ] && continue
  x=""; [ "$ip" = 1 ] && x="--inplace"
  timeout 20 $B --ranks $n --colls $c $x --plan $p --min $mn --max $mx $G --csv $L/f_${n}_${ip}_$p.csv > $L/f_${n}_${ip}_$p.txt 2>&1 || echo "rc $? $p"
done <<'LIST'
2 allgather 0 8 64K direct-allgather-n2-c1-i1-LL
2 allgather 0 8 64K direct-allgather-n2-c1-i2-LL
2 allgather 0 8 64K direct-allgather-n2-c1-i4-LL
2 alltoall 0 8 64K direct-alltoall-n2-c1-i1-LL
2 alltoall 0 8 64K direct-alltoall-n2-c1-i2-LL
2 alltoall 0 8 64K direct-alltoall-n2-c1-i4-LL
4 allreduce 1 256K 4M direct-allreduce-n4-c1-i8-inplace
4 allreduce 1 256K 4M direct-allreduce-n4-c1-i16-inplace
4 allreduce 0 256K 4M direct-allreduce-n4-c1-i32
4 allreduce 0 256K 4M direct-allreduce-n4-c1-i16
LIST
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for f in $(tar tzf logs.tgz | grep csv); do tar xzf logs.tgz -O $f | awk -F, -v f=$f 'NR>1{printf "%s %s nccl %s b %s i %s e%s%s\n", substr(f,12,44), $7, $10, $14, $18, $17, $21}'; done

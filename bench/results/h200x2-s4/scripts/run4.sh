#!/bin/bash
# session 4, device call 4: hop latency per protocol (prim_bench), and direct allgather LL vs LL128
# with 4, 8, 16 instances on the interpreter (loaded plans), CUDA graphs
export NCCL_NVLS_ENABLE=0
NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
B=.carry/bin/coll_bench
export LD_LIBRARY_PATH=$NL:$PWD/.carry/lib
timeout 90 .carry/bin/prim_bench --iters 10 --max 32M --csv $L/prim.csv > $L/prim.txt 2>&1; echo "rc $?" >> $L/prim.txt
for p in direct-allgather-n2-c1-i4-LL direct-allgather-n2-c1-i8-LL direct-allgather-n2-c1-i16-LL direct-allgather-n2-c1-i4-LL128 direct-allgather-n2-c1-i8-LL128 direct-allgather-n2-c1-i16-LL128; do
  timeout 30 $B --ranks 2 --graph 10 --iters 10 --warmup 3 --colls allgather --plans .carry/xp --plan $p --min 8K --max 1M --factor 4 --csv $L/x_$p.csv > $L/x_$p.txt 2>&1; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/prim.txt | grep -E "^hop|^flag|rc |prim_bench"
for f in $(tar tzf logs.tgz | grep 'x_.*csv'); do tar xzf logs.tgz -O $f | awk -F, 'NR>1{printf "%s %s %s nccl %s baked %s interp %s errs %s%s\n",$1,$7,$9,$10,$14,$18,$17,$21}'; done

#!/bin/bash
# session 4, device call 9: hop latency with every round's data checked (LL128 stale-read hunt)
export NCCL_NVLS_ENABLE=0
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
export LD_LIBRARY_PATH=$PWD/.carry/lib
for k in 1 2 3; do timeout 60 .carry/pb/prim_bench --iters 5 --max 32M > $L/prim_$k.txt 2>&1; echo "rc $?" >> $L/prim_$k.txt; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
for k in 1 2 3; do tar xzf logs.tgz -O logs/prim_$k.txt | grep -E "prim_bench|rc "; done
tar xzf logs.tgz -O logs/prim_1.txt | grep -E "^hop" | awk '$3==1'

#!/bin/bash
# session 5, device call 11: 2-rank one-shot "chain" plans (one block per instance sends, then
# receives and reduces straight into the result: no scratch, no second block) against the gather
# and scratch forms: candidate build (plans/baked + 9 chain plans, float), baked sweep, CUDA
# graphs, 8 B-1 MiB, allreduce and reducescatter out of place, allreduce in place.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry; tar xJf .carry/cand.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/cand/coll_bench
nvidia-smi -L > $L/gpus.txt
S="--ranks 2 --sweep --graph 10 --iters 10 --warmup 3 --min 8 --max 1M --factor 4"
timeout 40 $B $S --colls allreduce,reducescatter --csv $L/sw.csv > $L/sw.txt 2>&1; echo "rc $?" >> $L/sw.txt
timeout 30 $B $S --colls allreduce --inplace --csv $L/sw_ip.csv > $L/sw_ip.txt 2>&1; echo "rc $?" >> $L/sw_ip.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
for x in sw sw_ip; do tar xzf logs.tgz -O logs/$x.txt | grep "rc "; tar xzf logs.tgz -O logs/$x.csv | awk -F, 'NR>1 && $14!="" {printf "%s %s %s n%s b%s e%s\n",substr($1,1,5),$7,$9,$10,$14,$17}' | sort -k1,1 -k2n -k5; done

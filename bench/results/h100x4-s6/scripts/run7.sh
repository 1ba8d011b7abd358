#!/bin/bash
# session 6, device call 7 (4 GPUs): where the eager host time goes. Eager batched allreduce,
# 4 and 2 GPUs, --host-time: the default group issue (the calling thread issues the first GPU,
# launcher threads the others), every GPU from launchers (KILN_GROUP_CALLER=0), launchers that
# spin longer (KILN_GROUP_SPIN_US=5000); host_bench's per-call costs on this machine.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
B=.carry/bin/coll_bench
nvidia-smi -L > $L/gpus.txt
timeout 60 .carry/bin/host_bench --gpus 4 > $L/host_bench.txt 2>&1
S="--iters 50 --warmup 10 --batch --host-time --colls allreduce --min 8 --max 64K --factor 8"
for n in 4 2; do
  timeout 30 $B --ranks $n $S --csv $L/def_n$n.csv > $L/def_n$n.txt 2>&1
  KILN_GROUP_CALLER=0 timeout 30 $B --ranks $n $S --csv $L/nocaller_n$n.csv > $L/nocaller_n$n.txt 2>&1
  KILN_GROUP_SPIN_US=5000 timeout 30 $B --ranks $n $S --csv $L/spin_n$n.csv > $L/spin_n$n.txt 2>&1
  KILN_GROUP_CALLER=0 KILN_GROUP_SPIN_US=5000 timeout 30 $B --ranks $n $S --csv $L/both_n$n.csv > $L/both_n$n.txt 2>&1
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
tar xzf logs.tgz -O logs/gpus.txt | head -1
tar xzf logs.tgz -O logs/host_bench.txt
for x in def_n4 nocaller_n4 spin_n4 both_n4 def_n2 nocaller_n2 spin_n2 both_n2; do echo "== $x"; tar xzf logs.tgz -O logs/$x.txt | grep "host:" | grep -v baked | awk '{printf "%s %s %s | ", $4, $6, $7 " " $8 " " $13 $14}'; echo; done

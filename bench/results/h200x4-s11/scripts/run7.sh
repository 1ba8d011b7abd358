#!/bin/bash
# session 11, device call 7: what the group's access checks cost eager calls: eager batched,
# 4 GPUs, 256 KiB-64 MiB, every collective, with the clique (default) and without
# (KILN_SYM_PEERS=0); host issue time per call (--host-time).
. bench/results/h200x4-s11/scripts/pre.sh
timeout 60 $B --ranks 4 --iters 30 --warmup 5 --batch --host-time --min 256K --max 64M --factor 4 --csv $L/e4_peers.csv > $L/e4_peers.txt 2>&1
KILN_SYM_PEERS=0 timeout 60 $B --ranks 4 --iters 30 --warmup 5 --batch --host-time --min 256K --max 64M --factor 4 --csv $L/e4_nopeers.csv > $L/e4_nopeers.txt 2>&1
cd $OUT && tar czf logs.tgz logs
head -1 logs/gpus.txt
cmp logs/e4_nopeers.csv logs/e4_peers.csv
for f in logs/e4_nopeers.txt logs/e4_peers.txt; do echo "== $f"; grep "kiln-sym: " $f | awk '{print $3, $4, $7}' | paste - - - -; done
rm -rf logs

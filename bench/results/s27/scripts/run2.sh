# Run 2 (2 GPUs, right after run 1): the same build against the committed kernels (sym_probe_A and
# coll_bench_A: a clean clone of 4cda2fd, the kernels of HEAD before this change). The kernel
# alone (sym_probe, float, PROBE_CHECK=2: each call then checked on fresh input), two
# alternations; then the library in graphs of 10, one build after the other: sizes 24 B x 3^k
# (every per-rank piece of reducescatter and alltoall, and every two-shot share, an odd number
# of floats: at 4- but not 8-byte offsets), twice; int8 at 6 B x 3^k (pieces at odd byte
# offsets); the aligned table 16 B-1 MiB x4.
RUN=r2 . scripts/device-pre.sh
export PROBE_CHECK=2
for i in 1 2; do
  for c in "rs 8" "rs 24" "rs 32" "rs 2056" "rs12 24" "rs12 48" "a2a 8" "a2a 24" "a2a 32" "ag 24" "ag 32" "ar 12" "ar 16" "ar 4100" "ar 4096" "ar12 16388" "ar12 16384" "ar128 262148" "ar128 262144"; do
    set -- $c
    probe2 $B/sym_probe_A $B/sym_probe "$1-$2-$i" $1 $2 2 >> $R/p.txt
  done
  pack
done
G="--ranks 2 --graph 10 --iters 10 --warmup 3"
abruns 2 odd $G --factor 3 --min 24 --max 160K
abruns 1 i8 $G --dtype int8 --factor 3 --min 6 --max 50K
abruns 1 al $G --factor 4 --min 16 --max 1M
cat $OUT/gpus.txt
probetab $R/p.txt
ab Aodd Bodd
ab Ai8 Bi8
ab Aal Bal
echo "== B odd"; rows $R/Bodd_1.csv

# Run 5 (2 GPUs): run 4's aligned table had alltoall 16 and 64 KiB 1.022 and 1.056x the committed
# build's time (run 2's build 1.027 and 1.080): three more alternations of the aligned sizes
# 4-64 KiB (graphs of 10), alternating the order (A first, then B first), and the kernel alone
# at those alltoall sizes (LL lines at 16 KiB: an 8 KiB segment; LL12 at 64 KiB).
RUN=r5 . scripts/device-pre.sh
export PROBE_CHECK=2
for i in 1 2 3; do
  for c in "a2a 16384" "a2a 65536" "a2a12 65536" "ag 65536" "rs 65536"; do
    set -- $c
    probe2 $B/sym_probe_A $B/sym_probe "$1-$2-$i" $1 $2 2 >> $R/p.txt
  done
done
unset PROBE_CHECK
G="--ranks 2 --graph 10 --iters 20 --warmup 3 --factor 4 --min 4K --max 64K"
for i in 1 2 3; do
  timeout 60 $B/coll_bench_A $G --csv $R/Aal_$i.csv > $R/Aal_$i.txt 2>&1
  timeout 60 $B/coll_bench $G --csv $R/Bal_$i.csv > $R/Bal_$i.txt 2>&1
  timeout 60 $B/coll_bench $G --csv $R/Bal_$((i + 3)).csv > $R/Bal_$((i + 3)).txt 2>&1
  timeout 60 $B/coll_bench_A $G --csv $R/Aal_$((i + 3)).csv > $R/Aal_$((i + 3)).txt 2>&1
  pack
done
cat $OUT/gpus.txt
probetab $R/p.txt
ab Aal Bal

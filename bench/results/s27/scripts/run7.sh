# Run 7 (2 GPUs): which half of bodyLL's change costs LL12 alltoall its 6-11% (run 6: not the
# per-line pick of loads for 4-byte elements): the kernel alone (sym_probe, float,
# PROBE_CHECK=2), three alternations, the committed kernels (sym_probe_A) against sp_v5 (e902d5d
# with the receive's stores of every peer's piece as before: scripts/v5-sym.patch) and sp_v6
# (e902d5d with the sends as before: scripts/v6-sym.patch).
RUN=r7 . scripts/device-pre.sh
export PROBE_CHECK=2
for i in 1 2 3; do
  for c in "a2a12 65536" "a2a12 32768" "a2a12 24" "a2a 24" "rs 24" "ag12 65536"; do
    set -- $c
    probe2 $B/sym_probe_A .carry/s27/sp_v5 "$1-$2-$i" $1 $2 2 >> $R/pv5.txt
    probe2 $B/sym_probe_A .carry/s27/sp_v6 "$1-$2-$i" $1 $2 2 >> $R/pv6.txt
  done
  pack
done
cat $OUT/gpus.txt
echo "== A against v5 (receive as before)"; probetab $R/pv5.txt
echo "== A against v6 (sends as before)"; probetab $R/pv6.txt

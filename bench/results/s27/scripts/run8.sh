# Run 8 (2 GPUs): run 7 put LL12 alltoall's cost in bodyLL's new sends: sp_v7 is e902d5d with
# LL12 alltoall's sends as before (scripts/v7-sym.patch) and everything else as shipped; the
# kernel alone (sym_probe, float, PROBE_CHECK=2) against the committed kernels (sym_probe_A),
# three alternations, LL12 alltoall and the cases the change gained on.
RUN=r8 . scripts/device-pre.sh
export PROBE_CHECK=2
for i in 1 2 3; do
  for c in "a2a12 65536" "a2a12 32768" "a2a12 24" "a2a 24" "a2a 8" "rs 24" "rs 8" "ag 24" "ar 12"; do
    set -- $c
    probe2 $B/sym_probe_A .carry/s27/sp_v7 "$1-$2-$i" $1 $2 2 >> $R/pv7.txt
  done
  pack
done
cat $OUT/gpus.txt
echo "== A against v7"; probetab $R/pv7.txt

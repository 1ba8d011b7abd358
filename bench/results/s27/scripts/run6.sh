# Run 6 (2 GPUs): the kernel alone (sym_probe, float, PROBE_CHECK=2), three alternations: the
# committed kernels before this session (sym_probe_A) against what ships (sym_probe, e902d5d) and
# against sp_v3, which is e902d5d with LineData::loadAs/storeAs taking the per-load form (load,
# store) for LL12 lines of 4-byte elements (scripts/v3-sym.patch; built as run 3's sp_v2 with
# the patched copy first on the include path): is run 5's LL12 alltoall cost that?
RUN=r6 . scripts/device-pre.sh
export PROBE_CHECK=2
for i in 1 2 3; do
  for c in "a2a12 65536" "a2a12 32768" "a2a12 24" "rs12 65536" "rs12 24" "ag12 65536" "ar12 16388" "ar12 65536"; do
    set -- $c
    probe2 $B/sym_probe_A $B/sym_probe "$1-$2-$i" $1 $2 2 >> $R/pship.txt
    probe2 $B/sym_probe_A .carry/s27/sp_v3 "$1-$2-$i" $1 $2 2 >> $R/pv3.txt
  done
  pack
done
cat $OUT/gpus.txt
echo "== A against shipped"; probetab $R/pship.txt
echo "== A against v3"; probetab $R/pv3.txt

# Run 3 (2 GPUs): the kernel alone (sym_probe, float, PROBE_CHECK=2), the committed kernels
# (sym_probe_A) against sp_v2: run 2's build changed so that bodyLL picks whole-line or
# branch-free loads and stores once per line for every peer's piece (LineData::loadAs, storeAs),
# and loadPart, storePart, load12, store12 keep the element loop for 4- and 8-byte elements.
# sp_v2 built here from the working tree: nvcc -O2 -arch=sm_90 -std=c++17
# --expt-relaxed-constexpr -Ikernels -Iinclude -o .carry/s27/sp_v2 scripts/sym_probe.cu
RUN=r3 . scripts/device-pre.sh
export PROBE_CHECK=2
for i in 1 2; do
  for c in "rs 8" "rs 24" "rs 32" "rs 2056" "rs12 24" "rs12 48" "a2a 8" "a2a 24" "a2a 32" "ag 24" "ag 32" "ar 12" "ar 16" "ar 4100" "ar 4096" "ar12 16388" "ar12 16384" "ar128 262148" "ar128 262144"; do
    set -- $c
    probe2 $B/sym_probe_A .carry/s27/sp_v2 "$1-$2-$i" $1 $2 2 >> $R/p.txt
  done
  pack
done
cat $OUT/gpus.txt
probetab $R/p.txt

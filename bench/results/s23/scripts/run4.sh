# Run 4: the kernel alone (scripts/sym_probe.cu built standalone, .carry/s23/sp), LL lines against
# LL12 lines, one-shot, float, 4 GPUs, graphs of 20 PDL-chained kernels: where does LL12's fixed
# cost (run 2: 0.15-0.33 us more than LL at 16 B-16 KiB through the library) come from?
RUN=r4 . scripts/device-pre.sh
for i in 1 2; do
  for a in ar ag rs a2a; do
    for b in 16 1024 16384 65536 262144; do
      for f in "" 12; do
        echo "$a$f $b $(timeout 20 .carry/s23/sp $a$f $b 4 20 200 2>&1 | grep -o '[0-9.]* us per kernel.*')"
      done
    done
  done
done > $R/probe.txt 2>&1
pack
awk '{ k = $1 " " $2; v[k] = v[k] " " $3 } END { for (k in v) print k ":" v[k] }' $R/probe.txt | sort

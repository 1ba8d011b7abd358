# Run 5: run 4 (void, not kept) again: its probe launched the LL kernel for "ar12" etc. (sym_probe picked the kernel
# by the LL128 suffix only; fixed), so its LL12 rows timed LL's code on LL12's geometry. The kernel
# alone, LL against LL12, float, 4 GPUs, graphs of 20 PDL-chained kernels.
RUN=r5 . scripts/device-pre.sh
for i in 1 2; do
  for a in ar ag a2a rs; do
    for b in 16 1024 16384 65536; do
      for f in "" 12; do
        echo "$a$f $b $(timeout 20 .carry/s23/sp $a$f $b 4 20 200 2>&1 | grep -o '[0-9.]* us per kernel.*')"
      done
    done
  done
done > $R/probe.txt 2>&1
pack
awk '{ k = $1 " " $2; v[k] = v[k] " " $3 } END { for (k in v) print k ":" v[k] }' $R/probe.txt | sort

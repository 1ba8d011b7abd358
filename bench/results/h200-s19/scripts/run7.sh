# s19 run 7: where LL128's extra time at small sizes goes (kernel alone, no second load in all
# three): sp_base (LL and LL128 as built), sp_send (the LL128 forms and two-shot LL return once their lines are out, not bodyLL:
# the send side alone), sp_flag (LL128 receivers load only the flag lanes' 16 bytes while they
# poll: the data loads' share). Outputs are wrong in sp_send and sp_flag by design (timing only).
# The binaries: scripts/variants7.py (its docstring says how they were built).
set -u
R=$OUT/r7; mkdir -p $R
tar xf .carry/probes3.tar -C .carry
export NCCL_NVLS_ENABLE=0
P=.carry/p3
for n in 4 2; do
  for i in 1 2; do
    for a in ar ag; do
      for b in 1024 65536; do
        for v in base send flag; do
          for f in $a ${a}128; do
            [ $v = flag ] && [ $f = $a ] && continue
            echo "$v $f $b n$n $(timeout 30 $P/sp_$v $f $b $n 20 200 2>&1 | grep -o '[0-9.]* us per kernel')"
          done
        done
      done
    done
  done
done > $R/split.txt 2>&1
tar czf $OUT/r7.tgz -C $OUT r7
awk '{ k = $4 " " $3 " " $2 " " $1; v[k] = v[k] " " $5 } END { for (k in v) print k ":" v[k] }' $R/split.txt | sort

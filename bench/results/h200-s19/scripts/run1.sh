# Session 19, call 1: the LL128 form of sym.cuh (FORM_LL128) timed alone against the LL form
# (sym_probe; sym_probe_norl: built with -DKILN_SYM_LL128_RELOAD=0, the data taken from the poll
# that saw the flags), then every LL128 algorithm checked on fresh input call after call.
set -u
R=$OUT/r1
mkdir -p "$R"
tar xf .carry/probes.tar -C .carry
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > "$R/gpus.txt"
P=.carry/p
ng=$(nvidia-smi -L | wc -l)
pk() { tar czf "$OUT/r1.tgz" -C "$OUT" r1; }
for n in 4 2; do
  [ "$ng" -ge "$n" ] || continue
  sizes="1024 16384 65536 262144"
  [ "$n" = 2 ] && sizes="$sizes 1048576"
  for a in ar rs ag a2a; do
    for b in $sizes; do
      for v in "sym_probe $a" "sym_probe ${a}128" "sym_probe_norl ${a}128"; do
        set -- $v
        timeout 60 $P/$1 $2 $b $n 20 200
      done
    done
  done >> "$R/time_$n.txt" 2>&1
  for b in 65536 262144; do
    for bb in 4096 8192; do
      echo "PROBE_BLOCK_BYTES=$bb" >> "$R/time_$n.txt"
      PROBE_BLOCK_BYTES=$bb timeout 60 $P/sym_probe ar128 $b $n 20 200 >> "$R/time_$n.txt" 2>&1
    done
  done
  pk
done
# Correctness: fresh input every call, every output checked.
for n in 4 2; do
  [ "$ng" -ge "$n" ] || continue
  for p in sym_probe sym_probe_norl; do
    for a in ar128 rs128 ag128 a2a128; do
      for b in 16 $((4 * n * 3)) 4104 65540 262144; do
        c=1000; [ "$b" -gt 10000 ] && c=300
        echo "$p $a $b n=$n: $(PROBE_CHECK=$c timeout 120 $P/$p $a $b $n 5 5 2>&1 | tail -2 | tr '\n' ' ')"
      done
    done
  done >> "$R/check.txt" 2>&1
  pk
done
pk
echo "== time (us per kernel): LL | LL128 | LL128 without the second load"
for n in 4 2; do
  [ -f "$R/time_$n.txt" ] || continue
  echo "-- $n GPUs"
  awk '/per kernel/ { split($1, x, "1"); k = $1 " " $2; t[NR] = $0; printf "%s %s %s%s", $1, $2, $(NF-2), (++c % 3 == 0 ? "\n" : " | ") }
       /PROBE_BLOCK/ { printf "%s ", $0 }' "$R/time_$n.txt"
done
echo "== checks"
grep -c "us per kernel" "$R/check.txt"
grep -v "us per kernel.*$" "$R/check.txt" | head -20
grep -i "wrong\|error" "$R/check.txt" | head -20

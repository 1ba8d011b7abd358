# s19 run 2: the library with the LL128 form (one-shot segments past 128 KiB, to 512 KiB on 4 ranks
# and 1 MiB on 2, as LL128 lines). The suites with every one-shot call as LL128 (sym_ll128_*) and
# the sym suites as they are; graphs 64 KiB-4 MiB, A: KILN_SYM_LL128_BYTES=0 (the forms before),
# B: the defaults, twice alternating, 4 and 2 GPUs; 4 GPUs allreduce forced one-shot (B).
RUN=r2 . scripts/device-pre.sh
suite tests 240 'sym_ll128_4gpus|sym_ll128_2gpus|sym_kernels_4gpus|sym_kernels_2gpus|sym_choice|sym_rounds|sym_graph_replays|sym_pdl|sym_streams'
grep -h -E "^\[PASS\]" $R/tests.txt | sed 's/.*:://' | paste -sd' '
G="--graph 10 --iters 10 --warmup 3 --factor 2 --min 64K --max 4M"
for n in 4 2; do
  dev=0,1,2,3; [ $n = 2 ] && dev=0,1
  for i in 1 2; do
    CUDA_VISIBLE_DEVICES=$dev KILN_SYM_LL128_BYTES=0 timeout 60 $B/coll_bench --ranks $n $G --csv $R/A${n}_$i.csv > $R/A${n}_$i.txt 2>&1
    CUDA_VISIBLE_DEVICES=$dev timeout 60 $B/coll_bench --ranks $n $G --csv $R/B${n}_$i.csv > $R/B${n}_$i.txt 2>&1
    pack
  done
done
timeout 60 $B/coll_bench --ranks 4 $G --colls allreduce --sym oneshot --max 1M --csv $R/one4.csv > $R/one4.txt 2>&1
KILN_SYM_LL128_BYTES=0 timeout 60 $B/coll_bench --ranks 4 $G --colls allreduce --sym oneshot --max 1M --csv $R/one4A.csv > $R/one4A.txt 2>&1
pack
# Blocks of 1 KiB of segment (KILN_SYM_BLOCK_BYTES; 2 KiB by default) for the LL sizes, 4 GPUs.
S="--graph 10 --iters 10 --warmup 3 --factor 4 --min 1K --max 256K"
for i in 1 2; do
  timeout 60 $B/coll_bench --ranks 4 $S --csv $R/C4_$i.csv > $R/C4_$i.txt 2>&1
  KILN_SYM_BLOCK_BYTES=1024 timeout 60 $B/coll_bench --ranks 4 $S --csv $R/D4_$i.csv > $R/D4_$i.txt 2>&1
done
for b in 16384 65536; do for bb in 1024 2048; do PROBE_BLOCK_BYTES=$bb $B/sym_probe ar $b 4; done; done > $R/probe.txt 2>&1
# Code size: the probe with the LL bodies for one rank count only (sym_probe_rN_rlX: R = N; X: the
# LL128 second load), against the kernel with all three (LL .text 57 KB, LL128 104 KB; R only: 17
# and 30 KB).
tar xf .carry/probes.tar -C .carry
P=.carry/p
for n in 4 2; do
  for i in 1 2; do
    for a in ar ag; do
      for b in 1024 65536; do
        for v in "sym_probe $a" "sym_probe_r${n}_rl1 $a" "sym_probe ${a}128" "sym_probe_norl ${a}128" "sym_probe_r${n}_rl1 ${a}128" "sym_probe_r${n}_rl0 ${a}128"; do
          set -- $v
          echo "$1 $(timeout 30 $P/$1 $2 $b $n 20 200 2>&1 | tail -1)"
        done
      done
    done
    pack
  done
done > $R/size.txt 2>&1
pack
pack
for n in 4 2; do ab A$n B$n; done
ab C4 D4
cat $R/probe.txt
echo "== code size (us per kernel; i = 1, 2)"
awk '{for (k = 1; k <= NF; k++) if ($k == "us") t = $(k-1); printf "%s %s %s %s n%s\n", $1, $2, $3, t, substr($5, 3)}' $R/size.txt | sort -k5,5 -k2,2 -k3,3n -k1,1 | awk '{ key = $5 " " $2 " " $3 " " $1; v[key] = v[key] " " $4 } END { for (k in v) print k ":" v[k] }' | sort
echo "== B4_2"; rows $R/B4_2.csv
echo "== B2_2"; rows $R/B2_2.csv
echo "== one-shot 4 GPUs (sym column us: LL128 default / LL128 off)"
paste -d' ' <(awk -F, 'NR>1 {print $7, $22}' $R/one4.csv) <(awk -F, 'NR>1 {print $22}' $R/one4A.csv)
grep -h " e[1-9]" $R/*.txt | head -5

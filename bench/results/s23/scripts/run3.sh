# Run 3: LL12 lines only past 32 KiB of segment (the default after run 2). The geometry test and the
# default sweep; then LL12 off (KILN_SYM_LL12=0, A) against the default (B), same build, three
# alternations, graphs, 4 and 2 GPUs, 32 KiB-1 MiB (where the 32 KiB bottom and LL128's start fall);
# then the default's table, graphs, 4 GPUs, 16 B-1 GiB.
RUN=r3 . scripts/device-pre.sh
suite t 120 'sym_choice|sym_kernels_4gpus|sym_kernels_2gpus'
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
envab() {
  local n=$1 tag=$2 i
  shift 2
  for i in $(seq "$n"); do
    KILN_SYM_LL12=0 timeout 100 "$B/coll_bench" "$@" --csv "$R/A${tag}_$i.csv" > "$R/A${tag}_$i.txt" 2>&1
    timeout 100 "$B/coll_bench" "$@" --csv "$R/B${tag}_$i.csv" > "$R/B${tag}_$i.txt" 2>&1
    pack
  done
}
envab 3 4 --ranks 4 --graph 10 --iters 20 --warmup 5 --factor 2 --min 32K --max 1M
ab A4 B4
envab 3 2 --ranks 2 --graph 10 --iters 20 --warmup 5 --factor 2 --min 32K --max 1M
ab A2 B2
grep -h " e[1-9]" $R/*.txt | head -5
timeout 150 $B/coll_bench --ranks 4 --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 1G --csv $R/g4.csv > $R/g4.txt 2>&1
echo "g4 rc=$?"; pack
rows $R/g4.csv

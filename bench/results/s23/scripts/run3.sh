# Run 3: LL12 lines only past 32 KiB of segment (the default after run 2). The geometry test and the
# default sweep; then LL12 off (KILN_SYM_LL12=0, A) against the default (B), same build, three
# alternations, graphs, 4 and 2 GPUs, 32 KiB-1 MiB (where the 32 KiB bottom and LL128's start fall);
# then the default's table, graphs, 4 GPUs, 16 B-1 GiB.
RUN=r3 . scripts/device-pre.sh # (envab was defined here when it ran; device-pre.sh has it now)
suite t 120 'sym_choice|sym_kernels_4gpus|sym_kernels_2gpus'
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
envab 3 4 KILN_SYM_LL12=0 --ranks 4 --graph 10 --iters 20 --warmup 5 --factor 2 --min 32K --max 1M
ab A4 B4
envab 3 2 KILN_SYM_LL12=0 --ranks 2 --graph 10 --iters 20 --warmup 5 --factor 2 --min 32K --max 1M
ab A2 B2
grep -h " e[1-9]" $R/*.txt | head -5
timeout 150 $B/coll_bench --ranks 4 --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 1G --csv $R/g4.csv > $R/g4.txt 2>&1
echo "g4 rc=$?"; pack
rows $R/g4.csv

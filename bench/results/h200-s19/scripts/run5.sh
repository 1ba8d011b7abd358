# s19 run 5: two-shot allreduce as LL128 lines (bodyLL128x2; shares past 128 KiB to 512 KiB by
# default). Suites with every segment and share as LL128 (sym_ll128_*) and the sym suites; graphs,
# allreduce, A: KILN_SYM_LL2_128_BYTES=0 (the forms before: flags, direct where a group allows),
# B: the default, C: shares to 2 MiB (4 GPUs) / 8 MiB (2 GPUs, two-shot forced), twice alternating.
RUN=r5 . scripts/device-pre.sh
suite tests4 200 'sym_ll128_4gpus|sym_kernels_4gpus|sym_choice|sym_graph_replays|sym_rounds|sym_pdl'
grep -h -E "^\[PASS\]" $R/tests4.txt | sed 's/.*:://' | paste -sd' '
suite tests2 120 'sym_ll128_2gpus|sym_kernels_2gpus|sym_direct' CUDA_VISIBLE_DEVICES=0,1
grep -h -E "^\[PASS\]" $R/tests2.txt | sed 's/.*:://' | paste -sd' '
G="--graph 10 --iters 10 --warmup 3 --factor 2 --colls allreduce"
for i in 1 2; do
  KILN_SYM_LL2_128_BYTES=0 timeout 60 $B/coll_bench --ranks 4 $G --min 256K --max 8M --csv $R/A4_$i.csv > $R/A4_$i.txt 2>&1
  timeout 60 $B/coll_bench --ranks 4 $G --min 256K --max 8M --csv $R/B4_$i.csv > $R/B4_$i.txt 2>&1
  KILN_SYM_LL2_128_MAX_BYTES=2M timeout 60 $B/coll_bench --ranks 4 $G --min 256K --max 8M --csv $R/C4_$i.csv > $R/C4_$i.txt 2>&1
  CUDA_VISIBLE_DEVICES=0,1 KILN_SYM_LL2_128_BYTES=0 timeout 60 $B/coll_bench --ranks 2 $G --sym twoshot --min 1M --max 16M --csv $R/A2_$i.csv > $R/A2_$i.txt 2>&1
  CUDA_VISIBLE_DEVICES=0,1 KILN_SYM_LL2_128_MAX_BYTES=8M timeout 60 $B/coll_bench --ranks 2 $G --sym twoshot --min 1M --max 16M --csv $R/C2_$i.csv > $R/C2_$i.txt 2>&1
  pack
done
ab A4 B4
ab A4 C4
echo "== 2 GPUs two-shot forced, sym column us: size A_1 A_2 C_1 C_2"
paste -d" " <(awk -F, "NR>1 {print \$7, \$22}" $R/A2_1.csv) <(awk -F, "NR>1 {print \$22}" $R/A2_2.csv) <(awk -F, 'NR>1 {print $22}' $R/C2_1.csv) <(awk -F, 'NR>1 {print $22}' $R/C2_2.csv)
echo "== B4_2"; rows $R/B4_2.csv
grep -h " e[1-9]" $R/*.txt | head -5

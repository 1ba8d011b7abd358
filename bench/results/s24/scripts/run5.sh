# Run 5 (2 GPUs; no 4-GPU kind lent at the time): the GPU suites with run 3's library (the 4- and
# 8-GPU ones skip on 2 GPUs); LL12 lines past 8 KiB of segment (B, what run 3 found better on 4
# GPUs) against the default 32 KiB (A), graphs, two alternations; then the 2-GPU table, 16 B-1 GiB,
# graphs, with LL12 past 8 KiB.
RUN=r5 . scripts/device-pre.sh
suite t 240 '*'
grep -h -E "^\[(PASS|FAIL)" $R/t.txt | sed 's/.*:://' | paste -sd' '
grep -c "SKIP" $R/t.txt
export KILN_SYM_LL12_BYTES=8192
envab 2 2c KILN_SYM_LL12_BYTES=32768 --ranks 2 --graph 10 --iters 20 --warmup 5 --factor 2 --min 8K --max 256K
ab A2c B2c
timeout 200 $B/coll_bench --ranks 2 --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 1G --csv $R/g2.csv > $R/g2.txt 2>&1
echo "g2 rc=$?"; pack
rows $R/g2.csv
grep -h " e[1-9]\|WRONG\|rror" $R/*.txt | grep -v "rows with errors: 0" | head -5

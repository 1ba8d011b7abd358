# s18 run 1: threads per LL block and segment bytes per block, 2 GPUs, graphs, 16 B-1 MiB
# (the committed library, c8577fc). T = --threads (the LL blocks take min(lines, T) threads, so
# fewer threads make each take 2-8 lines), BB = KILN_SYM_BLOCK_BYTES. Twice, alternating.
RUN=r1 . scripts/device-pre.sh
G="--graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 1M"
for i in 1 2; do
  for cfg in 512:2048 256:2048 128:2048 64:2048 128:4096 256:4096 64:1024 128:1024; do
    T=${cfg%:*}; BB=${cfg#*:}
    CUDA_VISIBLE_DEVICES=0,1 KILN_SYM_BLOCK_BYTES=$BB timeout 40 $B/coll_bench --ranks 2 $G --threads $T \
      --csv $R/g2_${T}_${BB}_$i.csv > $R/g2_${T}_${BB}_$i.txt 2>&1
  done
  pack
done
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for cfg in 256_2048 128_2048 64_2048 128_4096 256_4096 64_1024 128_1024; do
  echo "== 512_2048 against $cfg (size A B NCCL B/A)"
  $PY ab.py $R/g2_512_2048_*.csv -- $R/g2_${cfg}_*.csv | awk 'NR>1 {printf "%s %s%s %s | ", substr($1,1,4), $2, $3, $NF} END {print ""}'
done
echo "== default, run 1"; rows $R/g2_512_2048_1.csv
grep -h " e[1-9]" $R/*.txt | head -5

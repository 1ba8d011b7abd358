# Run 4 (1x H200): the final build's coll_bench --shared tables (2, 4 and 8 ranks sharing the GPU,
# every collective, float and bfloat16, 8 B-64 MiB, graphs of 20 calls), and the flag forms' 1- and
# 2-byte types by selects against run 2's base (coll_bench_base: a branch per element) for ops
# other than sum (half max and prod), plus float max (4-byte types: unchanged code, a control).
RUN=r4 . scripts/device-pre.sh
t0=$(date +%s)
for n in 2 4 8; do
  for dt in float bfloat16; do
    timeout 150 $B/coll_bench --shared 1 --ranks $n --dtype $dt --min 8 --max 64M --graph 20 --iters 10 \
      --csv $R/t_${dt}_n$n.csv --svg $R/t_${dt}_n$n.svg > $R/t_${dt}_n$n.txt 2>&1
    echo "$dt n=$n rc=$? $(grep -c '^ ' $R/t_${dt}_n$n.txt) rows, $(grep 'rows with errors' $R/t_${dt}_n$n.txt), $(grep -c TIMEOUT $R/t_${dt}_n$n.txt) timeouts ($(( $(date +%s) - t0 )) s)"
    pack
  done
done
F="--shared 1 --graph 20 --iters 10 --colls allreduce,reducescatter --min 1M --max 256M --ranks 2"
pair 2 hmax $B/coll_bench_base $B/coll_bench $F --dtype half --op max
pair 2 hprod $B/coll_bench_base $B/coll_bench $F --dtype half --op prod
pair 2 fmax $B/coll_bench_base $B/coll_bench $F --dtype float --op max
echo "pairs done ($(( $(date +%s) - t0 )) s)"
for t in hmax hprod fmax; do ab A$t B$t kiln-sym; done
grep -h "rows with errors" $R/*.txt | sort | uniq -c
cat $OUT/gpus.txt

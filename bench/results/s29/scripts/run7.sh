# Run 7 (1x H200): coll_bench --shared's reference for the forms runs 1-6 did not use: in place
# (every collective, float sum, 2, 4 and 8 ranks), and half max, int8 min, double sum out of place on
# 8 ranks; 8 B-16 MiB, graphs of 20 calls. Wanted: 0 differing elements, 0 timeouts.
RUN=r7 . scripts/device-pre.sh
t0=$(date +%s)
run() {
  local tag=$1
  shift
  timeout 150 $B/coll_bench --shared 1 --min 8 --max 16M --graph 20 --iters 5 "$@" --csv $R/$tag.csv > $R/$tag.txt 2>&1
  echo "$tag rc=$? $(grep -c '^ ' $R/$tag.txt) rows, $(grep 'rows with errors' $R/$tag.txt), $(grep -c TIMEOUT $R/$tag.txt) timeouts ($(( $(date +%s) - t0 )) s)"
  pack
}
for n in 2 4 8; do run inplace_n$n --ranks $n --inplace; done
run half_max_n8 --ranks 8 --dtype half --op max
run int8_min_n8 --ranks 8 --dtype int8 --op min
run double_n8 --ranks 8 --dtype double
cat $OUT/gpus.txt

# Run 8 (1x H200): after the review's mends (the symmetric graph tests through one helper with a
# call count; coll_bench's type dispatch written once; opSums for the kernels' sum-or-avg test):
# test_gpu_runtime whole as ctest runs it, KILN_TEST_REQUIRE_GPUS=1, and coll_bench --shared's
# tables (float and half max, 2 and 8 ranks, in and out of place).
RUN=r8 . scripts/device-pre.sh
start=$(date +%s)
timeout 500 $B/test_gpu_runtime --jobs 1 --verbose > $R/all.txt 2>&1
echo "test_gpu_runtime rc=$? in $(( $(date +%s) - start )) s"; pack
grep -E "^\[(FAIL|PASS)|graphs of" $R/all.txt
grep -E "^\[====\] Synthesis" $R/all.txt
for a in "--ranks 2" "--ranks 8" "--ranks 2 --inplace" "--ranks 8 --dtype half --op max"; do
  tag=$(echo "$a" | tr -d ' -')
  timeout 100 $B/coll_bench --shared 1 --min 8 --max 16M --graph 20 --iters 5 $a --csv $R/$tag.csv > $R/$tag.txt 2>&1
  echo "$tag rc=$? $(grep -c '^ ' $R/$tag.txt) rows, $(grep 'rows with errors' $R/$tag.txt), $(grep -c TIMEOUT $R/$tag.txt) timeouts"
done
pack
cat $OUT/gpus.txt

# s20 run 5: sym_lines_apart's second and third cases on the old library (run 2's copy stopped at
# its first failing case): test_gpu_runtime_oldK is run 2's old build with the cases taken from
# case K (0-based) on (OLD_FIRST_CASE=K), so its first assertion is that case's.
RUN=r5 . scripts/device-pre.sh
for k in 1 2; do
  timeout 60 $B/test_gpu_runtime_old$k --verbose -j1 --filter 'gpu_runtime/@(sym_lines_apart)' > $R/old$k.txt 2>&1
  echo "old$k rc=$?"; grep -E "^\[FAIL|^\[PASS|Assertion|want" $R/old$k.txt | head -4
done
pack

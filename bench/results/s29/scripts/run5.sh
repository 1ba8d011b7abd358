# Run 5 (1x H200): the new test of reducescatter into an output off the lines' alignment (float 4
# bytes past 8, half 2 past 4; 8 ranks sharing the GPU; every op), and run 3's
# sym_graphs_8ranks_shared again on this build.
RUN=r5 . scripts/device-pre.sh
suite rs_off 280 'sym_rs_output_off_alignment_8ranks_shared|sym_graphs_8ranks_shared'
grep -E "^\[(PASS|FAIL)|^\[====\]" $R/rs_off.txt
cat $OUT/gpus.txt

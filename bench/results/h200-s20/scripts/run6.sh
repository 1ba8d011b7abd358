# s20 run 6: sym_lines_apart with a fourth case (the flag form, then two-shot allreduce as LL
# lines: the two-shot forms share the LL area at other region sizes), on the final library.
RUN=r6 . scripts/device-pre.sh
suite lines 120 'sym_lines_apart|plan_ll_stale_slots|sym_kernels_2gpus'
grep -h -E "^\[PASS\]" $R/lines.txt | sed 's/.*:://' | paste -sd' '

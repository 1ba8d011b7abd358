# Run 8 (the same 4x H200 machine, warm, right after run 7): suites not run with run 3's library
# (large_buffers had not run in session 23 either). Given as the call's command; its 220 s limit
# cut sym_ll128_8ranks_shared (still running, no failure printed) and the suites after it.
RUN=r8 . scripts/device-pre.sh
suite t 220 'large_buffers|sym_ll12_8ranks_shared|sym_ll128_8ranks_shared|two_communicators|several_streams|sym_direct_choice|window_forget'
grep -h -E "^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://' | grep -v disabled | paste -sd' '

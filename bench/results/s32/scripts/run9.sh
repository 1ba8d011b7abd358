# Run 9 (2x H200): the drop-in suite with group_on_two_streams_joins_them checking the order
# itself (run 8: NCCL's group end waited for the joined stream's earlier work, so the broadcast's
# stream, queried 100 ms after it, had ended: the test's timing, not the join, was wrong).
RUN=r9 . scripts/device-pre.sh
t0=$(date +%s)
RN=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
LD_LIBRARY_PATH="$(dirname $RN):$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" KILN_SHIM=$PWD/.carry/shim/libnccl.so.2 \
  KILN_TEST_REAL_NCCL=$RN timeout 200 .carry/shim/test_gpu_shim --verbose -j1 > $R/shim.txt 2>&1; echo "shim rc=$? ($(( $(date +%s) - t0 )) s)"; pack
grep -h -E "^\[(PASS|FAIL)|Synthesis|GPU 0 after|Assert" $R/shim.txt | sed 's/.*:://' | paste -sd' '
grep -h -A3 "Assertion" $R/shim.txt | head -20

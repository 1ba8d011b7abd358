# Run 6 (2x H200): random_streams after the second read's mends (call_elems; a graph stream's
# first replay on the data drawn before its captures).
RUN=r6 . scripts/device-pre.sh
suite t 150 'random_streams' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "random calls checked|wrote|^\[(PASS|FAIL)|Assert" $R/t.txt | sed 's/.*:://' | head -20

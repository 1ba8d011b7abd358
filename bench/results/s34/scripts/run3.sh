# Run 3 (2x H200): sym_random_streams again with its count of the calls that went direct into the
# peers' buffers (the grouped ways), on a third seed.
RUN=r3 . scripts/device-pre.sh
suite t 200 'sym_random_streams' KILN_TEST_REQUIRE_GPUS=1 KILN_TEST_SEED=777
grep -h -E "random calls checked|^\[(PASS|FAIL|SKIP)" $R/t.txt | sed 's/.*:://'

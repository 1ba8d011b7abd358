# Run 5 (2x H200): the random streams after the review's mends: counts scaled down past 2 ranks,
# the coin for a plan drawn once a call, failures naming the pass and stream, and the canary check
# (every byte of a rank's allocation outside the calls' buffers still holds the fill).
RUN=r5 . scripts/device-pre.sh
t0=$(date +%s)
suite t 330 'random_streams|random_streams_4ranks_shared' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "random calls checked|^\[(PASS|FAIL|SKIP)|Assert|want|wrote" $R/t.txt | sed 's/.*:://' | head -40
echo "($(( $(date +%s) - t0 )) s)"
# Run 5b: the same suites on run 5's seed with the canary message naming the buffer and call
# before the byte (RUN=r5b, KILN_TEST_SEED=1795987122): 'suite t 120 ... KILN_TEST_SEED=1795987122'.
# Run 5c: the same after the mend (the test's own poisoning of an in-place reducescatter's unused
# output counted as the call's): 'RUN=r5c', 'suite t 330 ... KILN_TEST_SEED=1795987122'.

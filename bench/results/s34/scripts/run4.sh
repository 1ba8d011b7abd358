# Run 4 (2x H200): the random streams with the classic plans mixed in (a third pass: nine plans,
# every collective, Simple/LL/LL128, in place and not, half of each stream's calls), renamed
# random_streams and random_streams_4ranks_shared, at 3 streams per way, then 8 on another seed.
RUN=r4 . scripts/device-pre.sh
t0=$(date +%s)
suite t 330 'random_streams|random_streams_4ranks_shared' KILN_TEST_REQUIRE_GPUS=1
grep -h -E "random calls checked|^\[(PASS|FAIL|SKIP)|Assert|diff|want" $R/t.txt | sed 's/.*:://' | head -40
echo "($(( $(date +%s) - t0 )) s)"
suite soak 200 'random_streams' KILN_TEST_REQUIRE_GPUS=1 KILN_TEST_RANDOM_STREAMS=8 KILN_TEST_SEED=4242
grep -h -E "random calls checked|^\[(PASS|FAIL|SKIP)|Assert|want" $R/soak.txt | sed 's/.*:://' | head -20
echo "($(( $(date +%s) - t0 )) s)"

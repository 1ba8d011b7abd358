# Run 2 (1x H200), the same build as run 1: test_gpu_runtime whole as ctest runs it, with
# KILN_TEST_REQUIRE_GPUS=1 (on one GPU: the suites of ranks sharing it, the new 2- and 4-rank
# ones among them, and the host-only tests); then the 8-rank A/B of the staged form (its kernel
# for any rank count lost the destination loop of its reductions: ND = 1 there).
RUN=r2 . scripts/device-pre.sh
t0=$(date +%s)
KILN_TEST_REQUIRE_GPUS=1 timeout 470 $B/test_gpu_runtime --jobs 1 --verbose > $R/full.txt 2>&1
echo "full rc=$? ($(( $(date +%s) - t0 )) s)"
pack
grep -E "^\[FAIL|Synthesis" $R/full.txt | tail -5
grep -cE "^\[SKIP" $R/full.txt
G="--shared 1 --graph 20 --iters 10 --min 1M --max 64M"
abruns 1 f8 $G --ranks 8 --colls allreduce,reducescatter
echo "A/B done ($(( $(date +%s) - t0 )) s)"
ab Af8 Bf8 kiln-sym

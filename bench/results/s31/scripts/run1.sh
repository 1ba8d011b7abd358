# Run 1 (1x H200): the staged symmetric form split into a kernel for 2 and 4 ranks (loops and
# pointer arrays sized at compile time: no spills) and one for any count. First the suites that
# run that code with ranks sharing the GPU (every dtype and op against the CPU, the new 2- and
# 4-rank ones included); then A/B alternations of coll_bench --shared 1, A = edd01e3 (the
# session's start), B = this build, the sym column (the staged form serves these sizes).
RUN=r1 . scripts/device-pre.sh
t0=$(date +%s)
suite symshared 400 'sym_kernels_2ranks_shared|sym_kernels_4ranks_shared|sym_rounds_2ranks_shared|sym_rounds_4ranks_shared|sym_rounds_8ranks_shared' KILN_TEST_REQUIRE_GPUS=1
grep -E "checked|ranks on" $R/symshared.txt | head -12
echo "suites done ($(( $(date +%s) - t0 )) s)"
G="--shared 1 --graph 20 --iters 10 --min 1M --max 256M"
abruns 2 f2 $G --ranks 2 --colls allreduce,reducescatter
abruns 2 b2 $G --ranks 2 --colls allreduce,reducescatter --dtype bfloat16
abruns 2 f4 $G --ranks 4 --colls allreduce,reducescatter,allgather,alltoall
abruns 1 m2 $G --ranks 2 --colls allreduce,reducescatter --op max
echo "A/B done ($(( $(date +%s) - t0 )) s)"
grep -h "rows with errors\|differing" $R/B*_1.txt | sort | uniq -c | head
for t in f2 b2 f4 m2; do ab A$t B$t kiln-sym; done
cat $OUT/gpus.txt

# Run 1 (1x H200): coll_bench --shared (new): kiln's ranks sharing the one GPU, no NCCL, every
# output checked against the reference computed from the inputs; then two A/B alternations of
# kernel variants saved in session 28 (bench/results/s28/scripts), each built over HEAD with only
# the interpreter/sym translation units recompiled:
#   opsel: the interpreter's reductions by OpSel (selects) instead of OpDyn (a branch per element)
#   a2a:   LL12 alltoall's sends through sendPieces (LINE_TEST) instead of its own loop
RUN=r1 . scripts/device-pre.sh # pair: A/B alternations of two coll_bench builds
t0=$(date +%s)
for n in 2 4 8; do
  timeout 150 $B/coll_bench --shared 1 --ranks $n --min 8 --max 64M --graph 20 --iters 10 \
    --csv $R/all_n$n.csv > $R/all_n$n.txt 2>&1
  echo "all n=$n rc=$? $(grep -c '^ ' $R/all_n$n.txt) rows, $(grep 'rows with errors' $R/all_n$n.txt) ($(( $(date +%s) - t0 )) s)"
  pack
done
grep -v "^#   " $R/all_n2.txt | head -70
G="--shared 1 --graph 20 --iters 10 --sym off"
pair 3 opsel2 $B/coll_bench $B/coll_bench_opsel $G --ranks 2 --colls allreduce,reducescatter --min 1K --max 256M
pair 2 opsel2h $B/coll_bench $B/coll_bench_opsel $G --ranks 2 --colls allreduce --dtype half --min 1K --max 256M
pair 2 opsel4 $B/coll_bench $B/coll_bench_opsel $G --ranks 4 --colls allreduce --min 1K --max 256M
echo "opsel done ($(( $(date +%s) - t0 )) s)"
S="--shared 1 --graph 20 --iters 10 --colls alltoall --min 64 --max 256K"
for n in 2 4 8; do pair 3 a2a$n $B/coll_bench $B/coll_bench_a2a $S --ranks $n; done
echo "a2a done ($(( $(date +%s) - t0 )) s)"
for t in opsel2 opsel2h opsel4; do ab A$t B$t kiln-interp; done
for n in 2 4 8; do ab Aa2a$n Ba2a$n kiln-sym; done
cat $OUT/gpus.txt

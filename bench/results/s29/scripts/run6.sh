# Run 6 (1x H200): the final build against HEAD at the session's start (both with --shared; the
# interpreter column, --sym off) for the types and ops runs 1-2 did not time: int8 sum and max
# (its select kernel spills 44/76 bytes of stores/loads where HEAD's kernel spilled none), double
# sum (its Simple sum kernel spills 16/24), half max; 2 ranks sharing the GPU, graphs of 20 calls.
RUN=r6 . scripts/device-pre.sh
I="--shared 1 --graph 20 --iters 10 --sym off --colls allreduce,reducescatter --min 1K --max 256M --ranks 2"
pair 2 i8s $B/coll_bench_head $B/coll_bench $I --dtype int8
pair 2 i8m $B/coll_bench_head $B/coll_bench $I --dtype int8 --op max
pair 2 f64s $B/coll_bench_head $B/coll_bench $I --dtype double
pair 2 hmax $B/coll_bench_head $B/coll_bench $I --dtype half --op max
for t in i8s i8m f64s hmax; do ab A$t B$t kiln-interp; done
grep -h "rows with errors" $R/*.txt | sort | uniq -c
cat $OUT/gpus.txt

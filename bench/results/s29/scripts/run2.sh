# Run 2 (1x H200), coll_bench --shared 1 (ranks sharing the GPU, no NCCL), CUDA graphs of 20 calls:
#   base ($B/coll_bench): HEAD with run 1's interpreter OpSel, symmetric kernels without PDL where ranks share a
#         GPU, reducescatter's whole-line sends needing only an aligned input
#   flagsel:   base + the flag forms' reductions (kernels/sym.cuh reduceN) by OpSel where they
#              chose the op per element (OpDyn): 16-bit and 8-bit types, and ops other than sum/avg
#   interpsum: base + the interpreter summing (sum, avg) with the op fixed at compile time (OpSum),
#              OpSel for the other ops
# and the every-collective tables of run 1 again on 4 and 8 ranks (base: no timeouts wanted).
RUN=r2 . scripts/device-pre.sh
t0=$(date +%s)
for n in 4 8; do
  timeout 150 $B/coll_bench --shared 1 --ranks $n --min 8 --max 64M --graph 20 --iters 10 \
    --csv $R/all_n$n.csv > $R/all_n$n.txt 2>&1
  echo "all n=$n rc=$? $(grep -c '^ ' $R/all_n$n.txt) rows, $(grep 'rows with errors' $R/all_n$n.txt), $(grep -c TIMEOUT $R/all_n$n.txt) timeouts ($(( $(date +%s) - t0 )) s)"
  pack
done
F="--shared 1 --graph 20 --iters 10 --colls allreduce,reducescatter --min 1M --max 256M --ranks 2"
pair 3 fsh $B/coll_bench $B/coll_bench_flagsel $F --dtype half
pair 3 fsb $B/coll_bench $B/coll_bench_flagsel $F --dtype bfloat16
pair 2 fsm $B/coll_bench $B/coll_bench_flagsel $F --dtype float --op max
pair 2 fs4 $B/coll_bench $B/coll_bench_flagsel $F --dtype bfloat16 --ranks 4
echo "flagsel done ($(( $(date +%s) - t0 )) s)"
I="--shared 1 --graph 20 --iters 10 --sym off --colls allreduce,reducescatter --min 1K --max 256M --ranks 2"
pair 3 isf $B/coll_bench $B/coll_bench_interpsum $I
pair 2 ish $B/coll_bench $B/coll_bench_interpsum $I --dtype bfloat16
pair 2 ism $B/coll_bench $B/coll_bench_interpsum $I --op max
echo "interpsum done ($(( $(date +%s) - t0 )) s)"
for t in fsh fsb fsm fs4; do ab A$t B$t kiln-sym; done
for t in isf ish ism; do ab A$t B$t kiln-interp; done
grep -h "rows with errors" $R/*.txt | sort | uniq -c
cat $OUT/gpus.txt

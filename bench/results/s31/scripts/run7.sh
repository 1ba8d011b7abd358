# Run 7 (2x H200): the staged form's change over NVLink for the 1- and 2-byte types and a
# non-sum op (A = edd01e3, B = this build, ABAB, graphs of 10, 4 MiB-1 GiB), then the eager
# 2-GPU table (--batch, as nccl-tests times: host launches included) against NCCL.
RUN=r7 . scripts/device-pre.sh
t0=$(date +%s)
G="--ranks 2 --graph 10 --iters 10 --warmup 3 --colls allreduce,reducescatter --min 4M --max 1G"
abruns 2 bf $G --dtype bfloat16
abruns 1 i8 $G --dtype int8
abruns 1 mx $G --op max
echo "ab done ($(( $(date +%s) - t0 )) s)"
timeout 60 $B/coll_bench --ranks 2 --batch --iters 20 --warmup 5 --factor 4 --min 16 --max 64K --csv $R/e2.csv > $R/e2.txt 2>&1; echo "e2 rc=$? ($(( $(date +%s) - t0 )) s)"; pack
ab Abf Bbf
ab Ai8 Bi8
ab Amx Bmx
echo "== e2"; rows $R/e2.csv
cat $OUT/gpus.txt

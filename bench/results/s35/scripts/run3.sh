# Run 3 (2x H200): run 1's graphs of 100 calls for the other process models, 16 B-1 MiB: symmetric
# windows against NCCL's symmetric kernels (w100) and a process per GPU (mp100), with graphs of 10
# again in the same call (w10, mp10) to compare within it.
RUN=r3 . scripts/device-pre.sh
t0=$(date +%s)
tab() { local name=$1 to=$2; shift 2; timeout $to $B/coll_bench --ranks 2 --iters 15 --warmup 3 --factor 4 --min 16 --max 1M "$@" --csv $R/$name.csv > $R/$name.txt 2>&1; echo "$name rc=$? ($(( $(date +%s) - t0 )) s)"; pack; }
tab w10 60 --window --graph 10
tab w100 60 --window --graph 100
tab mp10 60 --mp --graph 10
tab mp100 60 --mp --graph 100
cat $OUT/gpus.txt
for t in w10 w100 mp10 mp100; do echo "== $t"; rows $R/$t.csv; done

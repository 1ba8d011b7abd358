# Run 2 (2x H200): the tables issue 5 asks for, at the build session 34 left (no kernel changed
# since session 33): kiln against NCCL 2.28.9 on 2 GPUs, float sum, 16 B-1 GiB: one process
# driving both GPUs in CUDA graphs of 10 calls (g10, the tables' convention since session 10) and
# of 20 (g20: as many as nccl-tests captures per graph by default); a process per GPU (mp10);
# symmetric windows against NCCL's symmetric kernels (w10, w20 to 1 MiB); eager as nccl-tests
# times it (e).
RUN=r2 . scripts/device-pre.sh
t0=$(date +%s)
tab() { local name=$1 to=$2; shift 2; timeout $to $B/coll_bench --ranks 2 --iters 10 --warmup 3 --factor 4 --min 16 "$@" --csv $R/$name.csv > $R/$name.txt 2>&1; echo "$name rc=$? ($(( $(date +%s) - t0 )) s)"; pack; }
tab g10 110 --graph 10 --max 1G
tab g20 110 --graph 20 --max 1G
tab mp10 100 --mp --graph 10 --max 1G
tab w10 80 --window --graph 10 --max 1G
tab w20 40 --window --graph 20 --max 1M
timeout 60 $B/coll_bench --ranks 2 --batch --iters 20 --warmup 5 --factor 4 --min 16 --max 64K --csv $R/e.csv > $R/e.txt 2>&1; echo "e rc=$? ($(( $(date +%s) - t0 )) s)"; pack
cat $OUT/gpus.txt
for t in g10 g20 mp10 w10 w20 e; do echo "== $t"; rows $R/$t.csv; done

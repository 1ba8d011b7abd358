# Run 5: after the review. A plan's scratch grows with the stream-ordered allocator
# (cudaMallocAsync on the call's stream; the old buffers freed there with cudaFreeAsync after the
# communicator's last call, kept until a growth outside a group inside one) instead of run 3's
# keep-and-double; the suites' 8-rank data narrowed only where a type needs it; coll_bench --mp
# agrees on kiln across processes. shared_diag (cases 13, 14: the scratch grows at the first
# checked call; 0), the suites that grow scratch in and out of groups, 8 ranks on the GPUs there
# are, --mp --batch, and allreduce 256 MiB-1 GiB with a process per GPU (run 2: 1 GiB 0.99x).
RUN=r5 . scripts/device-pre.sh
timeout 60 $B/shared_diag 13 14 0 > $R/diag.txt 2>&1; echo "diag rc=$?"; grep -v '^$' $R/diag.txt | head -8
pack
suite regular 120 'groups|several_streams|graph_replays|n8_plans_8ranks_shared|sym_kernels_8ranks_shared'
grep -h -E "^\[(PASS|FAIL)|plans of plans|calls checked" $R/regular.txt | sed 's/.*:://' | paste -sd' '
suite classic 170 'classic_plans_8ranks_shared'
grep -h -E "^\[(PASS|FAIL)" $R/classic.txt
timeout 50 $B/coll_bench --ranks 4 --mp --batch --iters 20 --warmup 5 --factor 8 --min 16 --max 64K --colls allreduce,reducescatter --csv $R/mpb4.csv > $R/mpb4.txt 2>&1
echo "mpb4 rc=$?"; pack; rows $R/mpb4.csv
timeout 60 $B/coll_bench --ranks 4 --mp --graph 10 --iters 10 --warmup 3 --factor 2 --min 256M --max 1G --colls allreduce --csv $R/mpar.csv > $R/mpar.txt 2>&1
echo "mpar rc=$?"; pack; rows $R/mpar.csv

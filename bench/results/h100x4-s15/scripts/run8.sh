# s15 run 8: the library after review (the preload set by the host for SM stores only, the
# direct copies' peer order in one place; no change meant): the suites of the direct forms on 4
# and 2 GPUs, and windows allgather/alltoall 1-16 MiB against NCCL once.
RUN=r8 . scripts/device-pre.sh
cat $OUT/gpus.txt
suite tests4 200 'sym_direct|sym_direct_copy_engine|sym_direct_choice|sym_group_peers|sym_kernels_4gpus'
CUDA_VISIBLE_DEVICES=0,1 suite tests2 60 'sym_direct|sym_group_peers'
grep -h -E "^\[PASS\]|checked" $R/tests4.txt $R/tests2.txt
G="--graph 10 --iters 10 --warmup 3 --factor 2 --colls allgather,alltoall --window --min 1M --max 16M"
timeout 40 $B/coll_bench --ranks 4 $G --csv $R/w4.csv > $R/w4.txt 2>&1; rc=$?; pack; echo "w4 rc=$rc"
rows $R/w4.csv

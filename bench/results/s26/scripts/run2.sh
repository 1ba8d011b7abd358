# Run 2 (4 GPUs): the drop-in with a large staged allreduce sent to NCCL (KILN_STAGED_AR_MAX_BYTES,
# default 512 MiB on 4 ranks): kiln's own staged allreduce against NCCL with a process per GPU at
# 128 MiB-1 GiB by 2x (twice: where the default goes), then the drop-in under torchrun (4
# processes: its GPU suite first, then allreduce and reducescatter 64 MiB-1 GiB, PyTorch's NCCL
# against kiln, results checked).
RUN=r2 . scripts/device-pre.sh
G="--mp --ranks 4 --graph 10 --iters 10 --warmup 3"
for i in 1 2; do
  timeout 120 $B/coll_bench $G --factor 2 --colls allreduce --min 128M --max 1G --csv $R/mp_$i.csv > $R/mp_$i.txt 2>&1; echo "mp_$i rc=$?"; pack
done
(mkdir -p $R/shim; OUT=$R/shim GPUS=4 SIZES=64M,256M,512M,1G COLLS=all_reduce,reduce_scatter DTYPES=float32 timeout 300 scripts/device-shim.sh > $R/shim.txt 2>&1; echo "shim rc=$?"); pack
cat $OUT/gpus.txt
for i in 1 2; do echo "== mp_$i"; rows $R/mp_$i.csv; done
tail -20 $R/shim/table.txt 2>/dev/null; grep -i "synthesis\|suite\|NCCL measured" $R/shim/decisions.txt 2>/dev/null | head -6

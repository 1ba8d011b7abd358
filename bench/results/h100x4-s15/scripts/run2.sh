# s15 run 2 (run 1's build, KILN_SYM_DIRECT_ONEPASS=0 throughout: the committed kernels): why
# direct allgather/alltoall on windows trail NCCL's symmetric kernels at 1-4 MiB on H100 - the
# block size and count of the direct copies, threads per block, and the staged form instead;
# then the eager 2-GPU allreduce's host time with the calling thread issuing every GPU, with the
# runtime's launch, without PDL; host_bench on 2 GPUs.
RUN=r2 . scripts/device-pre.sh
export KILN_SYM_DIRECT_ONEPASS=0
cat $OUT/gpus.txt
G="--graph 10 --iters 10 --warmup 3 --factor 2 --colls allgather,alltoall --window --min 512K --max 16M"
v0=""; v1="KILN_SYM_DIRECT_BLOCK_BYTES=4096"; v2="KILN_SYM_DIRECT_BLOCK_BYTES=16384"; v3="--threads 256"
v4="KILN_SYM_DIRECT_BLOCK_BYTES=4096 --threads 256"; v5="KILN_SYM_DIRECT_BYTES=33554432"
for i in 1 2; do
  for v in 0 1 2 3 4 5; do
    eval "set -- \$v$v"
    envs=(); args=()
    for x in "$@"; do case $x in KILN_*) envs+=("$x");; *) args+=("$x");; esac; done
    env "${envs[@]}" timeout 40 $B/coll_bench --ranks 4 $G "${args[@]}" --csv $R/w4_v${v}_$i.csv > $R/w4_v${v}_$i.txt 2>&1
  done
  pack
done
E="--colls allreduce --min 8 --max 64K --factor 8 --batch --iters 200 --warmup 20 --host-time"
k=0
for v in "" KILN_GROUP_THREADS=0 KILN_LAUNCH_DRIVER=0 KILN_SYM_PDL=0 ""; do
  k=$((k + 1)); n=${v%%=*}; n=$k${n:+_$n}
  env $v CUDA_VISIBLE_DEVICES=0,1 timeout 30 $B/coll_bench --ranks 2 $E --csv $R/e2_$n.csv > $R/e2_$n.txt 2>&1
done
CUDA_VISIBLE_DEVICES=0,1 timeout 60 $B/host_bench --gpus 2 --iters 20000 > $R/host2.txt 2>&1
pack
cd bench; PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
for v in 1 2 3 4 5; do
  eval "echo \"== w4: A default, B: \$v$v (size A B B/A)\""
  $PY ab.py --col kiln-sym $R/w4_v0_*.csv -- $R/w4_v${v}_*.csv | awk '{print $1, $2$3, $4, $5, $6, $7, $NF}' | paste -sd'|' | sed 's/|/ | /g'
done
echo "== NCCL windows"; rows $R/w4_v0_1.csv
for f in $R/e2_*.txt; do echo "== $f"; grep "kiln-sym:\|nccl:" $f | head -6; done
cat $R/host2.txt

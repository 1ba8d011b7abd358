# s18 run 3: kiln's LL kernel alone (scripts/sym_probe.cu) and variants of sym.cuh, 2 GPUs, with
# coll_bench's graph times of the same sizes in the same call.
export NCCL_NVLS_ENABLE=0
mkdir -p .carry/p && tar xf .carry/probes.tar -C .carry/p
RUN=r3 . scripts/device-pre.sh
{
for i in 1 2; do
  .carry/p/pdl_probe xchgio 2 1 32
  for b in 16 256 4096 65536; do
    for v in v0 v1slots v2bar v3spin v4abort v5all v6trig; do
      for c in ar ag; do echo -n "$v "; .carry/p/sym_probe_$v $c $b 2; done
    done
  done
done
} > $R/sym.txt 2>&1
pack
CUDA_VISIBLE_DEVICES=0,1 timeout 40 $B/coll_bench --ranks 2 --graph 10 --iters 10 --warmup 3 --factor 4 --min 16 --max 64K --colls allreduce,allgather --csv $R/g2.csv > $R/g2.txt 2>&1
rows $R/g2.csv
pack
sort $R/sym.txt | awk '{k=$1" "$2" "$3; t[k]=t[k]" "$(NF-3)} END {for (k in t) print k, t[k]}' | sort -k3,3n -k2,2 -k1,1
grep -h "WRONG\|ERROR" $R/sym.txt | head

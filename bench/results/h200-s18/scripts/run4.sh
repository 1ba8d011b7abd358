# s18 run 4: variants of sym.cuh's LL kernel in scripts/sym_probe.cu, 2 GPUs, three rounds.
export NCCL_NVLS_ENABLE=0
mkdir -p .carry/p && tar xf .carry/probes.tar -C .carry/p
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
{
for i in 1 2 3; do
  for v in v0 vA vB vC vD vE v6; do
    for cb in ar:16 ar:256 ar:4096 ar:65536 ag:16 ag:4096 ag:65536 rs:4096 a2a:4096; do
      echo -n "$v "; .carry/p/sp_$v ${cb%:*} ${cb#*:} 2
    done
  done
done
} > $OUT/sym4.txt 2>&1
awk '{k=$2" "$3" "$1; t[k]=t[k]" "$(NF-3)} END {for (k in t) print k, t[k]}' $OUT/sym4.txt | sort -k1,1 -k2,2n -k3,3
grep -h "WRONG\|ERROR" $OUT/sym4.txt | head

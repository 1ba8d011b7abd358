# Shared preamble of session 11's device calls: unpack the carried build, the environment
# (NCCL 2.28.9 from PyTorch's venv, NVLS off), $L for logs, $B the benchmark.
L=$OUT/logs; mkdir -p $L
tar xJf .carry/pack.tar.xz -C .carry
mkdir -p .carry/shim/cudart && cp -L .carry/lib/libcudart.so* .carry/shim/cudart/
P=/opt/torch/.venv/bin/python
REAL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
nvidia-smi -L > $L/gpus.txt
. scripts/carry-libs.sh; device_env $PWD/.carry/lib
export NCCL_NVLS_ENABLE=0
B=.carry/bin/coll_bench
# behind FILE...: rows where kiln is slower than NCCL, and the count of rows and errors.
behind() { for f in "$@"; do awk -F, -v f=$(basename $f .csv) 'NR>1 {n++; if($26>=1.0) k++; else printf "  behind: %s %s %s %.2f vs %.2f\n", f, $1, $7, $22, $10; e+=$17+$21+$25} END {print f": "k"/"n" rows >= 1.0x, errors "e}' $f; done; }
# big FILE...: sizes from 16 MiB: kiln and NCCL µs, kiln busbw.
big() { for f in "$@"; do awk -F, -v f=$(basename $f .csv) 'NR>1 && $7>=16777216 {printf "%-14s %-14s %10s kiln %8.1f nccl %8.1f x%.3f busbw %.1f err %s\n", f, $1, $7, $22, $10, $26, $24, $25}' $f; done; }
# cmp BASE VAR...: kiln µs per (collective, size) in BASE and each VAR (same machine, same call).
cmp() { awk -F, 'FNR==1 {fi++; name[fi]=FILENAME; sub(/.*\//,"",name[fi]); sub(/\.csv$/,"",name[fi]); next}
  {k=$1" "$7; if (!(k in seen)) {seen[k]=1; order[++nk]=k}; t[k,fi]=$22; nc[k,fi]=$10; e+=$25}
  END {printf "%-22s", "coll size"; for (i=1;i<=fi;i++) printf " %14s", name[i]; printf "  (nccl in each)\n";
    for (j=1;j<=nk;j++) {k=order[j]; printf "%-22s", k; for (i=1;i<=fi;i++) printf " %14s", ((k,i) in t) ? sprintf("%.2f", t[k,i]) : "-";
      printf "  |"; for (i=1;i<=fi;i++) if ((k,i) in nc) printf " %.2f", nc[k,i]; printf "\n"} print "errors " e+0}' "$@"; }

# s18 run 12: partial lines (a piece of fewer than 8 bytes, or its end): loadPart/storePart with a loop to nv (w0, as committed) against one unrolled over the pack with a test per element (wP), the LL kernel alone (sym_probe), 2 GPUs.
export NCCL_NVLS_ENABLE=0
mkdir -p .carry/p && tar xf .carry/probes.tar -C .carry/p
for i in 1 2; do for v in w0 wP; do for cb in rs:8 rs:16 ag:8 ag:16 a2a:8 a2a:16 ar:12 ar:16 ar:4096; do echo -n "$v "; .carry/p/sp_$v ${cb%:*} ${cb#*:} 2; done; done; done > $OUT/sym12.txt 2>&1
awk '{k=$2" "$3" "$1; t[k]=t[k]" "$(NF-3)} END {for (k in t) print k, t[k]}' $OUT/sym12.txt | sort
grep -h "WRONG\|ERROR" $OUT/sym12.txt | head

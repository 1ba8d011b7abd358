# Run 6 (2 GPUs; no 4-GPU kind lent then): a lead for the misaligned and partial lines' cost, the
# kernel alone (sym_probe, float): sp_before (the committed kernels) against sp_vBF, whose float
# loadPart (LL) and load12 (LL12) load a line's words branch-free (every word's load issued, the
# ones past the line's valid elements clamped to its first word, then selects), two alternations,
# each call then checked on fresh input (PROBE_CHECK=2). sp_vBF built from kernels/ with
# scripts/vBF-primitives.patch and scripts/vBF-sym.patch applied (patch -o into a folder put first
# on the include path, as s25's variants.sh does); not a library change.
export NCCL_NVLS_ENABLE=0 PROBE_CHECK=2
OUT=${OUT:-/tmp/kiln-out}; R=$OUT/r6; mkdir -p $R
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > $R/gpus.txt 2>&1
S=.carry/s26
for i in 1 2; do
  for c in "rs 8" "rs 24" "rs 32" "rs 2056" "a2a 8" "a2a 24" "a2a 32" "ar 12" "ar 16" "ar 4100" "ar 4096" "ar12 16388" "ar12 16384"; do
    set -- $c
    for v in sp_before sp_vBF; do
      echo "$v $1-$2-2-$i $(timeout 20 $S/$v $1 $2 2 2>&1 | grep -o '[0-9.]* us per kernel.*') rc=${PIPESTATUS[0]}" >> $R/p2.txt
    done
  done
done
tar czf $OUT/r6.tgz -C $OUT r6
cat $R/gpus.txt
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python)
$PY - $R/p2.txt <<'P'
import sys, re, collections
t = collections.defaultdict(lambda: collections.defaultdict(list))
for l in open(sys.argv[1]):
    m = re.search(r"^(\S+) (\S+)-(\d) ([0-9.]+) us per kernel", l)
    if m: t[m.group(2)][m.group(1)].append(float(m.group(4)))
    elif "rc=" in l: print("NO TIME:", l.strip())
for k, v in t.items():
    b, a = min(v["sp_before"]), min(v["sp_vBF"])
    print(f"{k} {b:.3f} {a:.3f} {a / b:.3f}")
P
grep -v "rc=0" $R/p2.txt | head

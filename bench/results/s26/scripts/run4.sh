# Run 4 (4 GPUs): the line forms' partial and misaligned lines loaded and stored with the element
# loop unrolled (x in registers) against the committed loop (x in local memory for the LL128 and
# two-shot LL forms, none for LL): the kernel alone (sym_probe, float, graphs of 20 PDL-chained
# kernels), before/after one after the other, twice, each call then checked on fresh input
# (PROBE_CHECK=2). Sizes with a partial last line or pieces at odd offsets, and aligned ones.
RUN=r4 . scripts/device-pre.sh
S=.carry/s26
export PROBE_CHECK=2
for i in 1 2; do
  for c in "rs 16" "rs 64" "rs 48" "rs 4112" "a2a 16" "a2a 64" "a2a 48" "ag 16" "ag 48" "ar 4" "ar 12" "ar 16" "ar 4100" \
           "ar12 16388" "ar12 16384" "rs12 65552" "ar128 262148" "ar128 262144" "rs128 1048592" "ag128 1048592"; do
    set -- $c
    probe2 $S/sp_before $S/sp_after "$1-$2-4-$i" $1 $2 4 >> $R/p4.txt
  done
  for c in "rs 8" "rs 24" "ar 4" "ar 12" "ar 16" "ar12 16388" "ar128 262148" "ar128 1048580"; do
    set -- $c
    probe2 $S/sp_before $S/sp_after "$1-$2-2-$i" $1 $2 2 >> $R/p2.txt
  done
  pack
done
cat $OUT/gpus.txt
$(command -v python3 || echo /opt/torch/.venv/bin/python) - $R/p4.txt $R/p2.txt <<'PY'
import sys, re, collections
for f in sys.argv[1:]:
    t = collections.defaultdict(lambda: collections.defaultdict(list)); bad = []
    for l in open(f):
        w = l.split()
        if len(w) < 3: continue
        name, lab = w[0], w[1]
        m = re.search(r"([0-9.]+) us per kernel", l)
        if not m or "rc=0" not in l: bad.append(l.strip()); continue
        key = lab.rsplit("-", 1)[0]
        t[key][name].append(float(m.group(1)))
    print("==", f.split("/")[-1], "(before after after/before, min of runs)")
    for k, v in t.items():
        b, a = min(v.get("sp_before", [0])), min(v.get("sp_after", [0]))
        print(f"{k} {b:.3f} {a:.3f} {a / b if b else 0:.3f}")
    for l in bad: print("BAD", l)
PY

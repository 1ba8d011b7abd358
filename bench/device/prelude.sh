# Sourced at the start of a device call (GPU machine, repository root): unpacks the build that
# bench/device/pack.sh packed into .carry/pack.tar.xz (copied to the GPU machine with the checkout), sets the
# device environment (bench/device/carry-libs.sh: NVLink multicast off, NCCL 2.28.9 first) and records
# the cards in $OUT/gpus.txt. B: the carried binaries.
#   RUN=r1 . bench/device/prelude.sh   (RUN names the call: logs go to $R = $OUT/$RUN)
# Then, after every step, `pack`: $OUT/$RUN.tgz holds the logs so far (only a few files come back
# from $OUT, and a call cut off by its limit keeps what ran); `rows CSV` prints a coll_bench CSV
# as one line per collective: size kiln-us/nccl-us xspeed-up e(differing elements);
# `suite NAME SECONDS 'a|b' [VAR=value...]` runs the GPU tests a and b (whichever test_gpu_* has them) under
# that environment into $R/NAME.txt, packs, and prints its failures and summary line;
# `ab A B [COLUMN]` prints B's time over A's per collective and size on one line (bench/ab.py over
# $R/A_*.csv against $R/B_*.csv: the runs of an A/B alternation named A_1.csv, A_2.csv, ...;
# COLUMN: one kiln column, kiln-baked, kiln-interp or kiln-sym, as runs of coll_bench --shared need);
# `pair N TAG A_BIN B_BIN COLL_BENCH_ARGS...` makes such an alternation: N times A_BIN then B_BIN
# (two builds of coll_bench), into $R/ATAG_i.csv and $R/BTAG_i.csv (`ab ATAG BTAG` compares them);
# `abruns N TAG COLL_BENCH_ARGS...` is pair with $B/coll_bench_A (an older build, packed as an
# extra binary) and $B/coll_bench; `envab N TAG VAR=VALUE COLL_BENCH_ARGS...` does the same with one
# build, a setting against the default: A runs with VAR=VALUE, B without;
# `probe2 A_BIN B_BIN LABEL ARGS...` runs two builds of a probe (sym_probe, ...) one after the
# other on the same arguments and prints one line per build: "NAME LABEL TIME us per kernel[ its
# check's complaint] rc=EXIT" (field 5 of a three-word label: the time);
# `probetab FILE` prints, from such lines (labels CASE-ALTERNATION, two builds), per case the
# first build's best time, the second's and their ratio, after any line whose probe failed.
set -u
OUT=${OUT:-/tmp/kiln-out}
DEV_RUN=${RUN:-run} # RUN=... before `.` lasts only while this file runs
R=$OUT/$DEV_RUN
mkdir -p "$R"
tar xJf .carry/pack.tar.xz -C .carry || { echo "no .carry/pack.tar.xz: carry it" >&2; exit 1; }
. bench/device/carry-libs.sh
device_env "$PWD/.carry/lib"
B=$PWD/.carry/bin
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > "$OUT/gpus.txt" 2>&1
cp "$OUT/gpus.txt" "$R/"
pack() { tar czf "$OUT/$DEV_RUN.tgz" -C "$OUT" "$DEV_RUN"; }
rows() {
  awk -F, 'NR > 1 { k = substr($1, 1, 4); if (k != last) { if (last != "") print ""; printf "%s:", k; last = k }
                    printf " %s %s/%s x%s e%s |", $7, $22, $10, $26, $25 } END { print "" }' "$1"
}
suite() {
  local name=$1 to=$2 filter=$3 rc
  shift 3
  rc=0
  : > "$R/$name.txt"
  for t in "$B"/test_gpu_*; do
    env "$@" timeout "$to" "$t" --verbose -j1 --filter "*/@($filter)" >> "$R/$name.txt" 2>&1 || rc=$?
  done
  pack
  echo "$name rc=$rc"
  grep -E "^\[FAIL|Synthesis|Assertion" "$R/$name.txt" | head -8
}
ab() {
  local py col=${3:+--col $3}
  py=$(command -v python3 || echo /opt/torch/.venv/bin/python)
  echo "== $1 against $2 (size $2/$1)${3:+, column $3}"
  (cd bench && "$py" ab.py $col "$R"/"$1"_*.csv -- "$R"/"$2"_*.csv |
    awk 'NR > 1 { printf "%s %s%s %s | ", substr($1, 1, 4), $2, $3, $NF } END { print "" }')
}
pair() {
  local n=$1 tag=$2 a=$3 b=$4 i
  shift 4
  for i in $(seq "$n"); do
    timeout 120 "$a" "$@" --csv "$R/A${tag}_$i.csv" > "$R/A${tag}_$i.txt" 2>&1 || echo "A$tag $i rc=$?"
    timeout 120 "$b" "$@" --csv "$R/B${tag}_$i.csv" > "$R/B${tag}_$i.txt" 2>&1 || echo "B$tag $i rc=$?"
    pack
  done
}
abruns() {
  local n=$1 tag=$2
  shift 2
  pair "$n" "$tag" "$B/coll_bench_A" "$B/coll_bench" "$@"
}
envab() {
  local n=$1 tag=$2 set=$3 i
  shift 3
  for i in $(seq "$n"); do
    env "$set" timeout 100 "$B/coll_bench" "$@" --csv "$R/A${tag}_$i.csv" > "$R/A${tag}_$i.txt" 2>&1
    timeout 100 "$B/coll_bench" "$@" --csv "$R/B${tag}_$i.csv" > "$R/B${tag}_$i.txt" 2>&1
    pack
  done
}
probe2() {
  local a=$1 b=$2 label=$3 v
  shift 3
  for v in "$a" "$b"; do
    echo "$(basename "$v") $label $(timeout 20 "$v" "$@" 2>&1 | grep -o '[0-9.]* us per kernel.*') rc=${PIPESTATUS[0]}"
  done
}
probetab() {
  local py
  py=$(command -v python3 || echo /opt/torch/.venv/bin/python)
  "$py" - "$1" <<'P'
import sys, re, collections
t = collections.OrderedDict()
for l in open(sys.argv[1]):
    m = re.search(r"^(\S+) (\S+)-(\d+) ([0-9.]+) us per kernel", l)
    if "rc=0" not in l or not m:
        print("PROBLEM:", l.strip())
        continue
    t.setdefault(m.group(2), collections.OrderedDict()).setdefault(m.group(1), []).append(float(m.group(4)))
for k, v in t.items():
    if len(v) != 2: print("PROBLEM: one build only:", k); continue
    (na, a), (nb, b) = v.items()
    print(f"{k} {min(a):.3f} {min(b):.3f} {min(b) / min(a):.3f}", end=" | ")
print()
P
}
# Scripts run from the call's shell (bench/device/ab-mirror.sh, ...) see the run folder, the
# binaries and these functions.
export OUT R B DEV_RUN
export -f pack rows suite ab pair abruns envab probe2 probetab

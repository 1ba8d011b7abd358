#!/usr/bin/env bash
# kiln's drop-in libnccl.so.2 under an unchanged PyTorch, on the GPU machine.
#
# Runs bench/torch_collectives.py with torchrun on 2 and 4 GPUs (those present):
#   nccl  PyTorch's own NCCL, nothing preloaded (the baseline)
#   off   kiln's libnccl.so.2 preloaded with KILN_DISABLE=1 (cost of the shim alone)
#   kiln  kiln's libnccl.so.2 preloaded: the plans baked into it, and those of $KILN_PLANS when
#         set (e.g. bench/shim_plans; loaded plans run on the interpreter and win the selection)
# then prints one side-by-side table (time per call in us, and each run's result check).
#
# On the CPU machine, `bench/device/dropin-torch.sh --pack BUILD_DIR` copies the shim (and
# tests/gpu/test_gpu_shim when built) into .carry/shim/, with the libraries they need that the GPU
# machines lack: the CUDA runtime into .carry/shim/cudart/ (for the shim under PyTorch, only when
# the machine's own is not found), Criterion and its dependencies into .carry/shim/lib/ (for the
# suite only). It leaves the rest of .carry/ alone, but bench/device/gpu-suites.sh --pack empties
# .carry/: pack the runtime first, then the shim.
#
# On the GPU machine, run from the repository root. The shim is KILN_SHIM, else
# .carry/shim/libnccl.so.2, else any .carry/**/libnccl.so.2 that is kiln's (holds kilnShimMarker).
# When .carry/shim/test_gpu_shim exists it runs first (one process, all GPUs, through the shim).
# $OUT receives four files: table.txt (the side-by-side table), decisions.txt (kiln's "kiln:"
# lines per run, counted, and the GPU suite's summary), runs.log (every run's whole output) and
# results.json (every row of every run).
# Settings (environment): KILN_SHIM, KILN_PLANS, PYTHON, SIZES, DTYPES, COLLS, ITERS, GPUS.
# Exit status: 0 when every run finished with every result exact, 1 otherwise.
set -uo pipefail

if [ "${1:-}" = "--pack" ]; then
  build=${2:?usage: bench/device/dropin-torch.sh --pack BUILD_DIR}
  rm -rf .carry/shim
  mkdir -p .carry/shim/lib .carry/shim/cudart
  cp -L "$build/host/shim/libnccl.so.2" .carry/shim/ || exit 1
  [ -x "$build/tests/gpu/test_gpu_shim" ] && cp "$build/tests/gpu/test_gpu_shim" .carry/shim/
  . "$(dirname "$0")/carry-libs.sh"
  carry_libs .carry/shim/libnccl.so.2 .carry/shim/test_gpu_shim |
    while read -r l; do
      case $l in */libcudart.so*) cp -L "$l" .carry/shim/cudart/ ;; *) cp -L "$l" .carry/shim/lib/ ;; esac
    done
  du -sh .carry/shim
  exit 0
fi

OUT=${OUT:-$(mktemp -d /tmp/kiln-shim.XXXXXX)}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/kiln-shim-work.XXXXXX)
PYTHON=${PYTHON:-/opt/torch/.venv/bin/python}
REAL_NCCL=${KILN_NCCL_PATH:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2}
SHIM=${KILN_SHIM:-}
if [ -z "$SHIM" ]; then
  for c in .carry/shim/libnccl.so.2 $(find .carry -name 'libnccl.so.2' 2>/dev/null); do
    if [ -f "$c" ] && grep -q kilnShimMarker "$c"; then SHIM=$c; break; fi
  done
fi
PLANS=${KILN_PLANS:-}
SIZES=${SIZES:-1K,64K,1M,16M,64M}
DTYPES=${DTYPES:-float32,bfloat16}
COLLS=${COLLS:-all_reduce,all_gather,reduce_scatter,all_to_all,broadcast,barrier}
ITERS=${ITERS:-20}

log() { echo "dropin-torch: $*" >&2; }

if [ -z "$SHIM" ] || [ ! -f "$SHIM" ]; then
  log "no kiln libnccl.so.2 found under .carry/ (set KILN_SHIM)"; exit 1
fi
SHIM=$(realpath "$SHIM")
[ -n "$PLANS" ] && PLANS=$(realpath "$PLANS")
if [ ! -f "$REAL_NCCL" ]; then
  log "no real NCCL at $REAL_NCCL (set KILN_NCCL_PATH)"; exit 1
fi
# The shim's runs only (never the baseline) get the CUDA runtime packed beside the shim, and only
# when the machine's own is not found.
shim_lib=()
if ! ldd "$SHIM" > "$WORK/ldd.txt" 2>&1 || grep -q "not found" "$WORK/ldd.txt"; then
  shim_lib=(LD_LIBRARY_PATH="$(dirname "$SHIM")/cudart:${LD_LIBRARY_PATH:-}")
  if ! env "${shim_lib[@]}" ldd "$SHIM" > "$WORK/ldd.txt" 2>&1 || grep -q "not found" "$WORK/ldd.txt"; then
    log "the shim's libraries are missing:"; cat "$WORK/ldd.txt" >&2; exit 1
  fi
fi
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
GPUS=${GPUS:-"2 4"}
log "shim $SHIM, real NCCL $REAL_NCCL, plans ${PLANS:-baked only}, $NGPU GPUs, out $OUT"
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)

. "$(dirname "$0")/carry-libs.sh"
device_safety # the library path stays this script's: shim or real NCCL per run
export OMP_NUM_THREADS=1
status=0
runs=()
: > "$OUT/runs.log"

# The shim's GPU suite: one process driving the GPUs through the shim, results vs NCCL.
GPU_SUITE=$(dirname "$SHIM")/test_gpu_shim
suite_line="GPU suite: not carried"
if [ -x "$GPU_SUITE" ]; then
  log "run test_gpu_shim"
  # The suite links the real NCCL itself (found first) and dlopens the shim. Its other libraries:
  # beside the shim (--pack) or in .carry/lib (bench/device/pack.sh).
  LD_LIBRARY_PATH="$(dirname "$REAL_NCCL"):$(dirname "$SHIM")/lib:$(dirname "$SHIM")/../lib:$(dirname "$SHIM")/cudart:${LD_LIBRARY_PATH:-}" \
    KILN_SHIM="$SHIM" KILN_TEST_REAL_NCCL="$REAL_NCCL" timeout -k 5 120 \
    "$GPU_SUITE" --jobs 1 --verbose > "$WORK/suite.log" 2>&1
  rc=$?
  suite_line="GPU suite test_gpu_shim: exit $rc, $(grep -E 'Synthesis' "$WORK/suite.log" | tail -n 1)"
  { echo "===== test_gpu_shim (exit $rc)"; cat "$WORK/suite.log"; } >> "$OUT/runs.log"
  [ $rc -eq 0 ] || status=1
  log "$suite_line"
fi
for n in $GPUS; do
  [ "$n" -le "$NGPU" ] || { log "skipping $n GPUs: only $NGPU here"; continue; }
  modes="nccl off kiln"
  for mode in $modes; do
    tag="n${n}-${mode}"
    env_args=()
    case $mode in
      nccl) ;;
      off) env_args=("${shim_lib[@]}" LD_PRELOAD="$SHIM" KILN_NCCL_PATH="$REAL_NCCL" KILN_DISABLE=1
                 KILN_DEBUG=INFO) ;;
      kiln) env_args=("${shim_lib[@]}" LD_PRELOAD="$SHIM" KILN_NCCL_PATH="$REAL_NCCL" KILN_DEBUG=INFO)
            [ -n "$PLANS" ] && env_args+=(KILN_PLANS="$PLANS") ;;
    esac
    log "run $tag"
    start=$(date +%s)
    timeout -k 10 150 env "${env_args[@]}" "$PYTHON" -m torch.distributed.run --nproc-per-node "$n" \
      bench/torch_collectives.py --sizes "$SIZES" --dtypes "$DTYPES" --colls "$COLLS" \
      --iters "$ITERS" --label "$mode" --json "$WORK/$tag.json" > "$WORK/$tag.log" 2>&1
    rc=$?
    log "run $tag: exit $rc in $(( $(date +%s) - start )) s"
    { echo "===== $tag (exit $rc)"; cat "$WORK/$tag.log"; } >> "$OUT/runs.log"
    if [ $rc -ne 0 ]; then
      status=1
      tail -n 25 "$WORK/$tag.log" >&2
    fi
    grep -h "^kiln:" "$WORK/$tag.log" | sed 's/ pid [0-9]*:/:/' | sort | uniq -c | sort -rn \
      | head -n 40 > "$WORK/$tag.kiln.txt"
    runs+=("$tag")
  done
done

# Side by side: one line per (ranks, collective, dtype, bytes, mode).
echo "GPU: $GPU_NAME; NCCL_NVLS_ENABLE=0; shim $SHIM" > "$OUT/table.txt"
"$PYTHON" - "$WORK" "$OUT" "${runs[@]}" <<'EOF' | tee -a "$OUT/table.txt"
import json, os, sys
work, out, tags = sys.argv[1], sys.argv[2], sys.argv[3:]
data, every = {}, []
for t in tags:
    p = os.path.join(work, t + ".json")
    if os.path.exists(p):
        rows = json.load(open(p))
        every += [dict(r, run=t) for r in rows]
        data[t] = {(r["coll"], r["dtype"], r["bytes"], r["mode"]): r for r in rows}
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(every, f, indent=1)
for n in sorted({t.split("-")[0] for t in tags}):
    cols = [f"{n}-{m}" for m in ("nccl", "off", "kiln")]
    keys = []
    for c in cols:
        for k in data.get(c, {}):
            if k not in keys:
                keys.append(k)
    print(f"\n{n[1:]} GPUs: time per call (us), check; speedup = nccl / kiln")
    print(f"{'collective':<15}{'dtype':<9}{'bytes':>11} {'mode':<6}" +
          "".join(f"{c.split('-')[1]:>14}" for c in cols) + f"{'speedup':>9}")
    for k in keys:
        cells, t = [], {}
        for c in cols:
            r = data.get(c, {}).get(k)
            if r is None:
                cells.append(f"{'-':>14}")
            else:
                t[c] = r["us"]
                cells.append(f"{r['us']:>10.2f} {'ok ' if r['ok'] else 'BAD'}")
        sp = t.get(cols[0], 0) / t[cols[2]] if t.get(cols[2]) else 0
        print(f"{k[0]:<15}{k[1]:<9}{k[2]:>11} {k[3]:<6}" + "".join(cells) +
              (f"{sp:>8.2f}x" if sp else f"{'-':>9}"))
missing = [t for t in tags if t not in data]
if missing:
    print("\nno results from: " + ", ".join(missing))
EOF
for t in "${runs[@]}"; do
  if [ -s "$WORK/$t.kiln.txt" ]; then
    echo; echo "kiln lines of $t (count, line):"; cat "$WORK/$t.kiln.txt"
  fi
done | tee "$OUT/decisions.txt"
echo "$suite_line" | tee -a "$OUT/decisions.txt"
rm -rf "$WORK"
exit $status

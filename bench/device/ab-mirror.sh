#!/bin/bash
# The plan path against the symmetric kernels (coll_bench --mirror), baked, in one GPU call.
#   bench/device/ab-mirror.sh --pack [--channels 64]   (CPU machine, repository root) writes the
#       plans --mirror runs at 16 B-1 GiB (x4) for 2 and 4 ranks sharing one GPU, builds a
#       coll_bench whose library bakes them (build-ab/, float only; about 6 minutes on 2 cores
#       the first time) and packs it with its libkiln into .carry/ab.tar.xz (carry .carry).
#       Needs the CUDA build in build/ (its coll_bench writes the plans: --mirror-plans).
#   bench/device/ab-mirror.sh [--channels 64] [COLL_BENCH_ARGS...]   (GPU machine, after
#       bench/device/prelude.sh) runs the A/B for 2 and 4 ranks, CUDA graphs of 10, into $R
#       (prelude's run folder) and prints, per collective and size, baked/sym time and their ratio.
# Two builds of the plan path (a kernel change against the build before it):
#   --pack --keep   first renames the packed build .carry/ab.tar.xz to .carry/ab-old.tar.xz;
#   --against [--rounds N] [COLL_BENCH_ARGS...]   (GPU machine) runs the old and the new build's
#       coll_bench one after the other, N rounds (2), 2 and 4 ranks, 16 B-1 MiB (x4) unless the
#       arguments say otherwise, into $R/A-nR_i.csv (old) and $R/B-nR_i.csv (new), prints new/old of
#       the baked and of the symmetric kernels' times (the latter the same kernels: the noise),
#       then each build's baked/sym of its first round.
# The two steps take the same --channels (a plan's blocks are at most the communicator's
# channels: 32 by default, 64 to mirror the symmetric kernels' 64 blocks at 1 MiB).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
channels=()
if [ "${1:-}" = "--pack" ]; then
  shift
  if [ "${1:-}" = "--keep" ]; then
    shift
    [ -f "$here/.carry/ab.tar.xz" ] || { echo "ab-mirror: --keep: no .carry/ab.tar.xz to keep" >&2; exit 1; }
    mv "$here/.carry/ab.tar.xz" "$here/.carry/ab-old.tar.xz" || exit 1
  fi
  [ "${1:-}" = "--channels" ] && channels=(--channels "$2")
  ab="$here/build-ab"
  mkdir -p "$ab/plans" || exit 1
  for n in 2 4; do
    "$here/build/bench/coll_bench" --mirror-plans "$ab/plans" --ranks "$n" --shared 1 --min 16 --max 1G \
      --factor 4 "${channels[@]}" | tail -1 || exit 1
  done
  export PATH=/usr/local/cuda/bin:$PATH
  cmake -S "$here" -B "$ab" -DKILN_PLANS_DIR="$ab/plans" -DKILN_BAKED_DTYPES=float -DKILN_BUILD_TESTS=OFF \
    > "$ab/configure.log" || { echo "ab-mirror: cmake failed: $ab/configure.log" >&2; exit 1; }
  cmake --build "$ab" -j2 --target coll_bench > "$ab/build.log" 2>&1 ||
    { echo "ab-mirror: build failed: $ab/build.log" >&2; exit 1; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp "$ab/bench/coll_bench" "$tmp/" && cp -L "$ab/lib/libkiln.so.0.1" "$tmp/" || exit 1
  strip --strip-debug "$tmp"/*
  mkdir -p "$here/.carry"
  tar cf - -C "$tmp" . | xz -T2 -6 > "$here/.carry/ab.tar.xz" && ls -la "$here/.carry/ab.tar.xz"
  exit
fi
# Per collective: size baked/sym=ratio, and the differing elements of both (e00: exact).
baked_over_sym() {
  awk -F, 'NR > 1 { k = substr($1, 1, 4) " n" $2; if (k != l) { if (l != "") print ""; printf "%s:", k; l = k }
                    r = ($14 != "" && $22 != "") ? sprintf("%.2f", $14 / $22) : "-"
                    printf " %s %s/%s=%s e%s%s", $7, $14, $22, r, $17, $25 } END { print "" }' "$1"
}
: "${R:?source bench/device/prelude.sh first (it exports R and its functions)}"
if [ "${1:-}" = "--against" ]; then
  shift
  rounds=2
  [ "${1:-}" = "--rounds" ] && { rounds=$2; shift 2; }
  for v in old new; do
    f=.carry/ab.tar.xz
    [ $v = old ] && f=.carry/ab-old.tar.xz
    mkdir -p ".carry/ab-$v" && tar xJf "$f" -C ".carry/ab-$v" || { echo "ab-mirror: no $f: carry it" >&2; exit 1; }
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s:$LD_LIBRARY_PATH exec %s/coll_bench "$@"\n' "$PWD/.carry/ab-$v" \
      "$PWD/.carry/ab-$v" > ".carry/ab-$v/run" && chmod +x ".carry/ab-$v/run"
  done
  for n in 2 4; do
    pair "$rounds" "-n$n" .carry/ab-old/run .carry/ab-new/run --shared 1 --mirror --ranks "$n" --graph 10 \
      --min 16 --max 1M --factor 4 "$@"
    ab "A-n$n" "B-n$n" kiln-baked
    ab "A-n$n" "B-n$n" kiln-sym
    echo "== old: baked/sym, n$n" && baked_over_sym "$R/A-n${n}_1.csv"
    echo "== new: baked/sym, n$n" && baked_over_sym "$R/B-n${n}_1.csv"
  done
  pack
  exit
fi
[ "${1:-}" = "--channels" ] && { channels=(--channels "$2"); shift 2; }
mkdir -p .carry/ab && tar xJf .carry/ab.tar.xz -C .carry/ab || exit 1
for n in 2 4; do
  f="$R/mirror-graph10-n$n${channels[1]:+-c${channels[1]}}"
  LD_LIBRARY_PATH="$PWD/.carry/ab:$LD_LIBRARY_PATH" timeout 150 .carry/ab/coll_bench --shared 1 --mirror \
    --ranks "$n" --graph 10 --min 16 --max 1G --factor 4 "${channels[@]}" "$@" --csv "$f.csv" > "$f.txt" 2>&1
  echo "ab-mirror n$n rc=$?"
  [ -f "$f.csv" ] && baked_over_sym "$f.csv"
done

#!/usr/bin/env bash
# kiln's main job on a built-in default, from a fresh machine:
#  1. install what is missing and build (CUDA parts when nvcc and NCCL 2.28 are there);
#  2. synthesize an allreduce for one HGX-H100 node (8 GPUs on NVSwitch) from the hgx-h100
#     sketch for each of 1 KB, 1 MB and 1 GB (the synthesizer picks the form, protocol and
#     instances the simulator predicts fastest at that size: the one-flight form in memory steps
#     for small calls, a bandwidth form for large ones), verify each on the CPU and simulate it
#     against NCCL's ring and tree at its size;
#  3. where 2 or more GPUs are present: measure them (kiln profile), synthesize allreduce plans
#     for them (one for calls up to 256 KiB, one for larger calls, each chosen the same way), and
#     run them side by side with NCCL (bench/coll_bench), results checked; where one GPU
#     is: run the plans of step 2 with their 8 ranks sharing that GPU (no NCCL), every dtype and
#     op checked against the CPU (tests/gpu/test_gpu_plans's plan_files).
# Usage: scripts/quickstart.sh [BUILD_DIR]     (outputs under BUILD_DIR/quickstart)
# KILN_QUICKSTART_PREBUILT=1 takes BUILD_DIR as already built (no set-up, no build): for a
# machine that runs binaries built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
if [ "${KILN_QUICKSTART_PREBUILT:-0}" != 1 ]; then
  scripts/setup.sh
  # what the configuration found (GPU runtime on or off, plans baked), and all of it if it fails
  cfg=$(cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo 2>&1) || { printf '%s\n' "$cfg" >&2; exit 1; }
  printf '%s\n' "$cfg" | grep '^-- kiln' || true
  cmake --build "$build" -j"$(nproc)"
fi

kiln=$build/kiln
[ -x "$kiln" ] || { echo "quickstart: no kiln at $kiln (BUILD_DIR is taken from the repository root)" >&2; exit 1; }
out=$build/quickstart
mkdir -p "$out"
plans_cpu=
for size in 1K 1M 1G; do
  plan=$out/allreduce-hgx-h100-$size.xml
  echo "== synthesize: allreduce on hgx-h100 for $size (sketch plans/sketches/hgx-h100.xml)"
  "$kiln" synth --quiet --topo hgx-h100 --sketch plans/sketches/hgx-h100.xml --coll allreduce --bytes "$size" -o "$plan"
  echo "== verify"
  "$kiln" verify "$plan"
  echo "== simulate at $size (model of hgx-h100)"
  printf '%-5s kiln: ' "$size"; "$kiln" simulate --topo hgx-h100 --bytes "$size" "$plan" | sed 's/^[^:]*: //'
  printf '%-5s ring: ' "$size"; "$kiln" simulate --topo hgx-h100 --baseline ring --coll allreduce --bytes "$size" | sed 's/^[^:]*: //'
  printf '%-5s tree: ' "$size"; "$kiln" simulate --topo hgx-h100 --baseline tree --coll allreduce --bytes "$size" | sed 's/^[^:]*: //'
  plans_cpu=${plans_cpu:+$plans_cpu:}$plan
done

ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}   # never NVLink multicast
if [ "${ngpus:-0}" -eq 1 ] && [ -x "$build/tests/gpu/test_gpu_plans" ]; then
  echo "== one GPU: the plans above with their 8 ranks sharing it, checked against the CPU"
  KILN_TEST_PLAN_FILES="$plans_cpu" "$build/tests/gpu/test_gpu_plans" --jobs 1 --filter 'gpu_plans/plan_files'
  exit
fi
if [ "${ngpus:-0}" -lt 2 ] || [ ! -x "$build/bench/coll_bench" ]; then
  echo "== no GPU run: no GPU or no CUDA build here (the plans above are ready to bake)"
  exit 0
fi
n=$ngpus
[ "$n" -gt 8 ] && n=8
case $n in 2|4|8) ;; 3) n=2 ;; *) n=4 ;; esac   # sketches exist for 2, 4 and 8 GPUs
echo "== profile the local $n GPUs"
"$kiln" profile --gpus "$n" --uniform -o "$out/local.xml"
echo "== synthesize for them, then run kiln and NCCL side by side"
# Two plans from the sketch, each for the sizes it serves, synthesized at a size of its range:
# the synthesizer tries its forms in every protocol and in 1 to 64 instances (at most 64
# threadblocks a rank) and keeps what the simulator, on the costs kiln profile measured, predicts
# fastest there (the one-flight form in line protocols for small calls, more instances for large
# ones). Their ranges meet at 256 KiB; where loaded plans' ranges overlap, the registry takes the
# narrowest (kiln/registry.h).
sketch=plans/sketches/switch$n.xml
plans=$out/plans
rm -rf "$plans"
mkdir -p "$plans"
"$kiln" synth --quiet --topo "$out/local.xml" --sketch "$sketch" --coll allreduce --max-tbs 64 \
  --bytes 64K -o "$out/allreduce-local-small.xml"
"$kiln" bake -d "$plans" --max 256K "$out/allreduce-local-small.xml"
"$kiln" synth --quiet --topo "$out/local.xml" --sketch "$sketch" --coll allreduce --max-tbs 64 \
  --bytes 64M -o "$out/allreduce-local-large.xml"
"$kiln" bake -d "$plans" --min $(( 256 * 1024 + 1 )) "$out/allreduce-local-large.xml"
"$build/bench/coll_bench" --ranks "$n" --colls allreduce --plans "$plans" --graph 10 \
  --min 8 --max 64M --csv "$out/allreduce-local.csv"
echo "(CUDA graphs of 10 calls, the host's launches left out. interp: the plans synthesized above,"
echo " on kiln's interpreter (to compile them into kernels of their own: kiln bake them into"
echo " plans/baked, or configure with -DKILN_PLANS_DIR=$plans, and rebuild);"
echo " sym: kiln's symmetric-memory kernels, which kiln runs by default where they fit;"
echo " speed-up: NCCL's time over kiln's default)"

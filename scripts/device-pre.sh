# Sourced at the start of a device call (GPU machine, repository root): unpacks the build that
# scripts/device-pack.sh packed into .carry/pack.tar.xz (name it in the call's carry), sets the
# device environment (scripts/carry-libs.sh: NVLink multicast off, NCCL 2.28.9 first) and records
# the cards in $OUT/gpus.txt. B: the carried binaries.
set -u
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
tar xJf .carry/pack.tar.xz -C .carry || { echo "no .carry/pack.tar.xz: carry it" >&2; exit 1; }
. scripts/carry-libs.sh
device_env "$PWD/.carry/lib"
B=$PWD/.carry/bin
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader > "$OUT/gpus.txt" 2>&1

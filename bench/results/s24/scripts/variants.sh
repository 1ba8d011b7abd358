#!/bin/bash
# The patched kernels that runs 1, 2 and 4 timed alone (scripts/sym_probe.cu with the copy's folder
# first on the include path). Each variant is a copy of kernels/sym.cuh (and primitives.cuh, so that
# sym.cuh's quoted include finds the copy) of the named commit, patched as below; timing only where
# a variant changes results.
#   bench/results/s24/scripts/variants.sh OUTDIR
# Runs 1-2 patched 5ef21db's sym.cuh and built them with a sym_probe.cu that had PROBE_OP but still
# picked its kernel by form (kernel<float, FORM_LL | FORM_LL12 | FORM_LL128>, as 5ef21db's did; the
# committed probe takes kernelIndexOf, which 5ef21db lacks); run 4 patched 8a9dac3's.
# Run 2's sp_top was an intermediate state of 8a9dac3: the line bodies templated on the op as
# committed, with a branch at the body's start (OpSum for sum and avg, OpDyn for the rest) instead
# of a kernel per kind; it is not rebuilt here.
set -eu
out=${1:?usage: variants.sh OUTDIR}
here=$(cd "$(dirname "$0")/../../../.." && pwd)
mk() { # name commit
  mkdir -p "$out/$1"
  git -C "$here" show "$2:kernels/sym.cuh" > "$out/$1/sym.cuh"
  git -C "$here" show "$2:kernels/primitives.cuh" > "$out/$1/primitives.cuh"
}
# Run 1. nored: a peer's line stored instead of the reduction (the own operand kept live by a compare).
mk nored 5ef21db
sed -i 's|      D::store(c.out + e0, reduceLine<T, R, P>(a, c.op, v, mine), nv);|      D::store(c.out + e0, (reinterpret_cast<const uint32_t*>(\&mine)[0] == 0x7fc00001u) ? mine : v[me == 0 ? 1 : 0], nv);|' "$out/nored/sym.cuh"
# nomine: the own operand not loaded (zeros reduced).
mk nomine 5ef21db
sed -i 's|    const P mine = reduces ? D::load(c.in + own + e0, nv) : P{};|    const P mine = P{};|' "$out/nomine/sym.cuh"
# stat: OpSum in reduceLine instead of the run-time op (sum only).
mk stat 5ef21db
sed -i 's|    if (q < n) acc = opPack<T>(op, acc, q == me ? mine : v\[q\]);|    if (q < n) acc = opPack<T>(OpSum(), acc, q == me ? mine : v[q]);|' "$out/stat/sym.cuh"
# late: the own operand loaded after the peers' lines arrived.
mk late 5ef21db
python3 - "$out/late/sym.cuh" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
load = "    const P mine = reduces ? D::load(c.in + own + e0, nv) : P{};\n"
recv = "    if (!D::template recv<R>(a, c.seq, l, c.flag, spin, v)) return;\n"
assert s.count(load) == 1 and s.count(recv) == 1
s = s.replace(load, "").replace(recv, recv + load)
open(p, "w").write(s)
EOF
# Run 2. sel: OpDyn's switch replaced by every op computed and picked by selects (what OpSel is).
mk sel 5ef21db
python3 - "$out/sel/primitives.cuh" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
old = """    switch (op) {
      case OP_PROD: return OpProd()(a, b);
      case OP_MAX: return OpMax()(a, b);
      case OP_MIN: return OpMin()(a, b);
      default: return OpSum()(a, b);
    }"""
new = """    typedef typename Num<T>::W W;
    const W x = Num<T>::to(a), y = Num<T>::to(b);
    const W s = (W)(x + y), p = (W)(x * y), mx = x > y ? x : y, mn = x < y ? x : y;
    return Num<T>::from(op == OP_PROD ? p : op == OP_MAX ? mx : op == OP_MIN ? mn : s);"""
assert s.count(old) == 1
open(p, "w").write(s.replace(old, new))
EOF
# Run 4 (8a9dac3). noavg: no avg test after the reduction.
mk noavg 8a9dac3
sed -i 's|  return a.op == OP_AVG ? dividePack<T, P>(acc, n) : acc;|  return false ? dividePack<T, P>(acc, n) : acc;|' "$out/noavg/sym.cuh"
# alg: noavg, and bodyLL's algorithm fixed to the one-shot allreduce (its other algorithms' rows
# compute an allreduce: not counted).
mk alg 8a9dac3
sed -i 's|  return a.op == OP_AVG ? dividePack<T, P>(acc, n) : acc;|  return false ? dividePack<T, P>(acc, n) : acc;|' "$out/alg/sym.cuh"
python3 - "$out/alg/sym.cuh" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index("__device__ void bodyLL(const kilnSymArgs& a, Start& st) {")
j = s.index("\n}\n", i)
s = s[:i] + s[i:j].replace("a.algo", "KILN_SYM_AR_ONESHOT") + s[j:]
open(p, "w").write(s)
EOF
for vc in nored:5ef21db nomine:5ef21db stat:5ef21db late:5ef21db sel:5ef21db noavg:8a9dac3 alg:8a9dac3; do
  v=${vc%%:*} c=${vc#*:}
  if cmp -s "$out/$v/sym.cuh" <(git -C "$here" show "$c:kernels/sym.cuh") &&
     cmp -s "$out/$v/primitives.cuh" <(git -C "$here" show "$c:kernels/primitives.cuh"); then
    echo "variants.sh: $v is unpatched (its patch no longer matches $c)" >&2
    exit 1
  fi
done
echo "variants in $out: nored nomine stat late sel (5ef21db) noavg alg (8a9dac3)"

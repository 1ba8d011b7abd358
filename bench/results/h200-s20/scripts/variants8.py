#!/usr/bin/env python3
"""The patched copy of kernels/sym.cuh that run 3's probes are built from: KILN_PROBE_SENDONLY
returns after st.sent() in every line body (bodyLL, bodyLL2, bodyLL128, bodyLL128x2; session 19's
variants7.py missed bodyLL): the send side alone, outputs wrong by design (timing only). Build, in
the repository root:
  python3 bench/results/h200-s20/scripts/variants8.py /tmp/v8
  nvcc -O2 -arch=sm_90 -std=c++17 --expt-relaxed-constexpr [-DKILN_PROBE_SENDONLY=1] \
       -I/tmp/v8 -Ikernels -Iinclude -Ibench -Iscripts -o sp scripts/sym_probe.cu
"""
import os
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
s = open("kernels/sym.cuh").read()
n = s.count("  st.sent();\n  if (!go) return;\n")
assert n == 4, n
s = s.replace("  st.sent();\n  if (!go) return;\n", "  st.sent();\n  if (!go || KILN_PROBE_SENDONLY) return;\n")
s = s.replace('#include "sym_ce.h"\n',
              '#include "sym_ce.h"\n#ifndef KILN_PROBE_SENDONLY\n#define KILN_PROBE_SENDONLY 0\n#endif\n', 1)
open(os.path.join(out, "sym.cuh"), "w").write(s)

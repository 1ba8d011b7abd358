#!/usr/bin/env python3
"""The patched copy of kernels/sym.cuh that run 7's probes were built from (written against
b9a82af): KILN_PROBE_SENDONLY returns after st.sent() wherever the text below matches (it matched
bodyLL2, bodyLL128 and bodyLL128x2, not bodyLL, whose receive starts with a comment);
KILN_PROBE_FLAGONLY has only the flag lanes load while recvLines128 polls. Build, in the
repository root:
  python3 bench/results/h200-s19/scripts/variants7.py /tmp/v3
  nvcc -O2 -arch=sm_90 -std=c++17 --expt-relaxed-constexpr -DKILN_SYM_LL128_RELOAD=0 \
       [-DKILN_PROBE_SENDONLY=1 | -DKILN_PROBE_FLAGONLY=1] -I/tmp/v3 -Ikernels -Iinclude -Ibench \
       -Iscripts -o sp scripts/sym_probe.cu
"""
import os
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
s = open("kernels/sym.cuh").read()
s = s.replace("  st.sent();\n  if (!go) return;\n  Spin spin",
              "  st.sent();\n  if (!go || KILN_PROBE_SENDONLY) return;\n  Spin spin")
s = s.replace("      if (pend >> q & 1) ll128Load(p[q], &r0[q], &r1[q]);",
              "      if ((pend >> q & 1) && (!KILN_PROBE_FLAGONLY || (lane & 7) == 7)) ll128Load(p[q], &r0[q], &r1[q]);")
s = s.replace('#include "sym_ce.h"\n',
              '#include "sym_ce.h"\n#ifndef KILN_PROBE_SENDONLY\n#define KILN_PROBE_SENDONLY 0\n#endif\n'
              '#ifndef KILN_PROBE_FLAGONLY\n#define KILN_PROBE_FLAGONLY 0\n#endif\n', 1)
open(os.path.join(out, "sym.cuh"), "w").write(s)

#!/usr/bin/env python3
"""Runs 3-5 of s18: the variants of kernels/sym.cuh (and primitives.cuh) timed alone by
scripts/sym_probe.cu. Each is a patched copy of the headers in /tmp/s18/NAME, put first on the
include path of its own sym_probe build (/tmp/s18/sp_NAME); the device calls ran them from
.carry/probes.tar. Written against c8577fc (v0 = the headers as they were).
  run 3: v1slots v2bar v3spin v4abort v5all v6trig (sp_* named sym_probe_* there)
  run 4: vA vB vC vD vE v6          run 5: v6 v6D v6F
usage: variants.py NAME...   (from the repository root)"""
import os
import subprocess
import sys

END_TRIGGER = '    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");\n'
P = {
    # block 0 no longer stores the slots of the blocks the call does not have
    "slots": ("sym", "  if (blockIdx.x == 0)\n    for (int k = a.nblocks + threadIdx.x; k < MAXB; k += blockDim.x) "
              "((volatile uint64_t*)a.seq)[k] = last;\n", ""),
    # no barrier in LLStart::sent
    "bar": ("sym", "  __device__ __forceinline__ void sent() {\n    __syncthreads();\n",
            "  __device__ __forceinline__ void sent() {\n"),
    # no spin test in recvLines (no timeout: for reference only)
    "spin": ("sym", "    if (pend && spin.tick()) return false;\n", ""),
    # the abort flag not read at the start
    "abort": ("sym", "    return !*(volatile int*)a.abortFlag;\n  }\n  __device__ __forceinline__ void sent()",
              "    return true;\n  }\n  __device__ __forceinline__ void sent()"),
    # the trigger for the next kernel once the block's lines are out (what the library took)
    "trig": ("sym", "    storeSeq(a, seq + a.rounds - 1);\n  }\n};",
             "    storeSeq(a, seq + a.rounds - 1);\n" + END_TRIGGER + "  }\n};"),
    # the trigger once the thread's first line has arrived
    "trigrecv": ("sym", "    if (!recvLines<R>(a, seq, 0, l, flag, spin, v)) return;\n",
                 "    if (!recvLines<R>(a, seq, 0, l, flag, spin, v)) return;\n" + END_TRIGGER),
    # allreduce reuses the send loop's load of the thread's first line
    "mine1": ("sym", "  const bool toAll = a.algo == KILN_SYM_AR_ONESHOT || a.algo == KILN_SYM_AG;\n",
              "  const bool toAll = a.algo == KILN_SYM_AR_ONESHOT || a.algo == KILN_SYM_AG;\n  uint64_t first = 0;\n"),
    "mine2": ("sym", "      const uint64_t v = loadPart<T, uint64_t>(in + e0, nv);\n",
              "      const uint64_t v = loadPart<T, uint64_t>(in + e0, nv);\n      if (l == l0 + tid) first = v;\n"),
    "mine3": ("sym", "    const uint64_t mine = reduces ? loadPart<T, uint64_t>(in + own + e0, nv) : 0;\n",
              "    const uint64_t mine = !reduces ? 0 : (a.algo == KILN_SYM_AR_ONESHOT && l == l0 + tid) ? first "
              ": loadPart<T, uint64_t>(in + own + e0, nv);\n"),
    # the spin's slow path out of line
    "slow": ("prim", "  __device__ __forceinline__ bool tick() {\n    if ((++n & 1023) != 0) return false;\n"
             "    if (*(volatile int*)abortFlag) return true;",
             "  __device__ __forceinline__ bool tick() {\n    if ((++n & 1023) != 0) return false;\n    return slow();\n"
             "  }\n  __device__ __noinline__ bool slow() {\n    if (*(volatile int*)abortFlag) return true;"),
    # the spin's test once per 64 polls
    "loop64": ("sym", "    if (pend && spin.tick()) return false;\n  }",
               "    if (pend && spin.tick64()) return false;\n  }"),
    "tick64": ("prim", "  __device__ __forceinline__ bool tick() {\n",
               "  __device__ __forceinline__ bool tick64() {\n    n += 63;\n    return tick();\n  }\n"
               "  __device__ __forceinline__ bool tick() {\n"),
}
V = {
    "v0": [], "v1slots": ["slots"], "v2bar": ["bar"], "v3spin": ["spin"], "v4abort": ["abort"],
    "v5all": ["slots", "bar", "spin", "abort"], "v6trig": ["trig"], "v6": ["trig"],
    "vA": ["trigrecv"], "vB": ["mine1", "mine2", "mine3"], "vC": ["slow"], "vD": ["spin"],
    "vE": ["trigrecv", "mine1", "mine2", "mine3", "slow"], "v6D": ["trig", "spin"],
    # run 5's v6F also wrapped the polls in an inner loop of 64 (for (k = 0; k < 64 && pend; k++)),
    # its spin test after it; loop64 + tick64 give the same test count
    "v6F": ["trig", "loop64", "tick64"],
}

for name in sys.argv[1:] or V:
    text = {"sym": open("kernels/sym.cuh").read(), "prim": open("kernels/primitives.cuh").read()}
    for p in V[name]:
        f, a, b = P[p]
        if a not in text[f]:
            sys.exit(f"variants.py: {name}: patch {p} does not apply")
        text[f] = text[f].replace(a, b)
    d = f"/tmp/s18/{name}"
    os.makedirs(d, exist_ok=True)
    open(f"{d}/sym.cuh", "w").write(text["sym"])
    open(f"{d}/primitives.cuh", "w").write(text["prim"])
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-std=c++17", "--expt-relaxed-constexpr", f"-I{d}", "-Ikernels",
                    "-Iinclude", "-o", f"/tmp/s18/sp_{name}", "scripts/sym_probe.cu"], check=True)
    print(name, "->", f"/tmp/s18/sp_{name}")

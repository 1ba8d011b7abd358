/*
 * Where a small call's time goes when calls are replayed from a CUDA graph: the time per kernel of
 * a graph of K kernels on every GPU, each launched with programmatic stream serialization (PDL, as
 * host/sym.c launches the symmetric kernels) or without, and doing:
 *   empty  griddepcontrol.wait, then the trigger for the next kernel;
 *   seq    as kernels/sym.cuh does around its body: a sequence number read from device memory
 *          after the wait, stored back (+1) at the end;
 *   xchg   seq, and between, one LL line (16 bytes, the flag made from the sequence number) stored
 *          into every peer's inbox and every peer's line awaited (kiln's 16-byte allgather, bare);
 *   xchgio xchg with the line's 8 bytes loaded from an input buffer and the peers' stored into an
 *          output buffer, as a call does.
 * Build: the CUDA build's bench/pdl_probe, or nvcc -O2 -arch=sm_90 -o pdl_probe bench/probes/pdl_probe.cu
 * MODE ending in "pre" (emptypre, seqpre, xchgpre, xchgiopre): the kernel reads its arguments before the wait.
 * MODE ending in "early" (seqearly, xchgearly, xchgioearly, and "preearly"): the sequence number is
 * read before the wait; the kernel stores the next one and fences before its block's trigger, which
 * thread 0 alone gives after a barrier (so the next kernel, started at the trigger, finds it);
 * "earlychk": and after the wait thread 0 reads it again and flags a stale early read (STALE SEQ).
 * PROBE_W=w: w lines per peer (thread t moves line t % w of peer t / w; THREADS >= w * NGPUS);
 * PROBE_POLL=c: each thread keeps two loads of its line in flight, issued c cycles apart.
 * Run:   pdl_probe MODE NGPUS PDL [THREADS] [K] [ITERS]   (prints: mode n pdl threads us-per-kernel)
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_graph.h"

enum { MAXG = 8, MAXW = 256, EMPTY = 0, SEQ = 1, XCHG = 2, XCHGIO = 3 };

struct Args {
  unsigned long long* seq; /* this GPU's sequence number */
  uint4* inbox;            /* this GPU's lines: [2 halves][MAXG sources][MAXW lines] */
  uint4* peerInbox[MAXG];  /* every GPU's inbox as mapped here */
  int* err;                /* set when a wait gave up (1 s), 2 when a line held wrong data */
  const uint2* in;         /* xchgio: the 8 bytes this GPU sends (in[me]) */
  uint2* out;              /* xchgio: where the peers' 8 bytes go (out[p * MAXW + line]) */
  int n, me, mode;
  int w;    /* lines per peer (PROBE_W, default 1): thread t moves line t % w of peer t / w */
  int poll; /* PROBE_POLL: 0, one load at a time; > 0, two in flight that many cycles apart */
};

__device__ __forceinline__ uint64_t now() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* A wait's give-up test at its i-th poll: after 1 s, or when another thread gave up (err set). */
__device__ __forceinline__ bool gaveUp(unsigned i, uint64_t* t0, int* err) {
  if ((i & 1023) != 1023) return false;
  if (!*t0) {
    *t0 = now();
    return false;
  }
  if (now() - *t0 > 1000000000ull || *(volatile int*)err) {
    atomicExch(err, 1);
    return true;
  }
  return false;
}

template <bool PRE, int EARLY> __global__ void probe(Args a) {
  /* PRE: the arguments read before the wait (kernel parameters never change; a new launch's are
   * not in the constant cache yet). */
  if (PRE)
    asm volatile("" ::"l"(a.seq), "l"(a.inbox), "l"(a.peerInbox[0]), "l"(a.peerInbox[1]), "l"(a.err),
                 "l"(a.in), "l"(a.out), "r"(a.n), "r"(a.me), "r"(a.mode));
  unsigned long long s = 0;
  if (EARLY && a.mode != EMPTY) s = *(volatile unsigned long long*)a.seq + 1;
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (a.mode == EMPTY) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    return;
  }
  if (!EARLY) s = *(volatile unsigned long long*)a.seq + 1;
  if (EARLY == 2 && threadIdx.x == 0 && *(volatile unsigned long long*)a.seq + 1 != s) atomicExch(a.err, 3);
  const int p = (int)threadIdx.x / a.w, w = (int)threadIdx.x % a.w;
  if (a.mode >= XCHG && p < a.n && p != a.me) {
    const unsigned flag = (unsigned)s * 0x9E3779B1u | 1u;
    const uint2 v = a.mode == XCHGIO ? __ldcg(a.in + a.me) : make_uint2(1u, 2u);
    uint4* dst = a.peerInbox[p] + ((s & 1) * MAXG + a.me) * MAXW + w;
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(v.x), "r"(flag),
                 "r"(v.y), "r"(flag)
                 : "memory");
    const uint4* src = a.inbox + ((s & 1) * MAXG + p) * MAXW + w;
    unsigned d0, f0, d1, f1;
    uint64_t t0 = 0;
    if (a.poll > 0) {
      /* Two loads in flight, issued a.poll cycles apart: the line is seen up to half a round trip
       * sooner after it lands. */
      unsigned e0, g0, e1, g1;
      asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
                   : "l"(src));
      for (unsigned i = 0;; i++) {
        const long long c0 = clock64();
        while (clock64() - c0 < a.poll) {}
        asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(e0), "=r"(g0), "=r"(e1), "=r"(g1)
                     : "l"(src));
        if (f0 == flag && f1 == flag) break;
        const long long c1 = clock64();
        while (clock64() - c1 < a.poll) {}
        asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
                     : "l"(src));
        if (g0 == flag && g1 == flag) {
          d0 = e0;
          f0 = g0;
          d1 = e1;
          f1 = g1;
          break;
        }
        if (gaveUp(i, &t0, a.err)) break;
      }
    } else {
      for (unsigned i = 0;; i++) {
        asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
                     : "l"(src)
                     : "memory");
        if (f0 == flag && f1 == flag) break;
        if (gaveUp(i, &t0, a.err)) break;
      }
    }
    const unsigned w0 = a.mode == XCHGIO ? 100u + p : 1u, w1 = a.mode == XCHGIO ? 200u + p : 2u;
    if (f0 == flag && (d0 != w0 || d1 != w1)) atomicExch(a.err, 2);
    if (a.mode == XCHGIO) a.out[p * MAXW + w] = make_uint2(d0, d1);
  }
  if (EARLY) {
    __syncthreads();
    if (threadIdx.x == 0) {
      *(volatile unsigned long long*)a.seq = s;
      __threadfence();
      asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    }
    return;
  }
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) *(volatile unsigned long long*)a.seq = s;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: pdl_probe empty|seq|xchg|xchgio[pre][early|earlychk] NGPUS PDL(0|1) [THREADS=512] [K=20] "
            "[ITERS=200]\n");
    return 2;
  }
  const char* m = argv[1];
  const bool pre = strstr(m, "pre") != NULL; /* emptypre, seqpre, xchgpre, xchgpreearly */
  const int early = strstr(m, "earlychk") ? 2 : strstr(m, "early") ? 1 : 0;
  const int mode = !strncmp(m, "empty", 5)    ? EMPTY
                   : !strncmp(m, "seq", 3)    ? SEQ
                   : !strncmp(m, "xchgio", 6) ? XCHGIO
                   : !strncmp(m, "xchg", 4)   ? XCHG
                                              : -1;
  const int n = atoi(argv[2]), pdl = atoi(argv[3]);
  const int threads = argc > 4 ? atoi(argv[4]) : 512, K = argc > 5 ? atoi(argv[5]) : 20,
            iters = argc > 6 ? atoi(argv[6]) : 200;
  const int lw = getenv("PROBE_W") ? atoi(getenv("PROBE_W")) : 1,
            poll = getenv("PROBE_POLL") ? atoi(getenv("PROBE_POLL")) : 0;
  int ndev = 0;
  CUDA_CHECK(cudaGetDeviceCount(&ndev));
  if (mode < 0 || n < 1 || n > MAXG || n > ndev || threads < 32 || threads > 1024 || lw < 1 || lw > MAXW ||
      threads < lw * n || poll < 0 || K < 1 || iters < 1) {
    fprintf(stderr, "pdl_probe: bad arguments (mode %s, %d GPUs of %d, %d threads)\n", argv[1], n, ndev,
            threads);
    return 2;
  }
  Args args[MAXG];
  memset(args, 0, sizeof args);
  cudaStream_t st[MAXG];
  cudaGraphExec_t ex[MAXG];
  uint4* inbox[MAXG];
  int* err[MAXG];
  for (int g = 0; g < n; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    probePeers(g, n);
    CUDA_CHECK(cudaMalloc(&inbox[g], 2 * MAXG * MAXW * sizeof(uint4)));
    CUDA_CHECK(cudaMemset(inbox[g], 0, 2 * MAXG * MAXW * sizeof(uint4)));
    uint2 io[MAXG];
    for (int h = 0; h < MAXG; h++) io[h] = make_uint2(100u + g, 200u + g);
    CUDA_CHECK(cudaMalloc((void**)&args[g].in, sizeof io));
    CUDA_CHECK(cudaMemcpy((void*)args[g].in, io, sizeof io, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMalloc(&args[g].out, MAXG * MAXW * sizeof(uint2)));
    CUDA_CHECK(cudaMalloc(&err[g], sizeof(int)));
    CUDA_CHECK(cudaMemset(err[g], 0, sizeof(int)));
    CUDA_CHECK(cudaMalloc(&args[g].seq, sizeof(unsigned long long)));
    CUDA_CHECK(cudaMemset(args[g].seq, 0, sizeof(unsigned long long)));
    CUDA_CHECK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
  }
  for (int g = 0; g < n; g++) {
    args[g].inbox = inbox[g];
    for (int h = 0; h < n; h++) args[g].peerInbox[h] = inbox[h];
    args[g].err = err[g];
    args[g].n = n;
    args[g].me = g;
    args[g].mode = mode;
    args[g].w = lw;
    args[g].poll = poll;
    CUDA_CHECK(cudaSetDevice(g));
    void (*k)(Args) = pre ? (early == 2 ? probe<true, 2>
                             : early    ? probe<true, 1>
                                        : probe<true, 0>)
                          : (early == 2 ? probe<false, 2>
                             : early    ? probe<false, 1>
                                        : probe<false, 0>);
    ex[g] = probeGraph(st[g], K, k, args[g], 1, threads, pdl);
  }
  const float worst = probeTime(n, ex, st, iters);
  const int bad = probeErrors(n, err);
  printf("%s n=%d pdl=%d threads=%d K=%d w=%d poll=%d: %.3f us per kernel%s\n", argv[1], n, pdl, threads, K,
         lw, poll, worst * 1000.0 / ((double)iters * K),
         bad == 1   ? " (A WAIT GAVE UP)"
         : bad == 3 ? " (STALE SEQ)"
         : bad      ? " (WRONG DATA)"
                    : "");
  return bad ? 1 : 0;
}

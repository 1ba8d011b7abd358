/*
 * kiln's symmetric small-call kernel (kernels/sym.cuh, float, FORM_LL, FORM_LL128 or FORM_LL12: one-shot
 * allreduce, allgather, reducescatter, alltoall) alone, as bench/probes/pdl_probe.cu times its bare exchange: a graph of K
 * kernels per GPU, launched with programmatic stream serialization as host/sym.c launches them, the
 * arguments set as host/sym.c sets them for an LL call (blocks of KILN_SYM_BLOCK_BYTES' default,
 * 2 KiB of segment; threads = the block's lines rounded up to a warp). Prints the time per kernel.
 * With no NCCL, no library and one translation unit, a build of a patched copy of sym.cuh takes
 * seconds: put the copy's folder first on the include path to time a variant of the kernel.
 * Build: the CUDA build's bench/sym_probe, or (a variant: its folder first)
 *   nvcc -O2 -arch=sm_90 -std=c++17 --expt-relaxed-constexpr -Ikernels -Iinclude \
 *        -o sym_probe bench/probes/sym_probe.cu
 * Run:   sym_probe ar|ag|rs|a2a[128|12] BYTES NGPUS [K=20] [ITERS=200]
 *   a name ending in 128 (ar128, ...): the LL128 form (FORM_LL128) instead of LL lines; in 12
 *   (ar12, ...): LL12 lines (FORM_LL12).
 *   BYTES as coll_bench counts them (allreduce: the buffer; allgather: the output; reducescatter:
 *   the input; alltoall: either). After the timing one more call is checked against the CPU:
 *   every output element compared bitwise (allreduce and reducescatter reduced in rank order).
 *   PROBE_BLOCK_BYTES=B: bytes of segment per block (2048, host/sym.c's default; at most 64 blocks).
 *   PROBE_CHECK=N: then N more calls, one at a time, each on fresh random input and checked.
 *   PROBE_LPT=M: LL and LL12 blocks of a thread per M lines (rounded up to a warp), not one.
 *   PROBE_OP=sum|prod|max|min|avg: the reduction's op (sum; the check reduces in rank order, avg
 *   divides the sum by the rank count).
 *   KILN_SYM_PDL_TRIGGER=end: the trigger for the next kernel at the kernel's end (kilnSymArgs
 *   earlyTrigger), as the library takes it.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "sym.cuh"

#include "probe_graph.h"

enum { MAXG = 8 };

static uint64_t round_up(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: sym_probe ar|ag|rs|a2a[128|12] BYTES NGPUS [K=20] [ITERS=200]\n");
    return 2;
  }
  const char* an = argv[1];
  /* A name ending in 128: the LL128 form (FORM_LL128) instead of LL lines; in 12: LL12 lines. */
  const size_t anl = strlen(an);
  const bool l128 = anl > 3 && !strcmp(an + anl - 3, "128");
  const bool l12 = !l128 && anl > 2 && !strcmp(an + anl - 2, "12");
  char base[16];
  snprintf(base, sizeof base, "%.*s", (int)(l128 ? anl - 3 : l12 ? anl - 2 : anl), an);
  const int algo = !strcmp(base, "ar")    ? KILN_SYM_AR_ONESHOT
                   : !strcmp(base, "ag")  ? KILN_SYM_AG
                   : !strcmp(base, "rs")  ? KILN_SYM_RS
                   : !strcmp(base, "a2a") ? KILN_SYM_A2A
                                          : -1;
  const uint64_t bytes = strtoull(argv[2], NULL, 10);
  const char* opName = getenv("PROBE_OP") ? getenv("PROBE_OP") : "sum";
  int op = -1; /* by the library's names of its ops (kiln.h's table alone: the probe links no library) */
#define KILN_X_PARSE(e, v, name) \
  if (!strcmp(opName, name)) op = v;
  KILN_REDOPS(KILN_X_PARSE)
#undef KILN_X_PARSE
  if (op < 0) {
    fprintf(stderr, "sym_probe: PROBE_OP %s is not sum, prod, max, min or avg\n", opName);
    return 2;
  }
  const int n = atoi(argv[3]), K = argc > 4 ? atoi(argv[4]) : 20, iters = argc > 5 ? atoi(argv[5]) : 200;
  int ndev = 0;
  CUDA_CHECK(cudaGetDeviceCount(&ndev));
  if (algo < 0 || n < 2 || n > MAXG || n > ndev || K < 1 || iters < 1 || bytes < 4 * (uint64_t)n ||
      bytes > (1u << 20)) {
    fprintf(stderr, "sym_probe: bad arguments (%s, %llu bytes, %d GPUs of %d)\n", an,
            (unsigned long long)bytes, n, ndev);
    return 2;
  }
  /* Elements: per rank (count) and of the segment the blocks cut (seg), as host/sym.c sets them. */
  const uint64_t es = sizeof(float);
  const uint64_t count = algo == KILN_SYM_AR_ONESHOT ? bytes / es : bytes / es / (uint64_t)n;
  const uint64_t seg = count;
  const int ll = l128 ? KILN_SYM_LINES_LL128 : l12 ? KILN_SYM_LINES_LL12 : KILN_SYM_LINES_LL;
  const uint64_t region = round_up(kilnSymLineBytes(ll, seg, es), 256);
  const uint64_t half = region * (uint64_t)n;
  const uint64_t bb = getenv("PROBE_BLOCK_BYTES") ? strtoull(getenv("PROBE_BLOCK_BYTES"), NULL, 10) : 2048;
  if (bb < 16) {
    fprintf(stderr, "sym_probe: PROBE_BLOCK_BYTES must be at least 16\n");
    return 2;
  }
  uint64_t nb = (seg * es + bb - 1) / bb;
  if (nb > 64) nb = 64;
  if (nb < 1) nb = 1;
  /* Threads as host/sym.c gives them (the configured count: 512). */
  kilnSymArgs shape;
  memset(&shape, 0, sizeof shape);
  shape.seg = seg;
  shape.nblocks = (int)nb;
  shape.ll = ll;
  /* PROBE_LPT=M: a thread per M lines instead of one (for a kernel whose LL bodies take several
   * lines a thread; the committed ones take them one after the other). */
  const int lpt = getenv("PROBE_LPT") ? atoi(getenv("PROBE_LPT")) : 1;
  if (lpt < 1 || lpt > 64) {
    fprintf(stderr, "sym_probe: PROBE_LPT must be 1-64\n");
    return 2;
  }
  int threads = kilnSymLineThreads(&shape, es, 1 << 20);
  if (ll != KILN_SYM_LINES_LL128) threads = ((threads + lpt - 1) / lpt + 31) / 32 * 32;
  if (threads > 512) threads = 512;
  const uint64_t inElems = algo == KILN_SYM_AR_ONESHOT || algo == KILN_SYM_AG ? count : count * (uint64_t)n;
  const uint64_t outElems = algo == KILN_SYM_AR_ONESHOT || algo == KILN_SYM_RS ? count : count * (uint64_t)n;

  char* stage[MAXG];
  float* in[MAXG];
  float* out[MAXG];
  float* hin[MAXG];
  uint64_t* seqs[MAXG];
  int *abortFlag[MAXG], *errWord[MAXG];
  cudaStream_t st[MAXG];
  cudaGraphExec_t ex[MAXG];
  kilnSymArgs args[MAXG];
  /* The kernel host/sym.c launches for such a call (the form and the kind of op). */
  void (*kfn)(kilnSymArgs) = NULL;
  srand(1234);
  const char* trig = getenv("KILN_SYM_PDL_TRIGGER"); /* as host/sym.c reads it */
  for (int g = 0; g < n; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    probePeers(g, n);
    CUDA_CHECK(cudaMalloc(&stage[g], 2 * half));
    CUDA_CHECK(cudaMemset(stage[g], 0, 2 * half));
    CUDA_CHECK(cudaMalloc(&in[g], inElems * es));
    CUDA_CHECK(cudaMalloc(&out[g], outElems * es));
    hin[g] = (float*)malloc(inElems * es);
    for (uint64_t i = 0; i < inElems; i++) hin[g][i] = (float)(rand() % 2001 - 1000) / 64.0f;
    CUDA_CHECK(cudaMemcpy(in[g], hin[g], inElems * es, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMalloc(&seqs[g], KILN_SYM_MAX_BLOCKS * sizeof(uint64_t)));
    CUDA_CHECK(cudaMemset(seqs[g], 0, KILN_SYM_MAX_BLOCKS * sizeof(uint64_t)));
    CUDA_CHECK(cudaMalloc(&abortFlag[g], sizeof(int)));
    CUDA_CHECK(cudaMemset(abortFlag[g], 0, sizeof(int)));
    CUDA_CHECK(cudaMalloc(&errWord[g], sizeof(int)));
    CUDA_CHECK(cudaMemset(errWord[g], 0, sizeof(int)));
    CUDA_CHECK(cudaStreamCreateWithFlags(&st[g], cudaStreamNonBlocking));
  }
  for (int g = 0; g < n; g++) {
    kilnSymArgs a;
    memset(&a, 0, sizeof a);
    a.in = (const char*)in[g];
    a.out = (char*)out[g];
    for (int p = 0; p < n; p++) a.stage[p] = stage[p];
    a.seq = seqs[g];
    a.abortFlag = abortFlag[g];
    a.errWord = errWord[g];
    a.timeoutNs = 5000000000ull;
    a.count = count;
    a.seg = seg;
    a.total = seg;
    a.region = region;
    a.halfBytes = half;
    a.algo = algo;
    a.op = op;
    a.nranks = n;
    a.rank = g;
    a.nblocks = (int)nb;
    a.ll = ll;
    a.rounds = 1;
    a.earlyTrigger = !(trig && strcmp(trig, "end") == 0);
    CUDA_CHECK(cudaSetDevice(g));
    kfn = (void (*)(kilnSymArgs))kiln::sym::kernelOf<float>(kiln::sym::kernelIndexOf(a));
    args[g] = a;
    ex[g] = probeGraph(st[g], K, kfn, a, (unsigned)nb, threads, 1);
  }
  const float worst = probeTime(n, ex, st, iters);
  int err = probeErrors(n, errWord);
  /* Every output against the CPU (the last call of the last graph; then, with PROBE_CHECK=N, N
   * more calls one at a time, each on fresh input: a line read before its data arrived shows as
   * the call before's). */
  uint64_t bad = 0;
  float* got = (float*)malloc(outElems * es);
  auto check = [&]() {
    for (int g = 0; g < n; g++) {
      CUDA_CHECK(cudaSetDevice(g));
      CUDA_CHECK(cudaMemcpy(got, out[g], outElems * es, cudaMemcpyDeviceToHost));
      for (uint64_t i = 0; i < outElems; i++) {
        float want;
        if (algo == KILN_SYM_AR_ONESHOT || algo == KILN_SYM_RS) {
          const uint64_t j = algo == KILN_SYM_RS ? (uint64_t)g * count + i : i;
          want = hin[0][j];
          for (int p = 1; p < n; p++) {
            const float x = hin[p][j];
            want = op == kiln::OP_PROD  ? want * x
                   : op == kiln::OP_MAX ? (want > x ? want : x)
                   : op == kiln::OP_MIN ? (want < x ? want : x)
                                        : want + x;
          }
          if (op == kiln::OP_AVG) want /= (float)n;
        } else if (algo == KILN_SYM_AG) {
          want = hin[i / count][i % count];
        } else {
          want = hin[i / count][(uint64_t)g * count + i % count];
        }
        if (memcmp(&want, &got[i], sizeof want) != 0) bad++;
      }
    }
  };
  check();
  const int rounds = getenv("PROBE_CHECK") ? atoi(getenv("PROBE_CHECK")) : 0;
  for (int r = 0; r < rounds && !bad && !err; r++) {
    for (int g = 0; g < n; g++) {
      for (uint64_t i = 0; i < inElems; i++) hin[g][i] = (float)(rand() % 2001 - 1000) / 64.0f;
      CUDA_CHECK(cudaSetDevice(g));
      CUDA_CHECK(cudaMemcpy(in[g], hin[g], inElems * es, cudaMemcpyHostToDevice));
    }
    for (int g = 0; g < n; g++) {
      CUDA_CHECK(cudaSetDevice(g));
      void* kargs[] = {&args[g]};
      CUDA_CHECK(
          cudaLaunchKernel((const void*)kfn, dim3((unsigned)nb), dim3((unsigned)threads), kargs, 0, st[g]));
    }
    for (int g = 0; g < n; g++) {
      CUDA_CHECK(cudaSetDevice(g));
      CUDA_CHECK(cudaStreamSynchronize(st[g]));
    }
    err |= probeErrors(n, errWord);
    check();
    if (bad) printf("round %d of PROBE_CHECK: wrong elements\n", r);
  }
  printf("%s %s %llu B n=%d blocks=%d threads=%d K=%d: %.3f us per kernel%s", an, opName,
         (unsigned long long)bytes, n, (int)nb, threads, K, worst * 1000.0 / ((double)iters * K),
         err ? " (DEVICE ERROR)" : "");
  if (bad) printf(" (%llu WRONG ELEMENTS)", (unsigned long long)bad);
  printf("\n");
  return err || bad ? 1 : 0;
}

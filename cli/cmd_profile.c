/*
 * kiln profile: measures α (µs) and β (µs/MB) of every ordered GPU pair with kiln's own
 * primitives and writes a topology XML that kiln synth accepts.
 *
 * Per pair (i -> j), as the TACCL paper's profiler does (section 5.1): a plan that sends n chunks
 * one after another (n steps of one chunk) and one that sends the same n chunks at once (one step
 * of n chunks) in one threadblock. The difference of their times is (n-1)·α. β is the link's: the
 * at-once plan in PROF_LINK_TBS threadblocks (fewer on GPUs of fewer SMs) on channels of their own
 * (as a plan lowered in that many instances moves), timed at two sizes. One threadblock moves only
 * a fraction of a link (~40 GB/s on an H200's NVLink, ~8x less than 32 move): a β of one
 * threadblock would make the topology's link 8x slower than the built-in hgx-h100's, and the
 * simulator's predictions of plans in many instances 6x too slow (2x H200, 2026-11-29).
 * The table prints one threadblock's rate too.
 * Kernel launch costs cancel in the differences.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "kiln/topology.h"

#define PROF_LINK_TBS 32 /* threadblocks of the link's measurement (a plan's instances: 16-32 fill a link) */

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln profile [--gpus N] [--reps R] [--uniform] [-o OUT.xml]\n"
          "Measures alpha (us) and beta (us/MB) of every ordered pair of the first N GPUs (default:\n"
          "all, at least 2) with kiln's primitives, prints a table and writes a topology XML\n"
          "(to OUT.xml, or stdout) that kiln synth accepts. --uniform writes the mean alpha and\n"
          "beta on every link (GPUs behind one switch: sketches with symmetry need equal costs).\n"
          "alpha: one step's latency (one threadblock); beta: the link's, with %d threadblocks\n"
          "(at most the GPU's SMs) sending at once, as a plan lowered in that many\n"
          "instances does (one threadblock moves far less: its rate is printed too; kiln synth\n"
          "--instances).\n"
          "Needs the GPU runtime and NCCL.\n",
          PROF_LINK_TBS);
}

#ifndef KILN_HAVE_CUDA
int cmd_profile(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { help(stdout); return 0; }
  fprintf(stderr, "kiln profile: this kiln was built without the GPU runtime (CUDA, NCCL)\n");
  return 1;
}
#else
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <time.h>

#include "kiln/runtime.h"

#define PROF_MAX 16
#define PROF_CHUNKS 8

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* A plan on n ranks where only src sends to dst: ntbs threadblock pairs (channels 0..ntbs-1), each
 * PROF_CHUNKS chunks of its own, in PROF_CHUNKS steps of a chunk (atOnce false) or one step. */
static kilnResult_t pair_plan(int n, int src, int dst, bool atOnce, int ntbs, kilnPlan** out) {
  kilnPlan* p = NULL;
  kilnResult_t r = kilnPlanCreate(atOnce ? "profile-once" : "profile-seq", KILN_COLL_ALLREDUCE, n, &p);
  if (r != KILN_SUCCESS) return r;
  for (int g = 0; g < n; g++) p->gpus[g].i_chunks = p->gpus[g].o_chunks = PROF_CHUNKS * ntbs;
  p->nchunksperloop = PROF_CHUNKS * ntbs;
  p->nchannels = ntbs;
  const int steps = atOnce ? 1 : PROF_CHUNKS, cnt = atOnce ? PROF_CHUNKS : 1;
  for (int k = 0; k < ntbs; k++) {
    if (!kilnPlanAddThreadblock(p, src, dst, -1, k) || !kilnPlanAddThreadblock(p, dst, -1, src, k)) {
      kilnPlanFree(p);
      return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
    }
    for (int c = 0; c < steps; c++) {
      const int off = k * PROF_CHUNKS + c * cnt;
      if (!kilnPlanAddStep(&p->gpus[src].tbs[k], KILN_STEP_SEND, KILN_BUF_INPUT, off, KILN_BUF_INPUT, off, cnt) ||
          !kilnPlanAddStep(&p->gpus[dst].tbs[k], KILN_STEP_RECV, KILN_BUF_OUTPUT, off, KILN_BUF_OUTPUT, off, cnt)) {
        kilnPlanFree(p);
        return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      }
    }
  }
  *out = p;
  return KILN_SUCCESS;
}

typedef struct prof {
  int n;
  kilnComm_t kc[PROF_MAX];
  cudaStream_t st[PROF_MAX];
  void* buf[PROF_MAX][2];
} prof;

/* Mean µs of one call of the loaded plan on ranks a and b (count floats). */
static double time_pair(prof* P, kilnExec_t* ex, int a, int b, size_t count, int reps) {
  const int rk[2] = {a, b};
  double t0 = 0;
  for (int it = -3; it < reps; it++) {
    if (it == 0) {
      for (int q = 0; q < 2; q++) { cudaSetDevice(rk[q]); cudaStreamSynchronize(P->st[rk[q]]); }
      t0 = now_us();
    }
    for (int q = 0; q < 2; q++)
      kilnRun(ex[rk[q]], P->buf[rk[q]][0], P->buf[rk[q]][1], count, KILN_FLOAT32, KILN_SUM, P->st[rk[q]]);
  }
  for (int q = 0; q < 2; q++) { cudaSetDevice(rk[q]); cudaStreamSynchronize(P->st[rk[q]]); }
  return (now_us() - t0) / reps;
}

static int load_all(prof* P, const kilnPlan* p, kilnExec_t* ex) {
  for (int r = 0; r < P->n; r++)
    if (kilnPlanLoad(P->kc[r], p, &ex[r]) != KILN_SUCCESS) {
      fprintf(stderr, "kiln profile: %s\n", kilnLastError());
      return 1;
    }
  return 0;
}

static void free_all(prof* P, kilnExec_t* ex) {
  for (int r = 0; r < P->n; r++) kilnExecFree(ex[r]);
}

int cmd_profile(int argc, char** argv) {
  int ngpus = 0, asked = 0, reps = 200;
  bool uniform = false;
  const char* out = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { help(stdout); return 0; }
    if (!strcmp(argv[i], "--gpus") && i + 1 < argc && cliParseInt(argv[i + 1], &ngpus)) { i++; continue; }
    if (!strcmp(argv[i], "--reps") && i + 1 < argc && cliParseInt(argv[i + 1], &reps)) { i++; continue; }
    if (!strcmp(argv[i], "-o") && i + 1 < argc) {
      if (!cliOnce("profile", &out, "-o", argv[++i])) return 2;
      continue;
    }
    if (!strcmp(argv[i], "--uniform")) { uniform = true; continue; }
    fprintf(stderr, "kiln profile: unexpected or bad argument '%s'\n", argv[i]);
    help(stderr);
    return 2;
  }
  if (reps < 1 || reps > 100000) {
    fprintf(stderr, "kiln profile: --reps %d: wants 1..100000 (timed calls per pair and size)\n", reps);
    return 2;
  }
  if (ngpus == 1 || ngpus > PROF_MAX) {
    fprintf(stderr, "kiln profile: --gpus %d: measures 2..%d GPUs (0 or no --gpus: every visible one)\n", ngpus,
            PROF_MAX);
    return 2;
  }
  if (!cliOutputWritable("profile", out)) return 2;
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
  asked = ngpus;
  if (ngpus == 0) ngpus = visible > PROF_MAX ? PROF_MAX : visible;
  if (ngpus < 2 || ngpus > visible || ngpus > PROF_MAX) {
    if (asked)
      fprintf(stderr, "kiln profile: --gpus %d: measures 2..%d GPUs, %d visible here\n", asked, PROF_MAX, visible);
    else
      fprintf(stderr, "kiln profile: measures 2..%d GPUs, %d visible here\n", PROF_MAX, visible);
    return 1;
  }
  prof P;
  memset(&P, 0, sizeof P);
  P.n = ngpus;
  ncclComm_t nc[PROF_MAX];
  int devs[PROF_MAX];
  for (int i = 0; i < ngpus; i++) devs[i] = i;
  if (ncclCommInitAll(nc, ngpus, devs) != ncclSuccess) {
    fprintf(stderr, "kiln profile: ncclCommInitAll failed\n");
    return 1;
  }
  /* The runtime's default FIFOs (what plans run on): 32 channels a peer, enough for the link's
   * PROF_LINK_TBS threadblocks. */
  kilnCommConfig cfg = KILN_COMM_CONFIG_INITIALIZER;
  if (kilnCommCreateAll(ngpus, nc, &cfg, P.kc) != KILN_SUCCESS) {
    fprintf(stderr, "kiln profile: %s\n", kilnLastError());
    return 1;
  }
  /* One threadblock: 32 KB (α) and 8 MB (its β); the link: 16 and 64 MB over linkTbs
   * threadblocks: PROF_LINK_TBS (within the default FIFOs' 32 channels), at most the smallest
   * GPU's SMs (kilnPlanLoad refuses a plan of more threadblocks a rank than SMs). */
  int linkTbs = PROF_LINK_TBS;
  for (int r = 0; r < ngpus; r++) {
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, r) == cudaSuccess && sms > 0 && sms < linkTbs)
      linkTbs = sms;
  }
  const size_t smallElems = PROF_CHUNKS * 1024, bigElems = PROF_CHUNKS * (256u << 10);
  const size_t linkSmallElems = (size_t)4 << 20, linkBigElems = (size_t)16 << 20, bufElems = linkBigElems;
  for (int r = 0; r < ngpus; r++) {
    cudaSetDevice(r);
    cudaStreamCreateWithFlags(&P.st[r], cudaStreamNonBlocking);
    cudaMalloc(&P.buf[r][0], bufElems * 4);
    cudaMalloc(&P.buf[r][1], bufElems * 4);
    cudaMemset(P.buf[r][0], 1, bufElems * 4);
  }
  double alpha[PROF_MAX][PROF_MAX], beta[PROF_MAX][PROF_MAX];
  int rc = 0;
  printf("beta over %d threadblocks a pair\n%-6s %10s %12s %10s %14s\n", linkTbs, "pair", "alpha_us", "beta_us/MB",
         "GB/s", "1 block GB/s");
  for (int a = 0; a < ngpus && rc == 0; a++)
    for (int b = 0; b < ngpus && rc == 0; b++) {
      if (a == b) continue;
      kilnPlan *seq = NULL, *once = NULL, *link = NULL;
      kilnExec_t xs[PROF_MAX] = {0}, xo[PROF_MAX] = {0}, xl[PROF_MAX] = {0};
      if (pair_plan(ngpus, a, b, false, 1, &seq) != KILN_SUCCESS || pair_plan(ngpus, a, b, true, 1, &once) != KILN_SUCCESS ||
          pair_plan(ngpus, a, b, true, linkTbs, &link) != KILN_SUCCESS) {
        fprintf(stderr, "kiln profile: %s\n", kilnLastError());
        rc = 1;
      } else if (load_all(&P, seq, xs) || load_all(&P, once, xo) || load_all(&P, link, xl)) {
        rc = 1; /* load_all said why */
      } else {
        const double tSeq = time_pair(&P, xs, a, b, smallElems, reps);
        const double tOnce = time_pair(&P, xo, a, b, smallElems, reps);
        const double tBig = time_pair(&P, xo, a, b, bigElems, reps / 10 + 1);
        const double tLink0 = time_pair(&P, xl, a, b, linkSmallElems, reps / 10 + 1);
        const double tLink1 = time_pair(&P, xl, a, b, linkBigElems, reps / 10 + 1);
        const double al = (tSeq - tOnce) / (PROF_CHUNKS - 1);
        const double be1 = (tBig - tOnce) / ((bigElems - smallElems) * 4 / 1e6);
        const double be = (tLink1 - tLink0) / ((linkBigElems - linkSmallElems) * 4 / 1e6);
        alpha[a][b] = al > 0 ? al : 0;
        beta[a][b] = be > 0 ? be : 0;
        printf("%d->%d %10.3f %12.3f %10.1f %14.1f\n", a, b, alpha[a][b], beta[a][b],
               beta[a][b] > 0 ? 1e6 / beta[a][b] / 1e3 : 0, be1 > 0 ? 1e6 / be1 / 1e3 : 0);
      }
      free_all(&P, xs);
      free_all(&P, xo);
      free_all(&P, xl);
      kilnPlanFree(seq);
      kilnPlanFree(once);
      kilnPlanFree(link);
    }
  for (int r = 0; r < ngpus; r++) {
    kilnResult_t ae = KILN_SUCCESS;
    kilnCommGetAsyncError(P.kc[r], &ae);
    if (ae != KILN_SUCCESS) {
      fprintf(stderr, "kiln profile: rank %d: %s\n", r, kilnResultString(ae));
      rc = 1;
    }
  }
  if (rc == 0 && uniform) {
    double sa = 0, sb = 0;
    for (int a = 0; a < ngpus; a++)
      for (int b = 0; b < ngpus; b++)
        if (a != b) { sa += alpha[a][b]; sb += beta[a][b]; }
    const double m = (double)ngpus * (ngpus - 1);
    for (int a = 0; a < ngpus; a++)
      for (int b = 0; b < ngpus; b++) { alpha[a][b] = sa / m; beta[a][b] = sb / m; }
    printf("uniform: alpha %.3f us, beta %.3f us/MB\n", sa / m, sb / m);
  }
  if (rc == 0) {
    size_t cap = 256 + (size_t)ngpus * ngpus * 128;
    char* xml = malloc(cap);
    size_t len = (size_t)snprintf(xml, cap, "<topology name=\"profiled\" nodes=\"1\" gpus_per_node=\"%d\">\n  <node>\n", ngpus);
    for (int a = 0; a < ngpus; a++)
      for (int b = 0; b < ngpus; b++)
        if (a != b)
          len += (size_t)snprintf(xml + len, cap - len,
                                  "    <link src=\"%d\" dst=\"%d\" alpha=\"%.3f\" beta=\"%.4f\" mult=\"1\" kind=\"nvlink\"/>\n",
                                  a, b, alpha[a][b], beta[a][b]);
    len += (size_t)snprintf(xml + len, cap - len, "  </node>\n</topology>\n");
    kilnTopology* t = NULL;
    if (kilnTopologyReadMemory(xml, len, "profile", &t) != KILN_SUCCESS ||
        kilnTopologyWriteFile(t, out ? out : "-") != KILN_SUCCESS) {
      fprintf(stderr, "kiln profile: %s\n", kilnLastError());
      rc = 1;
    }
    kilnTopologyFree(t);
    free(xml);
  }
  for (int r = 0; r < ngpus; r++) {
    cudaSetDevice(r);
    cudaFree(P.buf[r][0]);
    cudaFree(P.buf[r][1]);
    cudaStreamDestroy(P.st[r]);
  }
  kilnCommDestroyAll(ngpus, P.kc);
  for (int r = 0; r < ngpus; r++) ncclCommDestroy(nc[r]);
  return rc;
}
#endif

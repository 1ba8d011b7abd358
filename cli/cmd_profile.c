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
 *
 * The machine's structure comes from the driver and sysfs (solver/machine.h): NVLinks between the
 * GPUs or to an NVSwitch (NVML), the NICs and the GPUs each is nearest to (PCI paths). The topology
 * written is one node of the measured GPUs (a switch where they share an NVSwitch, links
 * elsewhere), replicated --nodes times, the NICs with their GPUs, and between nodes the α and β
 * given by --nic-alpha and --nic-beta. One GPU: its structure only, nothing to measure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../solver/machine.h"
#include "cli_util.h"
#include "commands.h"
#include "kiln/topology.h"

#define PROF_LINK_TBS 32 /* threadblocks of the link's measurement (a plan's instances: 16-32 fill a link) */
#define PROF_MAX KILN_MACHINE_MAX_GPUS

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln profile [--gpus N] [--reps R] [--uniform] [--nodes M [--nic-alpha A --nic-beta B]]\n"
          "                    [-o OUT.xml]\n"
          "Describes this machine and writes it as a topology XML (to OUT.xml, or stdout) that kiln\n"
          "synth accepts: the first N GPUs (default: all), the NVLinks between them or to an NVSwitch\n"
          "(NVML), the NICs and the GPUs each is nearest to (PCI paths), and alpha (us) and beta\n"
          "(us/MB) of every ordered pair of GPUs measured with kiln's primitives (printed as a table).\n"
          "alpha: one step's latency (one threadblock); beta: the link's, with %d threadblocks\n"
          "(at most the GPU's SMs) sending at once, as a plan lowered in that many\n"
          "instances does (one threadblock moves far less: its rate is printed too; kiln synth\n"
          "--instances). One GPU: its structure only.\n"
          "  --uniform      the mean alpha and beta on every link (GPUs behind one switch: sketches\n"
          "                 with symmetry need equal costs)\n"
          "  --nodes M      M nodes like this one (default 1); their NIC links cost --nic-alpha A\n"
          "                 (us) and --nic-beta B (us/MB), as measured between two nodes (e.g. NCCL's\n"
          "                 sendrecv between them) or given by the network's rate (400 Gb/s: 20)\n"
          "Needs a GPU, the GPU runtime and NCCL; exits 1 saying why where one is missing.\n",
          PROF_LINK_TBS);
}

/* The options; 0 to go on, else the exit code. */
typedef struct profOpts {
  int ngpus, reps, nodes;
  bool uniform;
  double nicAlpha, nicBeta;
  const char* out;
} profOpts;

static bool parseUs(const char* s, double* out) {
  char* end = NULL;
  *out = s ? strtod(s, &end) : -1;
  return s && end && end != s && !*end && *out >= 0 && *out < 1e9;
}

static int parseArgs(int argc, char** argv, profOpts* o) {
  *o = (profOpts){0, 200, 1, false, -1, -1, NULL};
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--gpus") && v && cliParseInt(v, &o->ngpus) && o->ngpus >= 1) { i++; continue; }
    if (!strcmp(a, "--reps") && v && cliParseInt(v, &o->reps)) { i++; continue; }
    if (!strcmp(a, "--nodes") && v && cliParseInt(v, &o->nodes) && o->nodes >= 1 && o->nodes <= KILN_MAX_RANKS) {
      i++;
      continue;
    }
    if (!strcmp(a, "--nic-alpha") && parseUs(v, &o->nicAlpha)) { i++; continue; }
    if (!strcmp(a, "--nic-beta") && parseUs(v, &o->nicBeta)) { i++; continue; }
    if (!strcmp(a, "-o") && v) {
      if (!cliOnce("profile", &o->out, "-o", argv[++i])) return 2;
      continue;
    }
    if (!strcmp(a, "--uniform")) { o->uniform = true; continue; }
    fprintf(stderr, "kiln profile: unexpected or bad argument '%s'%s\n", a, v && a[0] == '-' ? " (or its value)" : "");
    help(stderr);
    return 2;
  }
  if (o->reps < 1 || o->reps > 100000) {
    fprintf(stderr, "kiln profile: --reps %d: wants 1..100000 (timed calls per pair and size)\n", o->reps);
    return 2;
  }
  if (o->ngpus > PROF_MAX) {
    fprintf(stderr, "kiln profile: --gpus %d: describes 1..%d GPUs\n", o->ngpus, PROF_MAX);
    return 2;
  }
  if (o->nodes > 1 && (o->nicAlpha < 0 || o->nicBeta < 0)) {
    fprintf(stderr, "kiln profile: --nodes %d: the links between nodes need --nic-alpha and --nic-beta (us, us/MB), "
            "measured between two nodes (NCCL's sendrecv) or taken from the network's rate\n", o->nodes);
    return 2;
  }
  if (o->nodes == 1 && (o->nicAlpha >= 0 || o->nicBeta >= 0)) {
    fprintf(stderr, "kiln profile: --nic-alpha and --nic-beta describe the links between nodes: give --nodes too\n");
    return 2;
  }
  return 0;
}

#ifndef KILN_HAVE_CUDA
int cmd_profile(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { help(stdout); return 0; }
  profOpts o;
  const int rc = parseArgs(argc, argv, &o);
  if (rc) return rc;
  fprintf(stderr, "kiln profile: this kiln was built without the GPU runtime (CUDA, NCCL)\n");
  return 1;
}
#else
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <time.h>

#include "kiln/runtime.h"

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

/* Measures alpha and beta ([a * ngpus + b]) of every ordered pair of the first ngpus GPUs, printing
 * a table; 0, or the exit code after saying why. */
static int measure(int ngpus, int reps, double* alpha, double* beta) {
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
  cfg.nodes = 1; /* the GPUs of this machine, whatever KILN_EMULATE_NODES says */
  if (kilnCommCreateAll(ngpus, nc, &cfg, P.kc) != KILN_SUCCESS) {
    fprintf(stderr, "kiln profile: %s\n", kilnLastError());
    for (int r = 0; r < ngpus; r++) ncclCommDestroy(nc[r]);
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
        alpha[a * ngpus + b] = al > 0 ? al : 0;
        beta[a * ngpus + b] = be > 0 ? be : 0;
        printf("%d->%d %10.3f %12.3f %10.1f %14.1f\n", a, b, alpha[a * ngpus + b], beta[a * ngpus + b],
               beta[a * ngpus + b] > 0 ? 1e6 / beta[a * ngpus + b] / 1e3 : 0, be1 > 0 ? 1e6 / be1 / 1e3 : 0);
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

int cmd_profile(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { help(stdout); return 0; }
  profOpts o;
  int rc = parseArgs(argc, argv, &o);
  if (rc) return rc;
  if (!cliOutputWritable("profile", o.out)) return 2;
  int visible = 0;
  const cudaError_t ce = cudaGetDeviceCount(&visible);
  if (ce != cudaSuccess || visible < 1) {
    fprintf(stderr, "kiln profile: no GPU here (%s): it describes and measures GPUs\n",
            ce != cudaSuccess ? cudaGetErrorString(ce) : "none visible");
    return 1;
  }
  if (o.ngpus > visible) {
    fprintf(stderr, "kiln profile: --gpus %d: %d visible here\n", o.ngpus, visible);
    return 1;
  }
  const int ngpus = o.ngpus ? o.ngpus : visible > PROF_MAX ? PROF_MAX : visible;
  /* The structure: bus ids from CUDA, PCI paths and NICs from sysfs, NVLinks from NVML. */
  static kilnMachine m;
  memset(&m, 0, sizeof m);
  m.ngpus = ngpus;
  for (int g = 0; g < ngpus; g++)
    if (cudaDeviceGetPCIBusId(m.gpu[g].busId, (int)sizeof m.gpu[g].busId, g) != cudaSuccess) {
      fprintf(stderr, "kiln profile: GPU %d: no PCI bus id\n", g);
      return 1;
    }
  if (kilnMachinePci(&m, "/") != KILN_SUCCESS) {
    fprintf(stderr, "kiln profile: reading /sys: %s\n", kilnLastError());
    return 1;
  }
  char why[256];
  if (!kilnMachineNvml(&m, why, sizeof why))
    fprintf(stderr, "kiln profile: %s: NVLinks unknown, every pair is measured as a link\n", why);
  kilnMachineDescribe(&m, stdout);
  static double alpha[PROF_MAX * PROF_MAX], beta[PROF_MAX * PROF_MAX];
  if (ngpus >= 2 && (rc = measure(ngpus, o.reps, alpha, beta)) != 0) return rc;
  if (ngpus >= 2 && o.uniform) {
    double sa = 0, sb = 0;
    for (int a = 0; a < ngpus; a++)
      for (int b = 0; b < ngpus; b++)
        if (a != b) {
          sa += alpha[a * ngpus + b];
          sb += beta[a * ngpus + b];
        }
    const double n = (double)ngpus * (ngpus - 1);
    for (int a = 0; a < ngpus * ngpus; a++) {
      alpha[a] = sa / n;
      beta[a] = sb / n;
    }
    printf("uniform: alpha %.3f us, beta %.3f us/MB\n", sa / n, sb / n);
  }
  kilnTopology* t = NULL;
  if (kilnMachineTopology(&m, "profiled", ngpus >= 2 ? alpha : NULL, ngpus >= 2 ? beta : NULL, o.nodes, o.nicAlpha,
                          o.nicBeta, &t) != KILN_SUCCESS ||
      kilnTopologyWriteFile(t, o.out ? o.out : "-") != KILN_SUCCESS) {
    fprintf(stderr, "kiln profile: %s\n", kilnLastError());
    rc = 1;
  }
  kilnTopologyFree(t);
  return rc;
}
#endif

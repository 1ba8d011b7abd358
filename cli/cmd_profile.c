/*
 * kiln profile: measures α (µs) and β (µs/MB) of every ordered GPU pair with kiln's own
 * primitives and writes a topology XML that kiln synth accepts.
 *
 * Per pair (i -> j), with plans of kiln's own steps through FIFOs, each timed at two sizes or in
 * two shapes so that launch costs cancel in the differences:
 * - α, the link's latency: an LL chunk from i to j and back, against the one way (one hop more),
 *   less the LL step's own latency (KILN_SIM_PARAMS_INIT's send.LL.alpha).
 * - a Simple step's handshake, as the TACCL paper's profiler times a step (section 5.1): a plan
 *   that sends n chunks one after another (n steps of one chunk) and one that sends the same n
 *   chunks at once (one step of n chunks) in one threadblock, (n-1) steps apart.
 * - β, the link's: the at-once plan in PROF_LINK_TBS threadblocks (fewer on GPUs of fewer SMs) on
 *   channels of their own (as a plan lowered in that many instances moves), timed at two sizes;
 *   in LL too, whose rate against Simple's is LL's efficiency.
 * - one threadblock's rate: the at-once plan in one threadblock at two sizes. One moves only a
 *   fraction of a link (~40 GB/s on an H200's NVLink, ~8x less than 32 move): a β of one
 *   threadblock would make the topology's link 8x slower than the built-in hgx-h100's (2x H200,
 *   2026-11-29).
 * The links get α and β; the topology's <costs> (the simulator's table, kiln/topology.h) get the
 * means of the rest over the pairs (fifo_step, send.LL.efficiency, tb_beta), every other knob
 * KILN_SIM_PARAMS_INIT's (what plans of memory steps cost is not measured here).
 *
 * The machine's structure comes from the driver and sysfs (solver/machine.h): NVLinks between the
 * GPUs or to an NVSwitch (NVML), the NICs and the GPUs each is nearest to (PCI paths). The topology
 * written is one node of the measured GPUs (a switch where they share an NVSwitch, links
 * elsewhere), replicated --nodes times, the NICs with their GPUs, and between nodes the α and β
 * given by --nic-alpha and --nic-beta. One GPU: its structure only, nothing to measure.
 */
#include <math.h>
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
          "alpha: the link's latency (an LL hop); beta: the link's, with %d threadblocks\n"
          "(at most the GPU's SMs) sending at once, as a plan lowered in that many\n"
          "instances does (one threadblock moves far less: its rate is printed too; kiln synth\n"
          "--instances). The simulator's costs measured beside them (a Simple step's handshake, LL's\n"
          "rate against Simple's, one threadblock's rate) go into the topology's <costs>, which kiln\n"
          "simulate and kiln synth take from it. One GPU: its structure only.\n"
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

static bool parse_us(const char* s, double* out) {
  char* end = NULL;
  *out = s ? strtod(s, &end) : -1;
  return s && end && end != s && !*end && *out >= 0 && *out < 1e9;
}

static int parse_args(int argc, char** argv, profOpts* o) {
  *o = (profOpts){0, 200, 1, false, -1, -1, NULL};
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--gpus") && v && cliParseInt(v, &o->ngpus) && o->ngpus >= 1) {
      i++;
      continue;
    }
    if (!strcmp(a, "--reps") && v && cliParseInt(v, &o->reps)) {
      i++;
      continue;
    }
    if (!strcmp(a, "--nodes") && v && cliParseInt(v, &o->nodes) && o->nodes >= 1 &&
        o->nodes <= KILN_MAX_RANKS) {
      i++;
      continue;
    }
    if (!strcmp(a, "--nic-alpha") && parse_us(v, &o->nicAlpha)) {
      i++;
      continue;
    }
    if (!strcmp(a, "--nic-beta") && parse_us(v, &o->nicBeta)) {
      i++;
      continue;
    }
    if (!strcmp(a, "-o") && v) {
      if (!cliOnce("profile", &o->out, "-o", argv[++i])) return 2;
      continue;
    }
    if (!strcmp(a, "--uniform")) {
      o->uniform = true;
      continue;
    }
    fprintf(stderr, "kiln profile: unexpected or bad argument '%s'%s\n", a,
            v && a[0] == '-' ? " (or its value)" : "");
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
    fprintf(stderr,
            "kiln profile: --nodes %d: the links between nodes need --nic-alpha and --nic-beta (us, us/MB), "
            "measured between two nodes (NCCL's sendrecv) or taken from the network's rate\n",
            o->nodes);
    return 2;
  }
  if (o->nodes == 1 && (o->nicAlpha >= 0 || o->nicBeta >= 0)) {
    fprintf(stderr,
            "kiln profile: --nic-alpha and --nic-beta describe the links between nodes: give --nodes too\n");
    return 2;
  }
  return 0;
}

#ifndef KILN_HAVE_CUDA
int cmd_profile(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      help(stdout);
      return 0;
    }
  profOpts o;
  const int rc = parse_args(argc, argv, &o);
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

/* A plan on n ranks where only src sends to dst in protocol proto: ntbs threadblock pairs
 * (channels 0..ntbs-1), each PROF_CHUNKS chunks of its own, in PROF_CHUNKS steps of a chunk
 * (atOnce false) or one step. */
static kilnResult_t pair_plan(int n, int src, int dst, bool atOnce, int ntbs, kilnProto_t proto,
                              kilnPlan** out) {
  kilnPlan* p = NULL;
  kilnResult_t r = kilnPlanCreate(atOnce ? "profile-once" : "profile-seq", KILN_COLL_ALLREDUCE, n, &p);
  if (r != KILN_SUCCESS) return r;
  p->proto = proto;
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
      if (!kilnPlanAddStep(&p->gpus[src].tbs[k], KILN_STEP_SEND, KILN_BUF_INPUT, off, KILN_BUF_INPUT, off,
                           cnt) ||
          !kilnPlanAddStep(&p->gpus[dst].tbs[k], KILN_STEP_RECV, KILN_BUF_OUTPUT, off, KILN_BUF_OUTPUT, off,
                           cnt)) {
        kilnPlanFree(p);
        return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
      }
    }
  }
  *out = p;
  return KILN_SUCCESS;
}

/* An LL chunk from a to b (back: and from b back to a), one threadblock a side. */
static kilnResult_t hop_plan(int n, int a, int b, bool back, kilnPlan** out) {
  kilnPlan* p = NULL;
  kilnResult_t r = kilnPlanCreate(back ? "profile-hop2" : "profile-hop1", KILN_COLL_ALLREDUCE, n, &p);
  if (r != KILN_SUCCESS) return r;
  p->proto = KILN_PROTO_LL;
  for (int g = 0; g < n; g++) p->gpus[g].i_chunks = p->gpus[g].o_chunks = 2;
  p->nchunksperloop = 2;
  p->nchannels = 1;
  kilnThreadblock* ta = kilnPlanAddThreadblock(p, a, b, back ? b : -1, 0);
  kilnThreadblock* tb = ta ? kilnPlanAddThreadblock(p, b, back ? a : -1, a, 0) : NULL;
  bool ok = ta && tb && kilnPlanAddStep(ta, KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_INPUT, 0, 1) &&
            kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 0, KILN_BUF_OUTPUT, 0, 1);
  if (ok && back) {
    ta = &p->gpus[a].tbs[0];
    tb = &p->gpus[b].tbs[0];
    ok = kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_OUTPUT, 0, KILN_BUF_OUTPUT, 1, 1) &&
         kilnPlanAddStep(ta, KILN_STEP_RECV, KILN_BUF_OUTPUT, 1, KILN_BUF_OUTPUT, 1, 1);
  }
  if (!ok) {
    kilnPlanFree(p);
    return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory");
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
      for (int q = 0; q < 2; q++) {
        cudaSetDevice(rk[q]);
        cudaStreamSynchronize(P->st[rk[q]]);
      }
      t0 = now_us();
    }
    for (int q = 0; q < 2; q++)
      kilnRun(ex[rk[q]], P->buf[rk[q]][0], P->buf[rk[q]][1], count, KILN_FLOAT32, KILN_SUM, P->st[rk[q]]);
  }
  for (int q = 0; q < 2; q++) {
    cudaSetDevice(rk[q]);
    cudaStreamSynchronize(P->st[rk[q]]);
  }
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

/* What measure() finds per ordered pair ([a * ngpus + b]): the link's α (an LL hop, µs) and β
 * (Simple over the link's threadblocks, µs/MB), a Simple step's handshake (µs), LL's β over as
 * many threadblocks and one threadblock's Simple β (µs/MB). */
typedef struct profFigures {
  double alpha[PROF_MAX * PROF_MAX], beta[PROF_MAX * PROF_MAX], step[PROF_MAX * PROF_MAX],
      llBeta[PROF_MAX * PROF_MAX], blockBeta[PROF_MAX * PROF_MAX];
} profFigures;

/* Measures every ordered pair of the first ngpus GPUs into *pf, printing a table; 0, or the exit
 * code after saying why. */
static int measure(int ngpus, int reps, profFigures* pf) {
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
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, r) == cudaSuccess && sms > 0 &&
        sms < linkTbs)
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
  /* An LL hop is the link's α and the LL step's own latency (the simulator's send.LL.alpha). */
  const kilnSimParams defaults = KILN_SIM_PARAMS_INIT;
  const double llStep = defaults.send[KILN_PROTO_LL].alpha_us;
  int rc = 0;
  printf("beta over %d threadblocks a pair\n%-6s %10s %12s %10s %10s %10s %14s\n", linkTbs, "pair",
         "alpha_us", "beta_us/MB", "GB/s", "step_us", "LL GB/s", "1 block GB/s");
  enum { SEQ, ONCE, LINK, LLLINK, HOP1, HOP2, NPLANS };
  for (int a = 0; a < ngpus && rc == 0; a++)
    for (int b = 0; b < ngpus && rc == 0; b++) {
      if (a == b) continue;
      kilnPlan* pl[NPLANS] = {NULL};
      kilnExec_t x[NPLANS][PROF_MAX];
      memset(x, 0, sizeof x);
      if (pair_plan(ngpus, a, b, false, 1, KILN_PROTO_SIMPLE, &pl[SEQ]) != KILN_SUCCESS ||
          pair_plan(ngpus, a, b, true, 1, KILN_PROTO_SIMPLE, &pl[ONCE]) != KILN_SUCCESS ||
          pair_plan(ngpus, a, b, true, linkTbs, KILN_PROTO_SIMPLE, &pl[LINK]) != KILN_SUCCESS ||
          pair_plan(ngpus, a, b, true, linkTbs, KILN_PROTO_LL, &pl[LLLINK]) != KILN_SUCCESS ||
          hop_plan(ngpus, a, b, false, &pl[HOP1]) != KILN_SUCCESS ||
          hop_plan(ngpus, a, b, true, &pl[HOP2]) != KILN_SUCCESS) {
        fprintf(stderr, "kiln profile: %s\n", kilnLastError());
        rc = 1;
      }
      for (int k = 0; k < NPLANS && rc == 0; k++) rc = load_all(&P, pl[k], x[k]); /* load_all says why */
      if (rc == 0) {
        const int few = reps / 10 + 1;
        const double tSeq = time_pair(&P, x[SEQ], a, b, smallElems, reps);
        const double tOnce = time_pair(&P, x[ONCE], a, b, smallElems, reps);
        const double tBig = time_pair(&P, x[ONCE], a, b, bigElems, few);
        const double tLink0 = time_pair(&P, x[LINK], a, b, linkSmallElems, few);
        const double tLink1 = time_pair(&P, x[LINK], a, b, linkBigElems, few);
        const double tLL0 = time_pair(&P, x[LLLINK], a, b, linkSmallElems, few);
        const double tLL1 = time_pair(&P, x[LLLINK], a, b, linkBigElems, few);
        const double tHop1 = time_pair(&P, x[HOP1], a, b, 16, reps);
        const double tHop2 = time_pair(&P, x[HOP2], a, b, 16, reps);
        const double linkMb = (linkBigElems - linkSmallElems) * 4 / 1e6;
        const int i = a * ngpus + b;
        pf->alpha[i] = fmax(tHop2 - tHop1 - llStep, 0);
        pf->beta[i] = fmax((tLink1 - tLink0) / linkMb, 0);
        pf->step[i] = fmax((tSeq - tOnce) / (PROF_CHUNKS - 1), 0);
        pf->llBeta[i] = fmax((tLL1 - tLL0) / linkMb, 0);
        pf->blockBeta[i] = fmax((tBig - tOnce) / ((bigElems - smallElems) * 4 / 1e6), 0);
        printf("%d->%d %10.3f %12.3f %10.1f %10.3f %10.1f %14.1f\n", a, b, pf->alpha[i], pf->beta[i],
               pf->beta[i] > 0 ? 1e3 / pf->beta[i] : 0, pf->step[i],
               pf->llBeta[i] > 0 ? 1e3 / pf->llBeta[i] : 0,
               pf->blockBeta[i] > 0 ? 1e3 / pf->blockBeta[i] : 0);
      }
      for (int k = 0; k < NPLANS; k++) {
        free_all(&P, x[k]);
        kilnPlanFree(pl[k]);
      }
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

/* The simulator's costs measured (means over the pairs), the others KILN_SIM_PARAMS_INIT's: a
 * Simple step's handshake, LL's efficiency (its rate over Simple's on the link), one
 * threadblock's rate. */
static void profile_costs(const profFigures* pf, int ngpus, kilnTopology* t) {
  double step = 0, ll = 0, block = 0, simple = 0;
  const int n = ngpus * (ngpus - 1);
  for (int a = 0; a < ngpus; a++)
    for (int b = 0; b < ngpus; b++)
      if (a != b) {
        step += pf->step[a * ngpus + b] / n;
        ll += pf->llBeta[a * ngpus + b] / n;
        block += pf->blockBeta[a * ngpus + b] / n;
        simple += pf->beta[a * ngpus + b] / n;
      }
  t->costs = (kilnSimParams)KILN_SIM_PARAMS_INIT;
  t->has_costs = true;
  t->costs.fifo_step_us = step;
  if (ll > 0 && simple > 0 && simple <= ll) t->costs.send[KILN_PROTO_LL].efficiency = simple / ll;
  t->costs.send[KILN_PROTO_SIMPLE].efficiency = 1; /* the links' β is Simple's */
  if (block > 0) t->costs.tb_us_per_mb = block;
  printf("costs: Simple step %.3f us, LL efficiency %.3f, one threadblock %.1f GB/s\n", step,
         t->costs.send[KILN_PROTO_LL].efficiency, block > 0 ? 1e3 / block : 0);
}

int cmd_profile(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      help(stdout);
      return 0;
    }
  profOpts o;
  int rc = parse_args(argc, argv, &o);
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
  static profFigures pf;
  double* alpha = pf.alpha;
  double* beta = pf.beta;
  if (ngpus >= 2 && (rc = measure(ngpus, o.reps, &pf)) != 0) return rc;
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
  rc = kilnMachineTopology(&m, "profiled", ngpus >= 2 ? alpha : NULL, ngpus >= 2 ? beta : NULL, o.nodes,
                           o.nicAlpha, o.nicBeta, &t) != KILN_SUCCESS;
  if (rc == 0 && ngpus >= 2) profile_costs(&pf, ngpus, t);
  if (rc || kilnTopologyWriteFile(t, o.out ? o.out : "-") != KILN_SUCCESS) {
    fprintf(stderr, "kiln profile: %s\n", kilnLastError());
    rc = 1;
  }
  kilnTopologyFree(t);
  return rc;
}
#endif
